package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// summary reads what needs a person, for GET /api/v1/summary and the get_summary tool, from the
// current snapshot: the JSON, each dead-letter queue linked to its page under base (the
// dashboard's address), and the text a chat bot posts as it is. The JSON lists what needs a
// person and the dead-letter queues that hold messages, and counts the rest; with all, it adds
// the unhealthy queues' summaries and every queue's.
func (s *Server) summary(ctx context.Context, base string, all bool) (sum views.Summary, text string, err error) {
	snap, err := s.opts.Views.Snapshot(ctx)
	if err != nil {
		return views.Summary{}, "", err
	}
	sum = snap.Summary(s.opts.Now().UTC())
	text = chatSafe(sum.Text(base))
	for i, d := range sum.DeadLetterQueues {
		sum.DeadLetterQueues[i].PageURL = views.QueuePageURL(base, d.Ref)
	}
	switch {
	case !all:
		sum.Unhealthy = nil
	case sum.Unhealthy == nil:
		sum.Unhealthy = []views.QueueSummary{}
	}
	if all {
		sum.Queues = snap.Overview.Queues
	}
	if sum.DeadLetterQueues == nil {
		sum.DeadLetterQueues = []views.DLQDepth{}
	}
	if sum.RunningRedrives == nil {
		sum.RunningRedrives = []views.Redrive{}
	}
	if sum.RedriveOutcomes == nil {
		sum.RedriveOutcomes = []views.QueueRedriveOutcome{}
	}
	return sum, text, nil
}

// getSummary answers GET /api/v1/summary?all=: JSON, or with ?format=text (or Accept:
// text/plain) the text a chat bot posts as it is, each queue's line with its link.
func (s *Server) getSummary(c echo.Context) error {
	format := c.QueryParam("format")
	if format != "" && format != "text" && format != "json" {
		return newError(http.StatusBadRequest, "invalid_parameter", "format must be text or json")
	}
	all, err := boolParam(c, "all")
	if err != nil {
		return err
	}
	sum, text, err := s.summary(c.Request().Context(), s.baseURL(c), all)
	if err != nil {
		return err
	}
	if format == "text" || (format == "" && prefersText(c.Request().Header.Get(echo.HeaderAccept))) {
		return c.String(http.StatusOK, text)
	}
	return c.JSON(http.StatusOK, sum)
}

// prefersText reports whether an Accept header asks for text/plain rather than JSON.
func prefersText(accept string) bool {
	return strings.Contains(accept, "text/plain") && !strings.Contains(accept, "json")
}

// chatMarkup replaces the characters with which text posted as it is would notify or link in a
// chat: Slack's <!channel>, <!here>, <@U…> and <url|label>; the @here, @channel, @all and
// @everyone of Mattermost, Teams and Discord; and the Markdown links and images those three
// render with the address hidden ([Fix-now](https://…), ![x](https://…), [x][ref] with its
// "[ref]: https://…" line). Health reasons quote hostile text (a FIFO group id may be
// "<!channel>" or "[Fix-now](https://evil.example)"), so the summary swaps them for look-alikes
// that read the same and do nothing: without its brackets no Markdown link is left, and an
// address left in the text shows as itself. Queue names and toolq's own words never contain them.
var chatMarkup = strings.NewReplacer("<", "\u2039", ">", "\u203a", "@", "\uff20", "[", "\uff3b", "]", "\uff3d")

// chatSafe returns text that a bot can post without it pinging a channel or hiding a link.
func chatSafe(text string) string { return chatMarkup.Replace(text) }
