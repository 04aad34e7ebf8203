package auth

import (
	"slices"
	"testing"
)

func TestHostsAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		listen, publicURL string
		allowed           []string
		host              string
		want              bool
	}{
		{"loopback address", "127.0.0.1:8080", "", nil, "127.0.0.1:8080", true},
		{"loopback address, another port", "127.0.0.1:8080", "", nil, "127.0.0.1:9999", true},
		{"localhost", "127.0.0.1:8080", "", nil, "localhost:8080", true},
		{"localhost, fully qualified", "127.0.0.1:8080", "", nil, "localhost.", true},
		{"IPv6 loopback", "[::1]:8080", "", nil, "[::1]:8080", true},
		{"IPv6 address without port", "[::]:8080", "", nil, "[fd00::1]", true},
		{"an address of a wildcard listener", "0.0.0.0:8080", "", nil, "192.168.1.20:8080", true},
		{"rebound name", "127.0.0.1:8080", "", nil, "evil.example:8080", false},
		{"a name under localhost", "127.0.0.1:8080", "", nil, "evil.localhost:8080", false},
		{"an address-like name", "127.0.0.1:8080", "", nil, "127.0.0.1.nip.io", false},
		{"no Host (HTTP/1.0)", "127.0.0.1:8080", "", nil, "", false},
		{"the listener's name", "toolq.internal:8080", "", nil, "TOOLQ.internal:8080", true},
		{"a wildcard listener has no name", ":8080", "", nil, "toolq.internal", false},
		{"the public URL's host", "0.0.0.0:8080", "https://toolq.example.com/ops", nil, "toolq.example.com", true},
		{"the public URL's host, fully qualified", "0.0.0.0:8080", "https://toolq.example.com", nil, "toolq.example.com.:443", true},
		{"an allowed host", "0.0.0.0:8080", "", []string{"toolq.corp"}, "toolq.corp:443", true},
		{"a subdomain of an allowed host", "0.0.0.0:8080", "", []string{"toolq.corp"}, "x.toolq.corp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed, err := ParseAllowedHosts(tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			h, err := NewHosts(tt.listen, tt.publicURL, allowed)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Allows(tt.host); got != tt.want {
				t.Errorf("Allows(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestParseAllowedHosts(t *testing.T) {
	t.Parallel()
	got, err := ParseAllowedHosts([]string{" Toolq.Example.com ", "", "toolq-internal.", "10.0.0.5", "[fd00::5]", "svc_name.ns"})
	if want := []string{"toolq.example.com", "toolq-internal", "10.0.0.5", "fd00::5", "svc_name.ns"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseAllowedHosts = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"https://toolq.example.com", "toolq.example.com:443", "toolq.example.com/ops", "*.example.com", "a..b", "toolq example"} {
		if _, err := ParseAllowedHosts([]string{bad}); err == nil {
			t.Errorf("ParseAllowedHosts(%q) accepted", bad)
		}
	}
	if _, err := New(Config{Mode: ModeNone, AllowedHosts: []string{"toolq.example.com:443"}}); err == nil {
		t.Error("New accepted an allowed host with a port")
	}
}
