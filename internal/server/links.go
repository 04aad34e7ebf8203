package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// ParsePublicURL checks --public-url: the address people reach the dashboard at, http or https,
// with a host and no query or fragment. It returns it without a trailing slash, "" for "".
func ParsePublicURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, " \t\r\n") {
		return "", errors.New("server: the public URL must be http(s)://host[:port][/path], without query, fragment or credentials")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// baseURL is the dashboard's address as the links toolq writes (summary, embed links) name it:
// --public-url when set; else the request's own scheme and host. Behind a proxy the request's
// host is the proxy's upstream (127.0.0.1:8080), so X-Forwarded-Host is believed, from a trusted
// proxy only: any other client could make toolq write links to a host of its choosing.
func (s *Server) baseURL(c echo.Context) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	req := c.Request()
	host := req.Host
	if fwd := req.Header.Get("X-Forwarded-Host"); fwd != "" && s.auth.TrustedPeer(req.RemoteAddr) {
		if h := strings.TrimSpace(strings.Split(fwd, ",")[0]); validHost(h) {
			host = h
		}
	}
	return fmt.Sprintf("%s://%s", c.Scheme(), host)
}

// validHost reports whether h can stand as the host of a URL: a name or an address, with an
// optional port, and nothing that would end the authority or start a path.
func validHost(h string) bool {
	if h == "" || len(h) > 255 || strings.ContainsAny(h, "/\\@?#%<> \t\"'") {
		return false
	}
	u, err := url.Parse("http://" + h)
	return err == nil && u.Host == h
}

// ChatSafe is the summary's chat-safety, for the notifier's Slack messages: one rule for every
// text toolq posts to a chat.
func ChatSafe(text string) string { return chatSafe(text) }
