package templates

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// EmbedColorNames are the stylesheet's colour variables a portal may set for an embedded page
// (?colors=bg:ffffff,fg:1b1f24), so that the iframe matches the page around it.
var EmbedColorNames = []string{"bg", "fg", "muted", "line", "card", "link", "focus", "chart-line", "chart-bar"}

// embedColor is the only colour syntax accepted: 3, 6 or 8 hex digits, with or without "#".
var embedColor = regexp.MustCompile(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$`)

// ParseEmbedTheme reads ?theme= (light or dark; anything else follows the reader's system).
func ParseEmbedTheme(s string) string {
	if s == "light" || s == "dark" {
		return s
	}
	return ""
}

// ParseEmbedColors reads ?colors=: comma-separated name:hex pairs, names from EmbedColorNames.
// Anything else in it (another name, a value that is not a hex colour) refuses the whole
// parameter, so that nothing a link carries reaches the stylesheet but colours. It returns the
// pairs in a canonical form ("bg:ffffff,fg:1b1f24", by name), "" for none.
func ParseEmbedColors(s string) (string, bool) {
	if s == "" {
		return "", true
	}
	pairs := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || !slices.Contains(EmbedColorNames, name) || !embedColor.MatchString(value) || len(pairs) >= len(EmbedColorNames) {
			return "", false
		}
		pairs[name] = strings.ToLower(strings.TrimPrefix(value, "#"))
	}
	var out []string
	for _, name := range EmbedColorNames {
		if v, ok := pairs[name]; ok {
			out = append(out, name+":"+v)
		}
	}
	return strings.Join(out, ","), true
}

// EmbedThemeCSS is the stylesheet of an embedded page's colours: each variable set on :root,
// for light and dark alike (the portal chose them). colors must come from ParseEmbedColors.
func EmbedThemeCSS(colors string) string {
	var b strings.Builder
	b.WriteString("/* toolq: the embedding portal's colours (?colors=), above both themes of app.css */\n:root:root:root {")
	for part := range strings.SplitSeq(colors, ",") {
		name, value, ok := strings.Cut(part, ":")
		if !ok || !slices.Contains(EmbedColorNames, name) || !embedColor.MatchString(value) {
			continue
		}
		b.WriteString(" --" + name + ": #" + strings.TrimPrefix(value, "#") + ";")
	}
	b.WriteString(" }\n")
	return b.String()
}

// EmbedOrigins returns the origins an embedded page posts its height to: the --frame-ancestors
// sources that name one origin (scheme://host[:port]), and the page's own for 'self' ("self").
// Wildcard and scheme-only sources name no single origin, and postMessage needs one.
func EmbedOrigins(frameAncestors []string) []string {
	var out []string
	for _, a := range frameAncestors {
		if a == "'self'" {
			out = append(out, "self")
			continue
		}
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Contains(u.Host, "*") {
			continue
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return out
}
