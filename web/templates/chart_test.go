package templates

import (
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/views"
)

func TestNewChart(t *testing.T) {
	since := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	series := func(vals ...float64) views.Series {
		s := views.Series{Name: "m", Points: []views.Point{}}
		for i, v := range vals {
			s.Points = append(s.Points, views.Point{At: since.Add(time.Duration(i) * 30 * time.Second), Value: v})
		}
		return s
	}
	tests := []struct {
		name      string
		kind      ChartKind
		series    views.Series
		empty     bool
		wantMax   string
		wantHits  int
		wantBars  int
		wantPoint int // points in the polyline
	}{
		{"empty", ChartLine, series(), true, "", 0, 0, 0},
		{"bars sum a bucket", ChartBars, series(1, 2, 3, 4), false, "7", 2, 2, 0},
		{"lines keep a bucket's maximum", ChartLine, series(1, 5, 2, 3), false, "5", 2, 0, 2},
		{"points outside the range are left out", ChartLine,
			views.Series{Points: []views.Point{{At: since.Add(-time.Minute), Value: 99}, {At: until, Value: 99}, {At: since, Value: 1}}},
			false, "1", 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChart("t", tt.kind, UnitMessages, tt.series, since, until, Number)
			if c.Empty != tt.empty {
				t.Fatalf("Empty = %v", c.Empty)
			}
			if c.MaxText != tt.wantMax || len(c.Hits) != tt.wantHits || len(c.Bars) != tt.wantBars {
				t.Errorf("max %q hits %d bars %d, want %q %d %d", c.MaxText, len(c.Hits), len(c.Bars), tt.wantMax, tt.wantHits, tt.wantBars)
			}
			if got := len(strings.Fields(c.Line)); got != tt.wantPoint {
				t.Errorf("polyline points = %d, want %d", got, tt.wantPoint)
			}
		})
	}
	t.Run("a week stays light", func(t *testing.T) {
		s := views.Series{}
		start := until.Add(-7 * 24 * time.Hour)
		for at := start; at.Before(until); at = at.Add(time.Minute) {
			s.Points = append(s.Points, views.Point{At: at, Value: 1})
		}
		c := NewChart("t", ChartBars, UnitPerMinute, s, start, until, Number)
		if len(c.Bars) != chartBuckets || c.MaxText != "1" {
			t.Errorf("bars %d max %q, want %d buckets of 84 minutes at 1 a minute", len(c.Bars), c.MaxText, chartBuckets)
		}
	})
}

func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{Duration(45), "45 s"}, {Duration(180), "3 min"}, {Duration(7500), "2 h 5 min"}, {Duration(7200), "2 h"},
		{Duration(90000), "1 d 1 h"}, {Duration(-1), "–"},
		{Count(1234567), "1\u202f234\u202f567"}, {Count(-1000), "-1\u202f000"}, {Count(12), "12"},
		{Number(2.5), "2.5"}, {Number(3), "3"},
		{USD(0.42), "$0.42"}, {USD(0.0012), "$0.0012"},
		{Percent(0.773), "77\u00a0%"},
		{Clip("héllo", 2), "hé…"}, {Clip("ok", 5), "ok"},
		{Sparkline([]float64{1}), ""}, {Sparkline([]float64{0, 2}), "0,23 100,1"},
		{Sparkline([]float64{4, 4, 4, 0, 0, 2, 2}), "0,1 33,1 50,23 67,23 83,12 100,12"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestNavKeepsEmbedParameters(t *testing.T) {
	n := Nav{Embed: true, EmbedToken: "a b&c"}
	got := n.QueueURL("arn:aws:sqs:us-east-1:1:q/x", map[string][]string{"range": {"6h"}}, "messages", "id/1")
	want := "/queues/arn:aws:sqs:us-east-1:1:q%2Fx/messages/id%2F1?embed=1&embed_token=a+b%26c&range=6h"
	if got != want {
		t.Errorf("QueueURL = %q, want %q", got, want)
	}
	if got := (Nav{}).URL("/", map[string][]string{"q": {""}}); got != "/" {
		t.Errorf("empty values kept: %q", got)
	}
}

// TestChartCaptionIsTheNewestReading: the caption beside the stats card shows the series' newest
// value at its time, as the card does, not the maximum of the newest bucket (5 then 1 within a
// minute drew "latest 5" beside "Visible 1").
func TestChartCaptionIsTheNewestReading(t *testing.T) {
	since := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	s := views.Series{Points: []views.Point{
		{At: until.Add(-40 * time.Second), Value: 5},
		{At: until.Add(-25 * time.Second), Value: 1},
	}}
	c := NewChart("Visible", ChartLine, UnitMessages, s, since, until, Number)
	if c.Latest != "1" || !c.LatestAt.Equal(until.Add(-25*time.Second)) || c.MaxText != "5" {
		t.Errorf("latest %q at %v, max %q; want 1 at %v, max 5", c.Latest, c.LatestAt, c.MaxText, until.Add(-25*time.Second))
	}
	// The line ends where its caption says: at the newest reading, not the bucket's maximum.
	vertices := strings.Fields(c.Line)
	_, y, _ := strings.Cut(vertices[len(vertices)-1], ",")
	step, intervals := niceScale(5, UnitMessages)
	if want := fmtCoord(chartHeight - 1/(step*float64(intervals))*chartHeight); y != want {
		t.Errorf("the line ends at y=%s, want %s (the newest reading, 1)", y, want)
	}
	if hover := c.Hits[len(c.Hits)-1].Label; !strings.Contains(hover, ": 1 now, 5 at most") {
		t.Errorf("the last bucket's hover = %q, want it to say the reading and the bucket's maximum", hover)
	}
}

// TestBarChartCaptionIsTheNewestBar: bars of a day are 12-minute buckets of a rate; the caption
// gives the last bar's rate and its bucket, not the newest one-minute datapoint.
func TestBarChartCaptionIsTheNewestBar(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(24 * time.Hour)
	s := views.Series{Points: []views.Point{
		{At: until.Add(-10 * time.Minute), Value: 30},
		{At: until.Add(-time.Minute), Value: 0},
	}}
	c := NewChart("Sent", ChartBars, UnitPerMinute, s, since, until, Number)
	last := c.Bars[len(c.Bars)-1]
	if !strings.HasSuffix(last.Label, ": "+c.Latest) {
		t.Errorf("caption %q, last bar %q: want the bar's value", c.Latest, last.Label)
	}
	if !strings.HasPrefix(last.Label, c.LatestWhen+": ") {
		t.Errorf("caption time %q, last bar %q: want the bar's bucket", c.LatestWhen, last.Label)
	}
	if c.Latest == "0 a minute" {
		t.Errorf("caption %q is the newest datapoint, not the bar", c.Latest)
	}
}
