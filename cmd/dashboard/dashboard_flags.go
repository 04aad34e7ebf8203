package main

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/app"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/server"
	"github.com/toolq/toolq/internal/tracelink"
	"github.com/toolq/toolq/internal/views"
)

// dashboardFlags are the flags `serve` and `demo` share: the dashboard's own listener and
// database, the collector's cadences and sampling, health thresholds, auth and embedding.
type dashboardFlags struct {
	listen string
	db     string
	pprof  string

	discovery, attributes, metrics time.Duration
	quietAttributes, counters      time.Duration
	quietDeadLetter                time.Duration
	budget                         float64
	peekDLQ, peekSource            time.Duration
	backfill                       time.Duration
	concurrency                    int64
	peek                           string
	peekSources                    []string
	peekMax                        int64
	bodyCap                        int64
	toolName, toolCallID, session  string
	dimensions                     []string
	errorDimension                 string
	publicURL                      string
	traceURL                       string
	notify                         []string
	notifyInterval, sampleWait     time.Duration

	oldestWarning, oldestCritical time.Duration
	dlqCritical                   int64
	redriveWindow, redriveSettle  time.Duration
	archiveRetention              time.Duration

	lambda, eventBridge bool
	adviceOff           []string

	authMode            string
	allowInsecureNoAuth bool
	trustedProxies      []string
	allowedHosts        []string
	operatorGroups      []string
	proxyDefaultRole    string
	sessionKey          string
	secureCookies       bool
	readOnly            bool
	frameAncestors      []string
}

// dashboardDefaults are the defaults that differ between serve and demo.
type dashboardDefaults struct {
	db, dbUsage                    string
	discovery, attributes, metrics time.Duration
	dimensions                     []string
	quietAttributes, counters      time.Duration
	quietDeadLetter                time.Duration
	peekSource                     time.Duration
	redriveSettle                  time.Duration
}

var (
	serveDefaults = dashboardDefaults{
		db: "toolq.db", dbUsage: "the store: a SQLite `file`, or a postgres:// URL that replicas share (created or migrated at start)",
		discovery:  collector.DefaultDiscoveryInterval,
		attributes: collector.DefaultAttributesInterval, metrics: collector.DefaultMetricsInterval,
		quietAttributes: collector.DefaultQuietAttributesInterval, counters: collector.DefaultCountersInterval,
		quietDeadLetter: collector.DefaultQuietDeadLetterInterval,
		peekSource:      collector.DefaultPeekSourceInterval,
		redriveSettle:   views.DefaultThresholds().RedriveSettle,
	}
	// The demo reads its simulator more often than AWS would be read: it costs nothing and
	// makes the pages lively from the first minute.
	demoDefaults = dashboardDefaults{
		db: "", dbUsage: "the store: a SQLite `file` or a postgres:// URL; default a temporary SQLite file removed at exit",
		discovery: 30 * time.Second, attributes: 5 * time.Second, metrics: time.Minute,
		// The demo's MCP servers travel as the mcpServer attribute; its workers write why a call
		// failed into the call as error.code (traffic's failed calls).
		dimensions:      []string{"mcpServer=attr:mcpServer", "error=json:$.error.code"},
		quietAttributes: 20 * time.Second, counters: 5 * time.Minute, quietDeadLetter: 10 * time.Second,
		// The demo opts its source queues in; sampled every 30 s, the FIFO queue's blocked
		// session and its messages near maxReceiveCount show within the first two minutes.
		peekSource: 30 * time.Second,
		// A redrive's outcome settles a minute of samples after its last bounce-back, so that
		// the demo's redrive.outcome comes within minutes.
		redriveSettle: time.Minute,
	}
)

