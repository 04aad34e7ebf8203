package templates

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 21, 35, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   *time.Time
		want string
	}{
		{"a time, in UTC", &at, "Nov 30 00:21:35 UTC"},
		{"none", nil, "–"},
		{"zero", &time.Time{}, "–"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clock(tt.in); got != tt.want {
				t.Errorf("Clock = %q, want %q", got, tt.want)
			}
		})
	}
}
