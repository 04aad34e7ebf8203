// Package templates holds toolq's templ components and their props. A page is Layout around a
// content component; HTMX answers and websocket pushes render the same components, so each piece
// of markup exists once. Every value that comes from AWS or from users (queue names, message
// bodies, attributes, group ids) is rendered as escaped text: never templ.Raw on data.
package templates

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/views"
)

// Nav is what every link of a page must carry along: embed mode and its signed token, so that an
// embedded view stays chrome-less and authorised as the user clicks through it.
type Nav struct {
	Embed      bool
	EmbedToken string
	// Theme ("light", "dark" or "" for the reader's system) and Colors (ParseEmbedColors' form)
	// are the portal's look for an embedded page.
	Theme  string
	Colors string
}

// Values returns the query parameters Nav adds to links.
func (n Nav) Values() url.Values {
	v := url.Values{}
	if n.Embed {
		v.Set("embed", "1")
	}
	if n.EmbedToken != "" {
		v.Set("embed_token", n.EmbedToken)
	}
	if n.Embed && n.Theme != "" {
		v.Set("theme", n.Theme)
	}
	if n.Embed && n.Colors != "" {
		v.Set("colors", n.Colors)
	}
	return v
}

// URL returns path with q and Nav's parameters as its query.
func (n Nav) URL(path string, q url.Values) string {
	v := n.Values()
	for k, vals := range q {
		for _, s := range vals {
			if s != "" {
				v.Add(k, s)
			}
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// Leave is the Nav of a link from a page to another that its embed link does not open (a link
// opens its own page alone): no embed parameters, so that the page opens whole, in a new tab
// (see LeavesEmbed), where the reader's own sign-in applies. Outside an embedded view Nav has
// no parameters to drop.
func (n Nav) Leave() Nav { return Nav{} }

// LeavesEmbed reports whether a link made with Leave goes out of an embedded view or a link's
// page, and so must open in a new tab rather than in the portal's iframe.
func (n Nav) LeavesEmbed() bool { return n.Embed || n.EmbedToken != "" }

// QueueURL returns the URL of a queue's page, or of a page under it (parts are escaped path
// segments such as "messages" and a message id). ref is the queue's name, or its ARN when the
// name is ambiguous.
func (n Nav) QueueURL(ref string, q url.Values, parts ...string) string {
	var b strings.Builder
	b.WriteString("/queues/")
	b.WriteString(url.PathEscape(ref))
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return n.URL(b.String(), q)
}

// WebsocketURL returns the websocket URL of a topic ("overview", "queue:<id>", "audit"). view
// is the page's own view of it (the overview's q, sort and dir; a queue page's range): the hub
// renders each view once for all its subscribers.
func (n Nav) WebsocketURL(topic string, view url.Values) string {
	q := url.Values{"topic": {topic}}
	for k, v := range view {
		q[k] = v
	}
	return n.URL("/ws", q)
}

// Page is what the layout needs to know about every page.
type Page struct {
	Title string
	Nav   Nav
	// Topic is the websocket topic the page subscribes to; empty: the page is not live.
	Topic string
	// TopicInside: the websocket is opened by the section whose links change the page's view
	// (the overview's sort and filter, a queue's chart range), not by <body>. htmx swaps that
	// section with a new ws-connect URL, so the pushes follow what the browser shows.
	TopicInside bool
	// CSRF is the token every form and HTMX request must carry.
	CSRF      string
	Freshness views.Freshness
	Now       time.Time
	User      string // who is signed in; empty when auth is off or unknown
	Role      string
	SignOut   bool   // the user signed in with a session cookie: show a sign-out button
	Section   string // "overview", "audit": marks the current navigation link
	// StaleAfter is the server's threshold past which data is stale: the page counts the age of
	// its freshness line up to it on its own while no push comes.
	StaleAfter time.Duration
	// EmbedOrigins are the origins an embedded page posts its height to (EmbedOrigins).
	EmbedOrigins []string
	// Bare drops the navigation and the freshness: the sign-in page shows neither to strangers.
	Bare bool
	// Notice is the outcome of the action that led here ("Move task started"), and Alert an
	// action's refusal, both shown in the flash area, which no push overwrites.
	Notice string
	Alert  string
}

// CSRFHeaders is the hx-headers value that makes HTMX requests carry the CSRF token.
func (p Page) CSRFHeaders() string {
	if p.CSRF == "" {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": p.CSRF}) // a map of strings always marshals
	return string(b)
}

// htmxConfig keeps htmx within the CSP: no injected styles, no eval, no script tags from
// responses; and it swaps error answers too, so that a refused action shows its reason.
const htmxConfig = `{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":true}]}`

// OtherDestination is the redrive form's "Other queue…" choice: the destination is then the
// queue typed in destination_other.
const OtherDestination = "other…"

// OverviewRow is one queue of the overview; its links name it by QueueSummary.Ref.
type OverviewRow struct {
	views.QueueSummary
	// SparkTop is the top of the sparkline's scale when the rows share one; 0: its own.
	SparkTop float64
}

// OverviewPartSet says which parts of the overview besides its rows a push carries.
type OverviewPartSet struct {
	Attention, Sight, Totals, Cost, Pager bool
}

// AllOverviewParts is every part, for a page that just subscribed.
var AllOverviewParts = OverviewPartSet{Attention: true, Sight: true, Totals: true, Cost: true, Pager: true}

// SortColumn is one sortable column of the overview.
type SortColumn struct {
	Key   string
	Label string
}

// OverviewColumns are the overview's sortable columns, in display order.
var OverviewColumns = []SortColumn{
	{"name", "Queue"}, {"type", "Type"}, {"visible", "Visible"}, {"inflight", "In flight"},
	{"delayed", "Delayed"}, {"oldest", "Oldest"}, {"dlq", "DLQ depth"},
}

// OverviewPageSize is how many queues a page of the overview's table shows: at 10,000 queues a
// page carries what needs a person and one page of rows, never every row.
const OverviewPageSize = 100

// AttentionShown is how many problems the overview lists by name; the others are counted, and
// the table, unhealthy first, shows their queues page by page.
const AttentionShown = 50

// ShownProblems are the problems the overview names: the first AttentionShown.
func ShownProblems(problems []views.Problem) []views.Problem {
	return problems[:min(len(problems), AttentionShown)]
}

// ProblemKey tells one problem of the overview's list from the others across snapshots: its
// kind and its queue, or for a region's problem its region and what it says (one a region and
// operation).
func ProblemKey(pr views.Problem) string {
	if pr.Queue == "" {
		return string(pr.Kind) + "\x00" + pr.Region + "\x00" + pr.Text
	}
	return string(pr.Kind) + "\x00" + pr.Region + "\x00" + pr.Ref
}

// OverviewProps is the overview page.
type OverviewProps struct {
	Page
	Overview views.Overview
	Rows     []*RenderedRow // filtered, sorted and scaled: the rows of the page shown
	// PageNo is the page of the table shown, from 1 (?page=); Matching how many queues the
	// filters keep, over every page.
	PageNo   int
	Matching int
	Sort     string // a SortColumn key or "health" (the default order)
	Dir      string // "asc" or "desc"
	Query    string // the filter
	// Misconfigured keeps only the queues the advisor found something on.
	Misconfigured bool
	// Account and Region keep the queues of one account (name or id) and one region; "": all.
	Account, Region string
	// SharedScale draws every row's sparkline on one scale (?scale=shared), so that 1→3 and
	// 7→28 no longer look alike; each row's min and max are written beside it either way.
	SharedScale bool
}

// scaleParam is the overview's sparkline scale as a query value.
func (p OverviewProps) scaleParam() string {
	if p.SharedScale {
		return "shared"
	}
	return ""
}

// Pages is how many pages the table's matching queues fill (at least one).
func (p OverviewProps) Pages() int { return max(1, (p.Matching+OverviewPageSize-1)/OverviewPageSize) }

// PageURL returns the overview's link to page n of the table, the filters, sort and scale kept.
func (p OverviewProps) PageURL(n int) string {
	v := p.View()
	v.Del("page")
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	return p.Nav.URL("/", v)
}

// PageRange says which of the matching queues the page shows: "101–200 of 10,000".
func (p OverviewProps) PageRange() string {
	if p.Matching == 0 {
		return "none"
	}
	first := (p.PageNo-1)*OverviewPageSize + 1
	return Count(int64(first)) + "–" + Count(int64(first+len(p.Rows)-1)) + " of " + Count(int64(p.Matching))
}

// ScaleURL returns the link that shares one scale across the sparklines, or gives each its own.
func (p OverviewProps) ScaleURL() string { return p.toggleURL("scale", "shared", p.SharedScale) }

// toggleURL returns the overview's link with the filter key set to value, or without it when on.
func (p OverviewProps) toggleURL(key, value string, on bool) string {
	v := p.View()
	if key != "scale" {
		v.Del("page") // another filter keeps other queues: its first page
	}
	if on {
		v.Del(key)
	} else {
		v.Set(key, value)
	}
	return p.Nav.URL("/", v)
}

// ScopeURL returns the overview's link to one account's region ("" and "": all), the other
// filters and the sort kept.
func (p OverviewProps) ScopeURL(account, region string) string {
	v := p.View()
	v.Del("page")
	v.Del("account")
	v.Del("region")
	if account != "" {
		v.Set("account", account)
	}
	if region != "" {
		v.Set("region", region)
	}
	return p.Nav.URL("/", v)
}

// ScopeCounts says what one account's region holds: "9 queues, 2 warning, not seen".
func ScopeCounts(sc views.ScopeSummary) string {
	out := strconv.Itoa(sc.Queues) + " queues"
	if sc.Critical > 0 {
		out += ", " + strconv.Itoa(sc.Critical) + " critical"
	}
	if sc.Warning > 0 {
		out += ", " + strconv.Itoa(sc.Warning) + " warning"
	}
	if sc.Blind {
		out += ", not seen"
	}
	return out
}

// ScopeLabel names an account's region for the pages: the region alone for the one account of
// a dashboard configured without accounts, "account · region" otherwise.
func ScopeLabel(account, region string) string {
	if account == "" || account == views.DefaultAccount {
		return region
	}
	return account + " · " + region
}

// misconfiguredParam is the overview's "misconfigured" filter as a query value.
func (p OverviewProps) misconfiguredParam() string {
	if p.Misconfigured {
		return "1"
	}
	return ""
}

// SortURL returns the link of a column header: ascending, or descending when already ascending.
func (p OverviewProps) SortURL(key string) string {
	dir := "asc"
	if p.Sort == key && p.Dir == "asc" {
		dir = "desc"
	}
	return p.Nav.URL("/", url.Values{"sort": {key}, "dir": {dir}, "q": {p.Query}, "misconfigured": {p.misconfiguredParam()},
		"account": {p.Account}, "region": {p.Region}, "scale": {p.scaleParam()}})
}

// HealthSortURL returns the link of the health column: the default order, filters kept.
func (p OverviewProps) HealthSortURL() string {
	return p.Nav.URL("/", url.Values{"q": {p.Query}, "misconfigured": {p.misconfiguredParam()}, "account": {p.Account}, "region": {p.Region}, "scale": {p.scaleParam()}})
}

// MisconfiguredURL returns the link that turns the "misconfigured" filter on, or off when on.
func (p OverviewProps) MisconfiguredURL() string {
	return p.toggleURL("misconfigured", "1", p.Misconfigured)
}

// View returns the filter, sort and page as query parameters, without the default order and the
// first page: what the websocket of the overview subscribes with, so that pushes keep this
// browser's view.
func (p OverviewProps) View() url.Values {
	v := url.Values{}
	if p.Query != "" {
		v.Set("q", p.Query)
	}
	if p.Misconfigured {
		v.Set("misconfigured", "1")
	}
	if p.Account != "" {
		v.Set("account", p.Account)
	}
	if p.Region != "" {
		v.Set("region", p.Region)
	}
	if p.SharedScale {
		v.Set("scale", "shared")
	}
	if p.Sort != "" && (p.Sort != "health" || p.Dir == "desc") {
		v.Set("sort", p.Sort)
		v.Set("dir", p.Dir)
	}
	if p.PageNo > 1 {
		v.Set("page", strconv.Itoa(p.PageNo))
	}
	return v
}

// AriaSort returns the aria-sort value of a column header.
func (p OverviewProps) AriaSort(key string) string {
	if p.Sort != key {
		return "none"
	}
	if p.Dir == "desc" {
		return "descending"
	}
	return "ascending"
}

// ChartRange is one of the queue page's time ranges.
type ChartRange struct {
	Key   string
	Label string
	Span  time.Duration
}

// ChartRanges are the queue page's ranges, the first one the default.
var ChartRanges = []ChartRange{
	{"1h", "1 hour", time.Hour},
	{"6h", "6 hours", 6 * time.Hour},
	{"24h", "24 hours", 24 * time.Hour},
	{"7d", "7 days", 7 * 24 * time.Hour},
}

// RangeByKey returns the range of that key, or the default.
func RangeByKey(key string) ChartRange {
	for _, r := range ChartRanges {
		if r.Key == key {
			return r
		}
	}
	return ChartRanges[0]
}

// QueueProps is a queue's page (and its embedded card).
type QueueProps struct {
	Page
	Ref    string // how this page's URLs name the queue
	Queue  views.QueueDetail
	Range  ChartRange
	Charts []Chart
	// Groups is the FIFO backlog; nil for standard queues.
	Groups *views.Groups
	// NearMax are messages of a sampled source queue nearing maxReceiveCount.
	NearMax []views.Message
	// Sample is the newest sample of a dead-letter queue (first page); nil otherwise.
	Sample *views.MessagePage
	// Triage is what that sample says went wrong (top tools, dimensions, reasons).
	Triage  views.Triage
	Redrive *RedriveProps
}

// View returns the chart range as a query parameter, none for the default: what the websocket
// of the queue page subscribes with, so that the charts pushed match the range shown.
func (p QueueProps) View() url.Values {
	if p.Range.Key == "" || p.Range.Key == ChartRanges[0].Key {
		return nil
	}
	return url.Values{"range": {p.Range.Key}}
}

// RedriveProps is a dead-letter queue's redrive panel.
type RedriveProps struct {
	Page
	Ref       string
	QueueName string
	FIFO      bool
	Visible   int64 // messages a move would take now
	Sources   []string
	// TierSources are the sources that are themselves dead-letter queues (tiers): a redrive's
	// default destination sends messages back there, one step along the chain.
	TierSources []string
	// Destinations are the watched queues of the same type a redrive is likely meant for (the
	// sources first); Others the rest, behind "Other queue…" (views.RedriveTargets).
	Destinations []string
	Others       []string
	Running      *views.Redrive
	History      []views.Redrive
	// Disabled is why the panel cannot start or cancel anything; empty when it can.
	Disabled string
	// CanCancel: the user may cancel the running task.
	CanCancel bool
	// Error is an action's refusal or failure, safe to show.
	Error string
	// Form keeps what the user chose, for the confirmation step and after an error.
	Destination  string
	MaxPerSecond string
	// Confirm asks the user to confirm a start with the form values.
	Confirm bool
	// IdempotencyKey names the start the confirmation step asks for: a second press, or a form
	// posted again, is answered as the first and starts nothing more.
	IdempotencyKey string
	// Last is the newest ended redrive of this DLQ with what came back of it, for the
	// confirmation step; nil when there is none.
	Last *views.LastRedrive
}

// RedriveDetailProps is one redrive's page: the move task and what came back of it.
type RedriveDetailProps struct {
	Page
	Ref       string
	QueueName string
	FIFO      bool
	Redrive   views.Redrive
}

// MessagesProps is the sampled messages page of a queue.
type MessagesProps struct {
	Page
	Ref       string
	QueueName string
	Messages  views.MessagePage
	Tool      string // the tool filter
	Cursor    string // the cursor of this page; empty for the first
	// Query is the page's search, grouping and dimension filters, as the request gave them.
	Query views.MessageQuery
	// Selection is the selective redrive's form, on a dead-letter queue that can be redriven;
	// nil elsewhere.
	Selection *SelectionForm
}

// SelectionForm is what the messages page's selective redrive needs to know of its queue.
type SelectionForm struct {
	FIFO bool
	// Disabled says why this user may not redrive now (read-only, a viewer, a redrive running).
	Disabled string
}

// SelectionConfirmProps is the confirmation of a selective redrive: what the selection names,
// what it holds in the newest sample, by tool and destination, and the last redrive's outcome.
type SelectionConfirmProps struct {
	Page
	Ref, QueueName string
	FIFO           bool
	// Discard: the selection goes to toolq's archive, not back to any queue.
	Discard   bool
	Selection []SelectionField // what it names, field by field
	// Fields are the form fields that carry the selection to the start.
	Fields         []DimensionFilter
	Sampled        int
	SampleComplete bool
	Matched        int
	ByTool         []NamedCount
	ByDestination  []NamedCount
	Groups         []string
	Last           *views.LastRedrive
	IdempotencyKey string
	// Error is the action's refusal, shown instead of the confirmation.
	Error string
}

// SelectionField is one field of a selection, as the confirmation names it.
type SelectionField struct {
	Name   string
	Values []string
}

// NamedCount is a count of messages by a name (a tool, a queue); "" for none.
type NamedCount struct {
	Name  string
	Count int
}

// Params returns the page's query (tool, search, grouping, dimension filters) with the changes
// given as name, value pairs; an empty value drops that parameter. The cursor is never carried:
// a link that changes the filters starts from the first messages.
func (p MessagesProps) Params(changes ...string) url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("tool", p.Tool)
	set("q", p.Query.Search)
	set("groupBy", p.Query.GroupBy)
	for k, val := range p.Query.Dimensions {
		v.Set(k, val)
	}
	for i := 0; i+1 < len(changes); i += 2 {
		v.Del(changes[i])
		set(changes[i], changes[i+1])
	}
	return v
}

// Filters lists the page's dimension filters, by name.
func (p MessagesProps) Filters() []DimensionFilter {
	out := []DimensionFilter{}
	for _, name := range p.Messages.Dimensions {
		if v, ok := p.Query.Dimensions[name]; ok {
			out = append(out, DimensionFilter{Name: name, Value: v})
		}
	}
	return out
}

// DimensionFilter is one dimension filter of the messages page.
type DimensionFilter struct{ Name, Value string }

// MessageProps is one sampled message.
type MessageProps struct {
	Page
	Ref       string
	QueueName string
	Message   views.Message
	Pretty    string
	// Selection offers "Redrive this call" on a dead-letter queue that can be redriven; nil
	// elsewhere.
	Selection *SelectionForm
}

// AuditProps is a page of the audit log.
type AuditProps struct {
	Page
	Entries []views.AuditEntry
	// Older is the cursor of the next page; 0 when this is the last.
	Older int64
	// First: this is the newest page, the one the websocket keeps current.
	First bool
}

// LoginProps is the sign-in page.
type LoginProps struct {
	Page
	Next  string
	Error bool
	// WaitSeconds, when not 0, says the sign-in was refused for too many attempts, and how long
	// to wait before the next.
	WaitSeconds int
}

// ErrorProps is an error page or fragment.
type ErrorProps struct {
	Page
	Status  int
	Message string
}

// joinNames lists queue names (or ARNs) for a sentence.
func joinNames(names []string) string { return strings.Join(names, ", ") }

// paramsText writes an audit entry's parameters compactly, keys sorted.
func paramsText(params map[string]any) string {
	if len(params) == 0 {
		return ""
	}
	b, err := json.Marshal(params) // encoding/json sorts map keys
	if err != nil {
		return ""
	}
	return string(b)
}

// resultBadge maps an audit result to a badge colour.
func resultBadge(result string) string {
	switch result {
	case "accepted", "repeated":
		return "ok"
	case "refused":
		return "warning"
	case "intent":
		// Under way, or settled by the outcome entry above it: neither good nor bad by itself.
		return "unknown"
	}
	return "critical"
}

// statusText names an HTTP status for people.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error"
}

// StatusProps is the status page.
type StatusProps struct {
	Page
	Status        views.Status
	Notifications views.Notifications
}

// TestButtonTitle says why the test notification button is off for a role, or what it does.
func TestButtonTitle(role string) string {
	if role != "operator" {
		return "Only operators may send test notifications"
	}
	return "Queue a test message to this target now, past the grouping"
}

// DimensionList returns a message's dimensions in name order, for a stable display.
func DimensionList(dims map[string]string) []DimensionFilter {
	out := make([]DimensionFilter, 0, len(dims))
	for _, name := range slices.Sorted(maps.Keys(dims)) {
		out = append(out, DimensionFilter{Name: name, Value: dims[name]})
	}
	return out
}

// WithCursor returns q with a messages page's cursor added.
func WithCursor(q url.Values, cursor string) url.Values {
	q.Set("cursor", cursor)
	return q
}

// GroupFilterParam is the page's query parameter that filters by the field a page is grouped
// by: "tool" for the tool name, the dimension's own name otherwise.
func GroupFilterParam(groupBy string) string {
	if groupBy == views.GroupToolName {
		return "tool"
	}
	return groupBy
}

// anyGrouped says whether a message of msgs belongs to a FIFO message group.
func anyGrouped(msgs []views.Message) bool {
	return slices.ContainsFunc(msgs, func(m views.Message) bool { return m.GroupID != "" })
}

// ReceivesAll is a message's receives, all of them: "4 of 5" of its queue's maxReceiveCount,
// or "4" on a queue without one.
func ReceivesAll(r views.Receives) string {
	if r.Max == nil {
		return strconv.Itoa(r.All)
	}
	return strconv.Itoa(r.All) + " of " + strconv.Itoa(*r.Max)
}

// ownReceivesNote warns before toolq's limit of receives of a message, and at it.
func ownReceivesNote(m views.Message) string {
	switch left, limited := m.OwnReceivesLeft(); {
	case !limited:
		return ""
	case left == 0:
		return "toolq's limit: it does not sample this queue again while this message is in it"
	case left == 1:
		return "one look left before toolq's limit"
	}
	return ""
}

// ownReceivesClass marks a message at or one look from toolq's limit of receives.
func ownReceivesClass(m views.Message) string {
	switch left, limited := m.OwnReceivesLeft(); {
	case limited && left == 0:
		return "own-limit"
	case limited && left == 1:
		return "own-near-limit"
	}
	return ""
}

// sourcesNote names a redrive's default destinations after "each message's original source
// queue": " (web-search, exports)", or "" when they are not known.
func sourcesNote(sources []string) string {
	if len(sources) == 0 {
		return ""
	}
	return " (" + joinNames(sources) + ")"
}

// rateNote is a redrive's rate limit after its destination, ", at most 10 per second", or ""
// when SQS chooses.
func rateNote(maxPerSecond string) string {
	if maxPerSecond == "" {
		return ""
	}
	return ", at most " + maxPerSecond + " per second"
}
