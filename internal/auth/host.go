package auth

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Hosts decides which Host headers toolq answers, in every auth mode. A web page whose own name
// an attacker makes resolve to toolq's address (DNS rebinding) is same-origin with toolq for the
// browser: it could read the API and start redrives with whatever the browser or the proxy in
// front adds (a session cookie on that name, X-Forwarded-User). Only the Host header, the name
// the page was loaded under, tells such a request apart, so toolq answers only the names it was
// told are its own:
//
//   - the host of --listen, when it is a name (toolq.internal:8080);
//   - the host of --public-url;
//   - the names of --allowed-host, which a proxy in front forwards;
//   - localhost and any IP address (127.0.0.1, [::1], 10.0.0.5): rebinding needs a name the
//     attacker controls, and a page is same-origin with an address or with localhost only if it
//     was served from there. This also covers a listener on every interface (0.0.0.0, [::]),
//     whose clients reach it by one of the machine's addresses, and load balancers' probes.
//
// Ports are not compared: a rebound page reaches toolq's own port, so only the name tells it
// apart, and a proxy or a container may publish toolq on another port.
type Hosts struct {
	names map[string]bool
}

// NewHosts returns the Hosts of a toolq that listens on listen ("host:port"), is reached at
// publicURL (may be empty) and behind proxies that forward the names of allowed (checked by
// ParseAllowedHosts).
func NewHosts(listen, publicURL string, allowed []string) (*Hosts, error) {
	h := &Hosts{names: map[string]bool{}}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		h.names[hostName(host)] = true
	}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("auth: public URL %q has no host", publicURL)
		}
		h.names[hostName(u.Hostname())] = true
	}
	for _, name := range allowed {
		h.names[hostName(name)] = true
	}
	return h, nil
}

// Allows reports whether a request's Host header ("host" or "host:port") names this toolq.
func (h *Hosts) Allows(hostHeader string) bool {
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]")
	}
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" || h.names[name] {
		return true
	}
	_, err = netip.ParseAddr(name)
	return err == nil
}

// ParseAllowedHosts checks --allowed-host values: host names (or addresses) without scheme, port
// or path. It returns them lower-cased.
func ParseAllowedHosts(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")); err == nil {
			out = append(out, hostName(v))
			continue
		}
		if !validHostName(v) {
			return nil, fmt.Errorf("auth: allowed host %q is not a host name (give the name alone: no scheme, port or path; ports are not compared)", v)
		}
		out = append(out, hostName(v))
	}
	return out, nil
}

// hostName is a host as compared: lower-case, without the brackets of an IPv6 address or the
// trailing dot of a fully qualified name.
func hostName(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// validHostName reports whether s is a DNS name: dot-separated labels of letters, digits,
// hyphens and underscores, none empty but a final one (a trailing dot).
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
