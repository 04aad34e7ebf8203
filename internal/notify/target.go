package notify

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/toolq/toolq/internal/views"
)

// Kind is how a target is sent to.
type Kind string

// Target kinds.
const (
	// Slack is a Slack incoming webhook: Block Kit messages.
	Slack Kind = "slack"
	// Webhook is any HTTPS endpoint: the alerts as JSON, signed as Standard Webhooks sign.
	Webhook Kind = "webhook"
	// PagerDuty is PagerDuty's Events API v2: an incident a problem, triggered, updated and
	// resolved (pagerduty.go).
	PagerDuty Kind = "pagerduty"
	// Teams is a Microsoft Teams channel's Workflows webhook: Adaptive Cards (teams.go).
	Teams Kind = "teams"
)

// Target is one place notifications go (--notify).
type Target struct {
	// Name tells targets apart on the status page and in the metrics; default the kind and host.
	Name string
	Kind Kind
	// URL is where messages are posted. A Slack webhook's URL, and a Teams Workflows URL (its
	// sig parameter), are credentials: they are never shown, logged or stored.
	URL string
	// Secret signs a webhook's messages: whsec_ and the base64 of a 24- to 64-byte key, as
	// Standard Webhooks write it (New refuses one that does not decode), or any other text, whose
	// bytes are the key; "" sends them unsigned.
	Secret string
	// RoutingKey is a PagerDuty target's Events API v2 integration key, read at start from a
	// file or the environment (never the command line); like a Slack URL it is never shown,
	// logged or stored: the outbox keeps events without it.
	RoutingKey string
	Filter     Filter
}

// Filter selects the alerts a target (or an event stream) is sent. The zero Filter passes all.
type Filter struct {
	// QueuePrefixes keep the alerts of queues whose name starts with one of them; region alerts
	// always pass, since blindness hides every queue.
	QueuePrefixes []string
	// Kinds keep these kinds; a kind's first part names them all ("redrive" for redrive.*).
	Kinds []string
	// MinSeverity keeps alerts at least this severe ("" keeps all).
	MinSeverity views.AlertSeverity
}

// Match reports whether a passes the filter.
func (f Filter) Match(a views.Alert) bool {
	if len(f.QueuePrefixes) > 0 && a.Queue != "" && !slices.ContainsFunc(f.QueuePrefixes, func(p string) bool { return strings.HasPrefix(a.Queue, p) }) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.ContainsFunc(f.Kinds, func(k string) bool {
		return string(a.Kind) == k || strings.HasPrefix(string(a.Kind), k+".")
	}) {
		return false
	}
	return f.MinSeverity == "" || a.Severity.Rank() >= f.MinSeverity.Rank()
}

// String says what the filter keeps, for the status page.
func (f Filter) String() string {
	var parts []string
	if len(f.QueuePrefixes) > 0 {
		parts = append(parts, "queues "+strings.Join(f.QueuePrefixes, "*, ")+"*")
	}
	if len(f.Kinds) > 0 {
		parts = append(parts, "kinds "+strings.Join(f.Kinds, ", "))
	}
	if f.MinSeverity != "" {
		parts = append(parts, string(f.MinSeverity)+" and worse")
	}
	if len(parts) == 0 {
		return "every alert"
	}
	return strings.Join(parts, "; ")
}

// ParseFilter reads a filter from its options: queue-prefix (repeatable), kinds (separated by
// "+" or ","), min-severity. The event stream takes the same as query parameters.
func ParseFilter(v url.Values) (Filter, error) {
	var f Filter
	for _, p := range v["queue-prefix"] {
		if p = strings.TrimSpace(p); p != "" {
			f.QueuePrefixes = append(f.QueuePrefixes, p)
		}
	}
	for _, list := range v["kinds"] {
		for k := range strings.FieldsFuncSeq(list, func(r rune) bool { return r == '+' || r == ',' || r == ' ' }) {
			if !knownKind(k) {
				return Filter{}, fmt.Errorf("notify: unknown alert kind %q", k)
			}
			f.Kinds = append(f.Kinds, k)
		}
	}
	if s := v.Get("min-severity"); s != "" {
		f.MinSeverity = views.AlertSeverity(s)
		if f.MinSeverity.Rank() < 0 {
			return Filter{}, fmt.Errorf("notify: min-severity %q: want info, warning or critical", s)
		}
	}
	return f, nil
}

