package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/templates"
)

// loginPage answers GET /login?next=&error=1: the token form (POST /login signs in, auth_handlers.go).
func (s *Server) loginPage(c echo.Context) error {
	p := s.loginProps(c, localPath(c.QueryParam("next")))
	p.Error = c.QueryParam("error") == "1"
	status := http.StatusOK
	if p.Error {
		status = http.StatusUnauthorized
	}
	return render(c, status, templates.LoginPage(p))
}

// loginProps is the login page going to next.
func (s *Server) loginProps(c echo.Context, next string) templates.LoginProps {
	p := templates.LoginProps{Next: next}
	p.Page = templates.Page{Title: "Sign in", Bare: true, Nav: navOf(c), CSRF: csrfToken(c), Now: s.opts.Now().UTC()}
	return p
}

// localPath keeps next only when it is a path on this site, so the login form can never send a
// user elsewhere; anything else becomes "/".
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		len(next) > 2000 || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}
