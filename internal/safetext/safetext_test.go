package safetext

import (
	"strings"
	"testing"
)

func TestStore(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello", 10, "hello"},
		{"keeps newline and tab", "a\nb\tc", 10, "a\nb\tc"},
		{"drops C0, DEL and C1", "a\x00b\x1bc\x7fd\u0085e\u009bf", 20, "abcdef"},
		{"invalid UTF-8", "a\xffb", 10, "a\uFFFDb"},
		{"cut on a rune boundary", "héllo", 2, "h"},
		{"empty", "", 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Store(tt.in, tt.max); got != tt.want {
				t.Errorf("Store(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestField(t *testing.T) {
	if got := Field("a\nb\tc\x00d\u0085é", 6); got != "abcdé" {
		t.Errorf("Field = %q", got)
	}
	if got := Field("héllo", 2); got != "h" {
		t.Errorf("Field cut = %q, want a whole rune", got)
	}
}

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "sess_1", 64, "sess_1"},
		{"newlines become spaces", "a\nb", 64, "a b"},
		{"bidi override becomes a space", "a\u202eb", 64, "a b"},
		{"line separator", "a\u2028b", 64, "a b"},
		{"cut with an ellipsis", "abcdef", 3, "abc…"},
		{"trailing space before the ellipsis goes", "ab cdef", 3, "ab…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in, tt.max); got != tt.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestLineOfHostileGroupIDs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sess_42", "sess_42"},
		{"a\tb\r\nc", "a b  c"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{strings.Repeat("é", 70), strings.Repeat("é", 64) + "…"},
		{"zero\u200bwidth", "zero width"},
	}
	for _, tt := range tests {
		if got := Line(tt.in, 64); got != tt.want {
			t.Errorf("Line(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestVisible(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", `{"q":"go"}`, `{"q":"go"}`},
		{"keeps newline and tab", "a\nb\tc", "a\nb\tc"},
		{"C0", "nul\x00 bel\x07 esc\x1b[31m cr\r", `nul\x00 bel\x07 esc\x1b[31m cr\x0d`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1", "nel\u0085 csi\u009b", `nel\u0085 csi\u009b`},
		{"other text stays", "é ✓ \u00a0", "é ✓ \u00a0"},
		{"backslashes stay", `a\nb`, `a\nb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Visible(tt.in); got != tt.want {
				t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
