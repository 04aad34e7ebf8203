package auth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"unicode"
)

// Headers set by an authenticating proxy such as oauth2-proxy.
const (
	HeaderForwardedUser   = "X-Forwarded-User"
	HeaderForwardedGroups = "X-Forwarded-Groups"
)

// maxProxyUser bounds a proxy user name: it is written to the audit log.
const maxProxyUser = 256

// fromProxy reads the user and groups the proxy asserted, from a trusted peer only.
func (a *Authenticator) fromProxy(r *http.Request) (Identity, error) {
	user := strings.TrimSpace(r.Header.Get(HeaderForwardedUser))
	if user == "" {
		return Identity{}, ErrNoCredentials
	}
	if !a.TrustedPeer(r.RemoteAddr) {
		return Identity{}, ErrUntrustedProxy
	}
	if len(user) > maxProxyUser || strings.ContainsFunc(user, unicode.IsControl) {
		return Identity{}, ErrInvalidCredentials
	}
	role := a.defaultRole
	for _, g := range strings.Split(r.Header.Get(HeaderForwardedGroups), ",") {
		if a.operatorGroup[strings.TrimSpace(g)] {
			role = RoleOperator
			break
		}
	}
	if role == "" {
		return Identity{}, ErrNoRole
	}
	return Identity{Name: user, Kind: KindProxy, Role: role, Via: ViaProxy, Credential: "proxy:" + user}, nil
}

// peerAddr parses the address of the direct peer (never a forwarded one).
func peerAddr(remoteAddr string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}
