package notify

import (
	"errors"
	"fmt"
	"net/url"
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
)

// Target is one place notifications go (--notify).
type Target struct {
	// Name tells targets apart on the status page and in the metrics; default the kind and host.
	Name string
	Kind Kind
	// URL is where messages are posted. A Slack webhook's URL is a credential: it is never
	// shown, logged or stored.
	URL string
	// Secret signs a webhook's messages (whsec_ and base64, as Standard Webhooks write it, or
	// any text); "" sends them unsigned.
	Secret string
	Filter Filter
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

// ParseTarget reads a --notify flag: KIND:URL, with toolq's options in the URL's fragment, which
// HTTP never sends (slack:https://hooks.slack.com/services/T/B/X#queue-prefix=tool-calls&
// kinds=dlq+health&min-severity=warning&name=oncall; webhook:https://bot.example/hook#secret=whsec_…).
func ParseTarget(spec string) (Target, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	t := Target{Kind: Kind(kind)}
	if !ok || (t.Kind != Slack && t.Kind != Webhook) {
		return Target{}, errors.New("notify: a target is slack:URL or webhook:URL")
	}
	u, err := url.Parse(rest)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return Target{}, fmt.Errorf("notify: %s target: want an http(s) URL with a host", kind)
	}
	opts, err := url.ParseQuery(u.Fragment)
	if err != nil {
		return Target{}, fmt.Errorf("notify: %s target options (after #): %w", kind, err)
	}
	for k := range opts {
		switch k {
		case "queue-prefix", "kinds", "min-severity", "name", "secret":
		default:
			return Target{}, fmt.Errorf("notify: %s target: unknown option %q (queue-prefix, kinds, min-severity, name, secret)", kind, k)
		}
	}
	if t.Filter, err = ParseFilter(opts); err != nil {
		return Target{}, err
	}
	t.Secret = opts.Get("secret")
	if t.Secret != "" && t.Kind != Webhook {
		return Target{}, errors.New("notify: only webhook targets are signed; a Slack webhook's URL is its secret")
	}
	t.Name = opts.Get("name")
	if t.Name == "" {
		t.Name = string(t.Kind) + "-" + u.Hostname()
	}
	if !targetName.MatchString(t.Name) {
		return Target{}, fmt.Errorf("notify: target name %q: letters, digits, '.', '_' and '-', at most 64", t.Name)
	}
	u.Fragment, u.RawFragment = "", ""
	t.URL = u.String()
	return t, nil
}

// endpoint is what may be shown of a target's URL: its scheme and host.
func (t Target) endpoint() string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// CheckTargets refuses two targets of one name.
func CheckTargets(targets []Target) error {
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Name] {
			return fmt.Errorf("notify: two targets are called %q; name them (#name=…)", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}
