package choices

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestHint(t *testing.T) {
	t.Parallel()
	var fleet []string
	for i := range 1000 {
		fleet = append(fleet, fmt.Sprintf("tool-calls-%04d", i), fmt.Sprintf("tool-calls-%04d-dlq", i))
	}
	fleet = append(fleet, "orders", "orders-dlq", "web-search-dlq", "tool-calls-dlq.fifo")
	tests := []struct {
		name, given string
		valid       []string
		want        string   // the whole hint, when given
		first       []string // or the closest values it must start with
	}{
		{"none to choose from", "x", nil, "", nil},
		{"few: all of them", "colour", []string{"mcpServer", "tenant"}, "valid: mcpServer, tenant", nil},
		{"a typo", "oders-dlq", fleet, "", []string{"orders-dlq", "orders"}},
		{"a missing suffix", "tool-calls-dlq", fleet, "", []string{"tool-calls-dlq.fifo"}},
		{"case ignored", "WEB-SEARCH-DLQ", fleet, "", []string{"web-search-dlq"}},
		{"a number", "tool-calls-0042", fleet, "", []string{"tool-calls-0042", "tool-calls-0042-dlq"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Hint(tt.given, tt.valid)
			if tt.first == nil {
				if got != tt.want {
					t.Errorf("Hint = %q, want %q", got, tt.want)
				}
				return
			}
			if !strings.HasPrefix(got, "closest: "+strings.Join(tt.first, ", ")) || !strings.HasSuffix(got, fmt.Sprintf("(of %d)", len(tt.valid))) {
				t.Errorf("Hint = %q, want it to start with %v", got, tt.first)
			}
			if n := len(strings.Split(strings.TrimPrefix(got, "closest: "), ", ")); n != Listed {
				t.Errorf("Hint names %d values, want %d", n, Listed)
			}
		})
	}
}

func TestClosestIsBoundedAndDistinct(t *testing.T) {
	t.Parallel()
	got := Closest(strings.Repeat("a", 1<<20), []string{"b", "a", "a", "aa"}, 3)
	if !slices.Equal(got, []string{"aa", "a", "b"}) {
		t.Errorf("Closest = %v", got)
	}
}

func TestErrorWrapsItsSentinel(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("no such dimension")
	err := Wrap(sentinel, "colour", []string{"mcpServer"})
	var ce *Error
	if !errors.Is(err, sentinel) || !errors.As(err, &ce) || ce.Hint != "valid: mcpServer" {
		t.Errorf("Wrap = %v", err)
	}
	if Wrap(sentinel, "colour", nil) != sentinel {
		t.Error("Wrap without values changed the error")
	}
}
