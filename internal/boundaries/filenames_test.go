package boundaries

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode"
)

// TestTrackedFileNames: no tracked file's path holds a space, a quote, a backslash or a control
// character. Such a name is nearly always an accident (a shell or sed command that wrote its
// argument as a file name: one such file stood at the root for 166 commits), and it breaks
// every script that splits on blanks.
func TestTrackedFileNames(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git ls-files: %v", err)
		}
		t.Skipf("not a git checkout here (git ls-files: %v)", err)
	}
	for name := range bytes.SplitSeq(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if bad := badInName(string(name)); bad != "" {
			t.Errorf("tracked file %q: its name holds %s", name, bad)
		}
	}
}

// badInName names what is wrong in a path, or returns "".
func badInName(name string) string {
	for _, r := range name {
		switch {
		case r == ' ' || unicode.IsSpace(r):
			return "a space"
		case strings.ContainsRune("\"'`\\", r):
			return "a quote or a backslash"
		case unicode.IsControl(r) || r == unicode.ReplacementChar:
			return "a control character"
		}
	}
	return ""
}

func TestBadInName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"docs/api.md", true},
		{"web/static/htmx-2.0.4.min.js", true},
		{"ebhooks: the signing secret, `whsec_` and base64 ||", false},
		{"a b", false},
		{"it's", false},
		{`say"hi"`, false},
		{"tab\there", false},
		{"new\nline", false},
		{"back\\slash", false},
		{"nbsp\u00a0here", false},
		{"bell\x07", false},
	}
	for _, tt := range tests {
		if got := badInName(tt.name) == ""; got != tt.want {
			t.Errorf("badInName(%q) = %q; want it fine: %v", tt.name, badInName(tt.name), tt.want)
		}
	}
}