// register declares the flags with the defaults of serve or demo.
func (d *dashboardFlags) register(f *envFlags, def dashboardDefaults) {
	f.String(&d.listen, "listen", "127.0.0.1:8080", "`address` of the dashboard (auth is required beyond loopback)")
	f.String(&d.db, "db", def.db, def.dbUsage)
	f.String(&d.pprof, "pprof", "", "loopback `address` on which to serve net/http/pprof, apart from the dashboard (default off)")

	f.Duration(&d.discovery, "discovery-interval", def.discovery, "how often queues are listed (ListQueues)")
	f.Duration(&d.attributes, "attributes-interval", def.attributes, "how often every queue's attributes are read (GetQueueAttributes)")
	f.Duration(&d.quietAttributes, "quiet-attributes-interval", def.quietAttributes, "how often an empty queue whose depth has not changed for as long is read")
	f.Duration(&d.quietDeadLetter, "quiet-dlq-interval", def.quietDeadLetter, "how often a dead-letter queue whose depth has not changed for --quiet-attributes-interval is read, empty or not: its next message is seen within it")
	f.Duration(&d.metrics, "metrics-interval", def.metrics, "how often CloudWatch's age of the oldest message of source queues holding messages is read (GetMetricData, billed per metric)")
	f.Duration(&d.counters, "counters-interval", def.counters, "how often the source queues' other CloudWatch metrics are read, as one-minute datapoints")
	f.Float64(&d.budget, "aws-budget-per-day", 0, "AWS `dollars` a day the collector may spend: it slows its cadences to fit and says what freshness that buys (default: no budget)")
	f.Duration(&d.peekDLQ, "peek-dlq-interval", collector.DefaultPeekDeadLetterInterval, "spacing of the message samples of each dead-letter queue")
	f.Duration(&d.peekSource, "peek-source-interval", def.peekSource, "spacing of the message samples of each opted-in source queue")
	f.Duration(&d.backfill, "backfill", collector.DefaultBackfill, "CloudWatch history read once when a queue is first seen (negative: none)")
	f.Int64(&d.concurrency, "concurrency", collector.DefaultConcurrency, "AWS calls in flight at most")
	f.String(&d.peek, "peek", "dlq", "message sampling: 'dlq' (dead-letter queues, plus --peek-source queues) or 'none'")
	f.List(&d.peekSources, "peek-source", nil, "source queue `name` or prefix* whose messages may be sampled (repeatable); each sample raises receive counts, and can use the last delivery of a message its consumers left one receive short (one per sample at most on a standard queue; see the README)")
	f.Int64(&d.peekMax, "peek-max-messages", collector.DefaultPeekMaxMessages, "messages taken at most by one sample of one queue")
	f.Int64(&d.bodyCap, "peek-body-cap", collector.DefaultPeekBodyCap, "bytes of a message body stored at most")
	f.String(&d.toolName, "tool-name-field", "toolName", "JSON `path` (dotted) of the tool name in message bodies")
	f.String(&d.toolCallID, "tool-call-id-field", "toolCallId", "JSON `path` of the tool-call id")
	f.String(&d.session, "session-id-field", "sessionId", "JSON `path` of the session id")
	f.List(&d.dimensions, "dimension", def.dimensions, "a named dimension of tool calls to group, filter and search by: `NAME=attr:ATTRIBUTE` or NAME=json:$.PATH (repeatable, at most 16)")
	f.String(&d.errorDimension, "error-dimension", "error", "the dimension (`name`) that says why a call failed: a message's reason when it has no EventBridge failure attributes")
	f.List(&d.notify, "notify", nil, "send alerts to `slack:URL` (a Slack incoming webhook), webhook:URL (signed JSON), teams:URL (a Teams Workflows webhook, https) or pagerduty:[URL] (Events API v2, an incident a problem), options after #: queue-prefix=, kinds=dlq+health+session+redrive+region, min-severity=, name=, secret= (webhook), routing-key-file= or routing-key-env= (pagerduty) (repeatable)")
	f.Duration(&d.notifyInterval, "notify-interval", notify.DefaultInterval, "least time between two notifications about one queue to one target, unless the second brings news (a kind not told, a worse severity); repeats are summarised in the next")
	f.Duration(&d.sampleWait, "notify-sample-wait", notify.DefaultSampleWait, "how long a DLQ arrival waits for the sample that names its tools and servers")
	f.String(&d.publicURL, "public-url", "", "`URL` people reach the dashboard at (https://toolq.example.com), for every link toolq writes: notifications, the summary, embed links")

	f.String(&d.traceURL, "trace-url", "", "link a tool call's trace (its traceparent attribute or AWSTraceHeader) to your tracing system: a `URL` with {traceId} where the id goes (https://grafana.example/explore?traceId={traceId}), on the message's page, in get_message and in the alerts")

	f.Duration(&d.oldestWarning, "oldest-age-warning", views.DefaultThresholds().OldestAgeWarning, "oldest message age that makes a queue 'warning'")
	f.Duration(&d.oldestCritical, "oldest-age-critical", views.DefaultThresholds().OldestAgeCritical, "oldest message age that makes a queue 'critical'")
	f.Int64(&d.dlqCritical, "dlq-depth-critical", views.DefaultThresholds().DLQDepthCritical, "dead-letter queue depth that is 'critical' (any message is 'warning')")
	f.Duration(&d.redriveWindow, "redrive-window", views.DefaultThresholds().RedriveWindow, "how long after a redrive starts a DLQ arrival that matches a message it moved counts as its bounce-back")
	f.Duration(&d.redriveSettle, "redrive-settle", def.redriveSettle, "how long the samples must find nothing new after a redrive's last bounce-back for its outcome to settle (redrive.outcome)")
	f.Duration(&d.archiveRetention, "archive-retention", 30*24*time.Hour, "how long the archive keeps the messages discards took out of dead-letter queues (0: forever); what it deletes after is logged")

	f.Bool(&d.lambda, "lambda", true, "read the Lambda event source mappings that drain the queues (lambda:ListEventSourceMappings, GetFunctionConfiguration; free)")
	f.Bool(&d.eventBridge, "eventbridge", true, "read the EventBridge rules that feed the queues and their targets' dead-letter queues (events:List*; free)")
	f.List(&d.adviceOff, "advice-off", nil, "advisor rule `id` not to check (repeatable or comma-separated; GET /api/v1/advice lists the ids)")

	f.String(&d.authMode, "auth", "none", "authentication: none (loopback only), token (API tokens, browser login) or proxy (trusted X-Forwarded-User headers)")
	f.Bool(&d.allowInsecureNoAuth, "allow-insecure-no-auth", false, "allow --auth none on a non-loopback address (anyone who can reach it can redrive)")
	f.List(&d.trustedProxies, "trusted-proxy", nil, "`CIDR` of the authenticating proxy whose headers are trusted (repeatable)")
	f.List(&d.allowedHosts, "allowed-host", nil, "host `name` requests may be addressed to besides --listen's, --public-url's, addresses and localhost: a name a proxy in front forwards (repeatable); any other Host is refused with 421, against DNS rebinding")
	f.List(&d.operatorGroups, "proxy-operator-groups", nil, "proxy `groups` whose members are operators (repeatable)")
	f.String(&d.proxyDefaultRole, "proxy-default-role", string(auth.RoleViewer), "role of a proxy user in no operator group: viewer, operator, or '' to refuse")
	f.String(&d.sessionKey, "session-key", "", "hex `key` (32+ bytes) signing sessions, embed links and CSRF tokens; default random at start")
	f.Bool(&d.secureCookies, "secure-cookies", false, "mark cookies Secure (TLS terminated in front of the dashboard)")
	f.Bool(&d.readOnly, "read-only", false, "turn every action (redrive start and cancel) off")
	f.List(&d.frameAncestors, "frame-ancestors", []string{"'self'"}, "CSP frame-ancestors `sources` that may embed the pages in iframes (repeatable)")
}

