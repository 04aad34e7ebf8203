// Package safetext makes hostile text (message bodies and attributes, group ids, AWS error
// messages, form input) safe to store and to show: valid UTF-8, no control characters, bounded.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Store returns s fit for storage: valid UTF-8 (invalid bytes become U+FFFD), no control
// characters but newline and tab, at most max bytes cut on a rune boundary.
func Store(s string, max int) string { return clean(s, max, true) }

// Field returns a form field or query value fit to echo back and hand on: Store without even
// newlines and tabs.
func Field(s string, max int) string { return clean(s, max, false) }

// clean is Store, keeping newline and tab only with lines.
func clean(s string, max int, lines bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !(lines && (r == '\n' || r == '\t')) {
			return -1
		}
		return r
	}, s)
	return Truncate(s, max)
}

// Line returns s as one line of at most max runes for a reason, a log line or a chat message:
// valid UTF-8, control and format characters (bidirectional overrides, zero-width joiners, line
// and paragraph separators) replaced by spaces, and an ellipsis where it was cut.
func Line(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			return strings.TrimRightFunc(b.String(), unicode.IsSpace) + "…"
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Visible returns s with every C0 control character but newline and tab, DEL and every C1
// control character replaced by a visible escape: \xNN for C0 and DEL (ESC is \x1b, CR \x0d),
// \u00NN for C1 (NEL is \u0085). It is for text that must stay whole but is shown or exported as
// it is (a message body in a page or a CSV cell), where a raw ESC or NEL would drive a terminal
// or a spreadsheet, or hide what follows it. Backslashes are
// left alone, so "\x1b" written out in a body reads the same as an escaped ESC.
func Visible(s string) string {
	if !strings.ContainsFunc(s, escaped) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case !escaped(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// escaped reports whether Visible escapes r: C0 but newline and tab, DEL, C1.
func escaped(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
}

// Truncate cuts s to at most max bytes without splitting a rune.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
