package templates

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEmbedColors(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"fg:#1B1F24,bg:fff", "bg:fff,fg:1b1f24", true},
		{"chart-line:0969daff", "chart-line:0969daff", true},
		{"bg:red", "", false},                    // colours only, as hex
		{"bg:fff;}body{display:none", "", false}, // no way out of the declaration
		{"background:fff", "", false},            // names from the allowlist only
		{"bg:ffff", "", false},                   // 3, 6 or 8 digits
		{"bg:fff,bg", "", false},                 // every pair whole
		{"bg:url(x)", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseEmbedColors(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseEmbedColors(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	css := EmbedThemeCSS("bg:fff,fg:1b1f24")
	if !strings.Contains(css, "--bg: #fff;") || !strings.Contains(css, "--fg: #1b1f24;") {
		t.Errorf("EmbedThemeCSS = %q", css)
	}
}

func TestEmbedOrigins(t *testing.T) {
	got := EmbedOrigins([]string{"'self'", "https://portal.example.com/wiki", "https://*.example.com", "https:", "http://127.0.0.1:8081", "'none'"})
	want := []string{"self", "https://portal.example.com", "http://127.0.0.1:8081"}
	if !slices.Equal(got, want) {
		t.Errorf("EmbedOrigins = %q, want %q", got, want)
	}
}