// knownKind reports whether k is a kind or a kind's first part.
func knownKind(k string) bool {
	return slices.ContainsFunc(views.AlertKinds, func(kind views.AlertKind) bool {
		return string(kind) == k || strings.HasPrefix(string(kind), k+".")
	})
}

// targetName is what a target may be called: a metric label value and a form field.
var targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// targetOptions are the options a target takes after its URL's "#"; repeatable says which may
// be given more than once.
var targetOptions = map[string]struct{ repeatable bool }{
	"queue-prefix": {repeatable: true}, "kinds": {repeatable: true}, "min-severity": {}, "name": {}, "secret": {},
	"routing-key-file": {}, "routing-key-env": {},
}

// ParseTarget is ParseTargetEnv over the process's environment.
func ParseTarget(spec string) (Target, error) { return ParseTargetEnv(spec, os.LookupEnv) }

// ParseTargetEnv reads a --notify flag: KIND:URL, with toolq's options in the URL's fragment,
// which HTTP never sends (slack:https://hooks.slack.com/services/T/B/X#queue-prefix=tool-calls&
// kinds=dlq+health&min-severity=warning&name=oncall; webhook:https://bot.example/hook#secret=whsec_…;
// teams:https://…/workflows/…; pagerduty:#routing-key-env=PAGERDUTY_ROUTING_KEY, whose URL is
// PagerDutyEventsURL unless given). The options are name=value pairs separated by "&", each value
// as written but for %XX escapes: a "+" is a plus, never a space, so that a base64 secret keeps
// its "+", "/" and "=". A PagerDuty target's routing key is read here, from the file or the
// variable (lookupEnv) its options name, and its shape checked.
func ParseTargetEnv(spec string, lookupEnv func(string) (string, bool)) (Target, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	t := Target{Kind: Kind(kind)}
	if !ok || !slices.Contains([]Kind{Slack, Webhook, Teams, PagerDuty}, t.Kind) {
		return Target{}, errors.New("notify: a target is slack:URL, webhook:URL, teams:URL or pagerduty:[URL]#routing-key-env=NAME")
	}
	// The fragment is cut off before the URL is parsed: url.Parse would unescape it first, and
	// a value's own %XX escapes would then be read twice.
	rawURL, fragment, _ := strings.Cut(rest, "#")
	if t.Kind == PagerDuty && rawURL == "" {
		rawURL = PagerDutyEventsURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return Target{}, fmt.Errorf("notify: %s target: want an http(s) URL with a host", kind)
	}
	if t.Kind == Teams && u.Scheme != "https" {
		// The URL carries the workflow's signature: over http it would travel in the clear.
		return Target{}, errors.New("notify: teams target: a Workflows webhook URL is https://…; refusing to post to http")
	}
	opts, err := parseOptions(fragment)
	if err != nil {
		return Target{}, fmt.Errorf("notify: %s target options (after #): %w", kind, err)
	}
	if t.Filter, err = ParseFilter(opts); err != nil {
		return Target{}, err
	}
	t.Secret = opts.Get("secret")
	if t.Secret != "" && t.Kind != Webhook {
		return Target{}, errors.New("notify: only webhook targets are signed; a Slack or Teams webhook's URL is its secret")
	}
	if t.RoutingKey, err = routingKey(t.Kind, opts, lookupEnv); err != nil {
		return Target{}, err
	}
	t.Name = opts.Get("name")
	if t.Name == "" {
		t.Name = string(t.Kind) + "-" + u.Hostname()
	}
	if !targetName.MatchString(t.Name) {
		return Target{}, fmt.Errorf("notify: target name %q: letters, digits, '.', '_' and '-', at most 64", t.Name)
	}
	if _, err := t.signingKey(); err != nil {
		return Target{}, err
	}
	t.URL = u.String()
	return t, nil
}

