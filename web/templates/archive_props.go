package templates

import (
	"net/url"
	"slices"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/views"
)

// RestoreFormID is the id of an archive page's restore form: the table's checkboxes belong to it
// wherever they sit.
const RestoreFormID = "restore-form"

// ArchiveListID is the id of an archive page's list, which the filter form swaps over HTMX.
const ArchiveListID = "archive-list"

// ArchiveProps is an archive page: every dead-letter queue's discarded messages (Ref ""), or one
// queue's, newest first.
type ArchiveProps struct {
	Page
	Ref, QueueName string // "" for the whole archive
	Archive        views.ArchivePage
	Tool, Search   string // the page's filters
	Cursor         string // the cursor of this page; empty for the first
	// GroupBy is ArchiveGroupTool, ArchiveGroupReason or "" (no grouping).
	GroupBy string
	// Groups are this page's rows counted by GroupBy: the page's, not the whole archive's.
	Groups []NamedCount
	// Refs name each row's queue in links, by queue ARN: the whole archive's rows come from
	// several queues. A queue missing here is named by its ARN.
	Refs map[string]string
	// Restore is the restore form on one queue's archive; nil on the whole archive and for a
	// queue that no redrive can send from.
	Restore *SelectionForm
}

// The archive pages' groupings.
const (
	ArchiveGroupTool   = views.GroupToolName
	ArchiveGroupReason = "reason"
)

// ListURL returns the link of this archive page (the whole archive, or the queue's) with q.
func (p ArchiveProps) ListURL(q url.Values) string {
	if p.Ref == "" {
		return p.Nav.URL("/archive", q)
	}
	return p.Nav.QueueURL(p.Ref, q, "archive")
}

// Params returns the page's query (tool, search, grouping) with the changes given as name, value
// pairs; an empty value drops that parameter. The cursor is never carried: a link that changes
// the filters starts from the newest messages.
func (p ArchiveProps) Params(changes ...string) url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("tool", p.Tool)
	set("q", p.Search)
	set("groupBy", p.GroupBy)
	for i := 0; i+1 < len(changes); i += 2 {
		v.Del(changes[i])
		set(changes[i], changes[i+1])
	}
	return v
}

// Filtered reports whether the page's rows are filtered.
func (p ArchiveProps) Filtered() bool { return p.Tool != "" || p.Search != "" }

// QueueRef names a row's queue in links.
func (p ArchiveProps) QueueRef(m views.ArchivedMessage) string {
	if p.Ref != "" {
		return p.Ref
	}
	if ref, ok := p.Refs[m.QueueARN]; ok {
		return ref
	}
	return m.QueueARN
}

// Tools are the tool names of the page's rows and its filter, in order: the tool box's choices.
func (p ArchiveProps) Tools() []string {
	var out []string
	if p.Tool != "" {
		out = append(out, p.Tool)
	}
	for _, m := range p.Archive.Messages {
		if m.ToolName != "" && !slices.Contains(out, m.ToolName) {
			out = append(out, m.ToolName)
		}
	}
	slices.Sort(out)
	return out
}

// Selectable reports whether the table's rows have a restore checkbox.
func (p ArchiveProps) Selectable() bool { return p.Restore != nil && p.Restore.Disabled == "" }

// ArchivedMessageProps is one archived message's page.
type ArchivedMessageProps struct {
	Page
	Ref, QueueName string
	Message        views.ArchivedMessage
	// Pretty is the body pretty-printed, with the characters that would hide text made visible.
	Pretty string
	// Restore offers "Restore this message"; nil for a queue that no redrive can send from.
	Restore *SelectionForm
}

// RestoreConfirmProps is the confirmation of a restore from a queue's archive: what the
// selection names, what it holds in the archive, where it goes.
type RestoreConfirmProps struct {
	Page
	Ref, QueueName string
	Selection      []SelectionField // what it names, field by field
	// Fields are the form fields that carry the selection to the start.
	Fields []DimensionFilter
	// Destination is the queue typed in the form; "" sends each message to its source.
	Destination string
	// Counted: the archive was read for the numbers below. Selections by dimension, reason or
	// group are not counted here (the archive's filters are a tool and a search).
	Counted bool
	// Matched are the archived messages the selection names; Restored those of them a restore
	// already sent, which a restore skips.
	Matched, Restored int
	// Complete: every archived message of the queue was read; else the newest ones only.
	Complete bool
	// ByTool and ByDestination count what the restore would send.
	ByTool, ByDestination []NamedCount
	IdempotencyKey        string
	// Error is a refusal, shown instead of the confirmation.
	Error string
}

// ToSend is how many messages the restore would send.
func (p RestoreConfirmProps) ToSend() int { return p.Matched - p.Restored }

// archivedNoun is "message" or "messages", after a count.
func archivedNoun(n int64) string {
	if n == 1 {
		return "message"
	}
	return "messages"
}

// archiveExportScope says what an archive's exports hold: the filters apply, the paging does not.
func archiveExportScope(filtered bool) string {
	if filtered {
		return "every archived message of this queue matching these filters"
	}
	return "this queue's archive"
}

// archiveGroupName names an archive page's grouping.
func archiveGroupName(groupBy string) string {
	if groupBy == ArchiveGroupTool {
		return "tool"
	}
	return groupBy
}

// restoredToName is the name of the queue a restore sent a message to.
func restoredToName(m views.ArchivedMessage) string { return arn.QueueName(m.RestoredTo) }

// restoreCountScope says, after a restore's count, when the count did not read the whole archive.
func restoreCountScope(complete bool) string {
	if complete {
		return ""
	}
	return " among its newest messages (toolq counted that far; the restore reads the whole archive)"
}
