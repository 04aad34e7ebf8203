package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/templates"
)

// statusPage answers GET /status: what toolq can and cannot read in AWS, region by region, and
// what its notification targets were sent.
func (s *Server) statusPage(c echo.Context) error {
	ctx := c.Request().Context()
	st, err := s.opts.Views.Status(ctx)
	if err != nil {
		return err
	}
	// A database that is not sound is what the page must say above all (Views.Status reads
	// around it); the deliveries it cannot read are left out rather than failing the page.
	n, err := s.opts.Views.Notifications(ctx, s.notificationsStart())
	if err != nil && st.Database.OK {
		return err
	}
	p := templates.StatusProps{Page: s.page(c, "Status", "status", ""), Status: st, Notifications: n}
	p.Notice = statusNotices[c.QueryParam("done")]
	return render(c, http.StatusOK, templates.StatusPage(p))
}

// statusNotices are the fixed outcomes a plain form's 303 may show on the status page.
var statusNotices = map[string]string{
	"notify-test": "Test notification queued: it goes out within seconds; its delivery shows below.",
}

// testNotificationPage answers POST /status/notifications/test (the status page's button,
// field target): the same test as the API's, then a 303 back to the status page.
func (s *Server) testNotificationPage(c echo.Context) error {
	if _, err := s.sendTest(c, c.FormValue("target")); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/status?done=notify-test#notifications")
}