// config turns the flags into the dashboard's configuration; regions are the caller's.
// lookupEnv reads the variables the flags name (a PagerDuty target's routing-key-env).
func (d *dashboardFlags) config(lookupEnv lookupEnvFunc, version, commit string) (app.Config, error) {
	authConfig, err := d.authConfig()
	if err != nil {
		return app.Config{}, err
	}
	collectorOptions, err := d.collectorOptions()
	if err != nil {
		return app.Config{}, err
	}
	notifyOptions, err := d.notifyOptions(lookupEnv)
	if err != nil {
		return app.Config{}, err
	}
	publicURL, err := server.ParsePublicURL(d.publicURL)
	if err != nil {
		return app.Config{}, &usageError{err: fmt.Errorf("--public-url: %w", err)}
	}
	traceURL, err := tracelink.ParseTemplate(d.traceURL)
	if err != nil {
		return app.Config{}, &usageError{err: fmt.Errorf("--trace-url: %w", err)}
	}
	for _, id := range d.adviceOff {
		if _, ok := views.AdviceRuleByID(id); !ok {
			return app.Config{}, &usageError{err: fmt.Errorf("--advice-off %q: no such rule; the rules are %s", id, strings.Join(views.AdviceRuleIDs(), ", "))}
		}
	}
	return app.Config{
		DBPath:              d.db,
		AdviceOff:           d.adviceOff,
		Listen:              d.listen,
		PprofListen:         d.pprof,
		Version:             version,
		Commit:              commit,
		Collector:           collectorOptions,
		ErrorDimension:      d.errorDimension,
		PublicURL:           publicURL,
		TraceURL:            traceURL,
		Notify:              notifyOptions,
		Thresholds:          d.thresholds(),
		Auth:                authConfig,
		AllowInsecureNoAuth: d.allowInsecureNoAuth,
		ReadOnly:            d.readOnly,
		FrameAncestors:      splitSpaces(d.frameAncestors),
	}, nil
}