// parseOptions reads a target's options: name=value pairs separated by "&". Unlike a query
// string's, a value's "+" stays a "+"; %XX escapes are decoded (a value cannot hold "&"
// otherwise). An unknown option, or one given twice that is not repeatable, is refused.
func parseOptions(fragment string) (url.Values, error) {
	opts := url.Values{}
	for part := range strings.SplitSeq(fragment, "&") {
		if part == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(part, "=")
		key, err := url.PathUnescape(rawKey)
		if err != nil {
			return nil, fmt.Errorf("option %q: %w", rawKey, err)
		}
		spec, known := targetOptions[key]
		if !known {
			return nil, fmt.Errorf("unknown option %q (queue-prefix, kinds, min-severity, name, secret)", key)
		}
		if opts.Has(key) && !spec.repeatable {
			return nil, fmt.Errorf("option %s given twice", key)
		}
		value, err := url.PathUnescape(rawValue)
		if err != nil {
			// The value may be a secret: the error names only the option.
			return nil, fmt.Errorf("option %s: a %% that is not an escape (write %%25 for %%)", key)
		}
		opts.Add(key, value)
	}
	return opts, nil
}

// whsecPrefix marks a Standard Webhooks secret: the key's bytes in base64.
const whsecPrefix = "whsec_"

// Standard Webhooks' symmetric keys are 24 to 64 random bytes.
const (
	minSigningKey = 24
	maxSigningKey = 64
)

// signingKey returns the key a webhook's messages are signed with: a whsec_ secret's decoded
// bytes, any other secret's own bytes; nil for no secret. A whsec_ secret that is not base64 of
// a key Standard Webhooks allows is an error: signing with its text instead would send
// signatures that no receiver holding the secret can verify.
func (t Target) signingKey() ([]byte, error) {
	enc, ok := strings.CutPrefix(t.Secret, whsecPrefix)
	if !ok {
		if t.Secret == "" {
			return nil, nil
		}
		return []byte(t.Secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		// The error text would quote the secret: say where it went wrong instead.
		var bad base64.CorruptInputError
		where := ""
		if errors.As(err, &bad) {
			where = fmt.Sprintf(" at character %d after %s", int64(bad)+1, whsecPrefix)
		}
		return nil, fmt.Errorf("notify: target %s: secret=%s… is not base64%s: make one with `echo whsec_$(head -c 32 /dev/urandom | base64)`",
			t.Name, whsecPrefix, where)
	}
	if len(key) < minSigningKey || len(key) > maxSigningKey {
		return nil, fmt.Errorf("notify: target %s: secret=%s… decodes to %d bytes; Standard Webhooks keys are %d to %d random bytes",
			t.Name, whsecPrefix, len(key), minSigningKey, maxSigningKey)
	}
	return key, nil
}

// endpoint is what may be shown of a target's URL: its scheme and host.
func (t Target) endpoint() string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// CheckTargets refuses two targets of one name, a secret no receiver could verify, a PagerDuty
// target without a routing key of PagerDuty's shape, and a Teams URL that is not https.
func CheckTargets(targets []Target) error {
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Name] {
			return fmt.Errorf("notify: two targets are called %q; name them (#name=…)", t.Name)
		}
		seen[t.Name] = true
		if _, err := t.signingKey(); err != nil {
			return err
		}
		if t.Kind == PagerDuty && !routingKeyShape.MatchString(t.RoutingKey) {
			return fmt.Errorf("notify: pagerduty target %s: its routing key is not of PagerDuty's shape (%s)", t.Name, routingKeyWant)
		}
		if t.Kind == Teams && !strings.HasPrefix(t.URL, "https://") {
			return fmt.Errorf("notify: teams target %s: a Workflows webhook URL is https://…", t.Name)
		}
	}
	return nil
}
