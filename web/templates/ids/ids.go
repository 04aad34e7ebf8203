// Package ids names the HTML element ids that both a full page and the websocket pushes use.
// A push swaps an element by its id (hx-swap-oob), so the page and the push must agree on every
// id: they both take it from here. Browser tests rely on these ids too; docs/ui.md lists them.
package ids

import (
	"hash/fnv"
	"strconv"
)

// Freshness is the "updated 3 s ago" line of every page.
func Freshness() string { return "freshness" }

// Flash is the area where errors of HTMX requests are shown.
func Flash() string { return "flash" }

// Main is the page's main landmark (the skip link's target).
func Main() string { return "main" }

// OverviewTable is the overview's table section, what the filter and sort links swap.
func OverviewTable() string { return "overview-table" }

// OverviewFilter is the overview's filter form.
func OverviewFilter() string { return "overview-filter" }

// OverviewSort holds the overview's current sort as inputs of the filter form. It lives inside
// the swapped table section, so that a sort click updates what the next filter request sends.
func OverviewSort() string { return "overview-sort" }

// OverviewRows is the overview table's body: pushed whole, in the subscriber's own order, so that
// a change of health or of the set of queues reorders it.
func OverviewRows() string { return "overview-rows" }

// OverviewPager is the overview's line of pages under the table: which queues it shows of how
// many, and the links to the pages before and after.
func OverviewPager() string { return "overview-pager" }

// SparkPoints is the element of an overview push that carries the sparklines' new points
// (app.js shifts each sparkline by them).
func SparkPoints() string { return "spark-points" }

// QueueRow is one queue's row of the overview table.
func QueueRow(queueID int64) string { return "queue-row-" + strconv.FormatInt(queueID, 10) }

// Sight is the overview's list of what toolq could not read in its last cycles.
func Sight() string { return "sight" }

// QueueLink is the link to a queue's page in its overview row. Pushes replace the rows; the
// link keeps its id, so that keyboard focus on it survives them.
func QueueLink(queueID int64) string { return "queue-link-" + strconv.FormatInt(queueID, 10) }

// Attention is the overview's list of what needs a person, above the table.
func Attention() string { return "attention" }

// Problem is one line of the overview's problem list, by its key (templates.ProblemKey): a
// hash, since the key holds a queue's name or ARN.
func Problem(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return "problem-" + strconv.FormatUint(h.Sum64(), 36)
}

// ProblemsMore counts the problems the overview's list does not name.
func ProblemsMore() string { return "problems-more" }

// Totals is the overview's totals line.
func Totals() string { return "totals" }

// Cost is the overview's estimated AWS cost per day.
func Cost() string { return "cost" }

// QueueStats is a queue's depth, health and sample line at the top of its page (and its
// embedded card).
func QueueStats() string { return "queue-stats" }

// Charts is the queue page's chart section, what the range links swap.
func Charts() string { return "charts" }

// ChartGrid holds the charts inside the chart section: pushed after each metrics cycle, while
// the section around it (which holds the range links and opens the websocket) stays.
func ChartGrid() string { return "chart-grid" }

// Groups is the FIFO per-group backlog section.
func Groups() string { return "groups" }

// Messages is the sampled messages section (list and tool counts).
func Messages() string { return "messages" }

// RedriveWaiting is the redrive panel's count of the messages a move would take now, pushed
// with the queue's depth so that it never disagrees with the figures above it.
func RedriveWaiting() string { return "redrive-waiting" }

// RedrivePanel is the redrive panel of a dead-letter queue: its forms swap it whole.
func RedrivePanel() string { return "redrive-panel" }

// SelectionForm is the messages page's selective redrive form, to which the table's checkboxes
// belong.
func SelectionForm() string { return "selection-form" }

// RedriveProgress is the running move task's progress bar inside the panel.
func RedriveProgress() string { return "redrive-progress" }

// RedriveRefresh is the element a push replaces to make each browser fetch its own redrive
// panel again (the panel holds per-user forms and CSRF tokens, which a shared push cannot).
func RedriveRefresh() string { return "redrive-refresh" }

// RedriveHistory is the redrive panel's list of past redrives, with what came back of each:
// pushed with every push of a dead-letter queue's page, so that a row's outcome settles in view.
func RedriveHistory() string { return "redrive-history" }

// RedriveLastOutcome is the confirmation step's note of what the last redrive bounced.
func RedriveLastOutcome() string { return "redrive-last-outcome" }

// RedriveDetail and RedriveOutcomeSection are a redrive page's move task and what came back.
func RedriveDetail() string         { return "redrive-detail" }
func RedriveOutcomeSection() string { return "redrive-outcome" }

// AuditTable is the audit log's table.
func AuditTable() string { return "audit-table" }

// Advice is a queue page's configuration advice, pushed as collector cycles end.
func Advice() string { return "advice" }

// NearMax is a source queue page's messages nearing maxReceiveCount, pushed with each sample.
func NearMax() string { return "nearmax" }

// Peek is a queue page's account of the dashboard's sampling, pushed with each sample.
func Peek() string { return "peek" }

// CollectorErrors is a queue page's recent collector errors, pushed as cycles end.
func CollectorErrors() string { return "collector-errors" }