// authConfig is who may use the dashboard: --auth, the proxies, the hosts and the session key.
func (d *dashboardFlags) authConfig() (auth.Config, error) {
	mode, err := auth.ParseMode(d.authMode)
	if err != nil {
		return auth.Config{}, &usageError{err: fmt.Errorf("--auth: %w", err)}
	}
	proxies, err := auth.ParseProxies(d.trustedProxies)
	if err != nil {
		return auth.Config{}, &usageError{err: fmt.Errorf("--trusted-proxy: %w", err)}
	}
	allowedHosts, err := auth.ParseAllowedHosts(d.allowedHosts)
	if err != nil {
		return auth.Config{}, &usageError{err: fmt.Errorf("--allowed-host: %w", err)}
	}
	var key []byte
	if d.sessionKey != "" {
		if key, err = hex.DecodeString(d.sessionKey); err != nil {
			return auth.Config{}, &usageError{err: fmt.Errorf("--session-key: not hex: %w", err)}
		}
	}
	return auth.Config{
		Mode:                mode,
		TrustedProxies:      proxies,
		AllowedHosts:        allowedHosts,
		ProxyOperatorGroups: d.operatorGroups,
		ProxyDefaultRole:    auth.Role(d.proxyDefaultRole),
		SessionKey:          key,
		SecureCookies:       d.secureCookies,
	}, nil
}

// collectorOptions are the collector's cadences, budget, peeks and the fields it reads.
func (d *dashboardFlags) collectorOptions() (collector.Options, error) {
	var dims []collector.Dimension
	for _, spec := range d.dimensions {
		dim, err := collector.ParseDimension(spec)
		if err != nil {
			return collector.Options{}, &usageError{err: fmt.Errorf("--dimension: %w", err)}
		}
		dims = append(dims, dim)
	}
	var peekOff bool
	switch d.peek {
	case "dlq", "":
	case "none":
		peekOff = true
	default:
		return collector.Options{}, &usageError{err: fmt.Errorf("--peek %q: want dlq or none", d.peek)}
	}
	return collector.Options{
		DiscoveryInterval:       d.discovery,
		AttributesInterval:      d.attributes,
		QuietAttributesInterval: d.quietAttributes,
		QuietDeadLetterInterval: d.quietDeadLetter,
		MetricsInterval:         d.metrics,
		CountersInterval:        d.counters,
		BudgetUSDPerDay:         d.budget,
		PeekDeadLetterInterval:  d.peekDLQ,
		PeekSourceInterval:      d.peekSource,
		Backfill:                d.backfill,
		Concurrency:             int(d.concurrency),
		Peek: collector.PeekOptions{
			Disabled:    peekOff,
			Sources:     d.peekSources,
			MaxMessages: int(d.peekMax),
			BodyCap:     int(d.bodyCap),
		},
		ToolFields:         collector.ToolFields{ToolName: d.toolName, ToolCallID: d.toolCallID, SessionID: d.session},
		Dimensions:         dims,
		DisableLambda:      !d.lambda,
		DisableEventBridge: !d.eventBridge,
		ArchiveRetention:   max(d.archiveRetention, 0),
	}, nil
}

// notifyOptions are the notification targets, checked together, and their cadence.
func (d *dashboardFlags) notifyOptions(lookupEnv lookupEnvFunc) (notify.Options, error) {
	var targets []notify.Target
	for _, spec := range d.notify {
		t, err := notify.ParseTargetEnv(spec, lookupEnv)
		if err != nil {
			return notify.Options{}, &usageError{err: fmt.Errorf("--notify: %w", err)}
		}
		targets = append(targets, t)
	}
	if err := notify.CheckTargets(targets); err != nil {
		return notify.Options{}, &usageError{err: fmt.Errorf("--notify: %w", err)}
	}
	return notify.Options{Targets: targets, Interval: d.notifyInterval, SampleWait: d.sampleWait}, nil
}

// thresholds are the health rules' limits.
func (d *dashboardFlags) thresholds() views.Thresholds {
	return views.Thresholds{
		OldestAgeWarning:  d.oldestWarning,
		OldestAgeCritical: d.oldestCritical,
		DLQDepthCritical:  d.dlqCritical,
		RedriveWindow:     d.redriveWindow,
		RedriveSettle:     d.redriveSettle,
		// Data is stale once a few attribute cycles were missed.
		StaleAfter: 3 * max(d.attributes, time.Second),
	}
}

// splitSpaces splits values that may carry several space-separated entries, as a CSP source
// list is usually written ("'self' https://portal.example.com").
func splitSpaces(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.Fields(v)...)
	}
	return out
}
