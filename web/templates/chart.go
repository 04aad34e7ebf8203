package templates

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/views"
)

// ChartKind says how a series is drawn: gauges as lines (a bucket keeps its maximum), counts as
// bars (a bucket sums its points).
type ChartKind int

// Chart kinds.
const (
	ChartLine ChartKind = iota
	ChartBars
)

// Chart geometry, in SVG user units (the stylesheet scales the SVG to its box; the axis labels
// are HTML beside it, so that text never stretches with the plot).
const (
	chartWidth   = 600
	chartHeight  = 150
	chartBuckets = 120
	// chartMinSpan is the narrowest range a chart fits to when its history is shorter than the
	// range asked for.
	chartMinSpan = 10 * time.Minute
	// chartTimeTicks is how many times the x axis labels, first and last included.
	chartTimeTicks = 5
)

// Units of the charts' y axes.
const (
	UnitMessages  = "messages"
	UnitPerMinute = "messages/min"
	UnitSeconds   = "seconds"
)

// ChartRect is a bar or a hover column, with what its tooltip says.
type ChartRect struct {
	X, Y, W, H float64
	Label      string
	// From and To are the bucket's time, [From, To), set on the hover columns: a push may lay
	// the buckets out anew (a young queue's chart widens each minute), and the page finds the
	// bucket a reader stepped to by its time (web/static/app.js).
	From, To time.Time
}

// ChartTick is one label of an axis; At is set on the time axis.
type ChartTick struct {
	Label string
	At    time.Time
}

// ChartMark is a redrive drawn over a chart: a band from its start to its end (the chart's
// right edge while it runs), with what it moved.
type ChartMark struct {
	X1, X2  float64
	Label   string
	Running bool
}

// Chart is a server-rendered SVG chart of one series: no chart library; a y axis with its unit,
// gridlines, time ticks, redrive markers, and each bucket's value in a <title> and in the
// readout that app.js fills on hover and on keyboard focus.
type Chart struct {
	Metric string // the CloudWatch metric name, or a series the views derive (views.Series*)
	Title  string
	Kind   ChartKind
	// Unit is what the y axis counts: "messages", "messages/min", "seconds". Bars are per
	// minute whatever the bucket: a bucket's sum divided by its minutes.
	Unit    string
	Line    string      // polyline points, for ChartLine
	Bars    []ChartRect // for ChartBars
	Hits    []ChartRect // full-height hover columns, one per bucket with data
	MaxText string      // the largest bucket's value
	// YTicks label the gridlines from the top of the scale down to 0; Grid are their y
	// coordinates, the same order.
	YTicks []ChartTick
	Grid   []float64
	XTicks []ChartTick
	Marks  []ChartMark
	// Latest is what the chart's newest point shows and LatestWhen when, for the caption. A
	// line ends at the series' newest reading (LatestAt), the same reading as the stats card
	// above the charts, not the maximum of the newest bucket; bars end at the newest bucket's
	// rate, and LatestWhen names the bucket.
	Latest     string
	LatestAt   time.Time
	LatestWhen string
	Since      time.Time
	Until      time.Time
	// Fitted says the chart covers less than the range asked for, which started at
	// RangeSince: the history is shorter.
	Fitted     bool
	RangeSince time.Time
	Empty      bool
}

// Width and Height are the viewBox size, for the template.
func (Chart) Width() int { return chartWidth }

// Height is the viewBox height.
func (Chart) Height() int { return chartHeight }

// ViewBox is the chart's viewBox attribute.
func (Chart) ViewBox() string {
	return "0 0 " + strconv.Itoa(chartWidth) + " " + strconv.Itoa(chartHeight)
}

// FitRange narrows [since, until) to the history the series hold when it is shorter, so that a
// new queue's first minutes fill the chart rather than a strip at its right edge. The range
// starts at the earliest point's minute, and spans chartMinSpan at least.
func FitRange(since, until time.Time, series ...views.Series) (time.Time, bool) {
	var first time.Time
	for _, s := range series {
		for _, p := range s.Points {
			if !p.At.Before(since) && p.At.Before(until) && (first.IsZero() || p.At.Before(first)) {
				first = p.At
			}
		}
	}
	if first.IsZero() {
		return since, false
	}
	fit := first.Truncate(time.Minute)
	if latest := until.Add(-chartMinSpan); fit.After(latest) {
		fit = latest
	}
	if !fit.After(since) {
		return since, false
	}
	return fit, true
}

// NewChart lays out a series over [since, until) in at most chartBuckets buckets, so that a week
// of one-minute points stays a light page. format writes a value for the tooltips and the scale;
// unit is what the y axis counts.
func NewChart(title string, kind ChartKind, unit string, s views.Series, since, until time.Time, format func(float64) string) Chart {
	c := Chart{Metric: s.Name, Title: title, Kind: kind, Unit: unit, Since: since, Until: until}
	b, ok := bucketSeries(kind, s, since, until)
	if !ok {
		c.Empty = true
		return c
	}
	c.MaxText = format(b.max)
	lastMax := c.caption(&b, newestPoint(s, since, until), format)
	scale := c.yAxis(b.max, format)
	c.XTicks = timeTicks(since, until)
	c.plot(&b, scale, lastMax, format)
	return c
}

// chartSeries is a series laid out in a chart's buckets: each bucket's maximum (a line) or its
// sum per minute (bars), whether it has a point, the largest bucket and the newest with a point.
type chartSeries struct {
	since, until time.Time
	width        time.Duration // of a bucket
	vals         []float64
	has          []bool
	max          float64
	last         int
}

// bucketSeries lays out the points of s in [since, until) in at most chartBuckets buckets, one
// a minute at most; ok is false when no bucket has a point.
func bucketSeries(kind ChartKind, s views.Series, since, until time.Time) (b chartSeries, ok bool) {
	span := until.Sub(since)
	n := chartBuckets
	if minutes := int(span / time.Minute); minutes > 0 && minutes < n {
		n = minutes
	}
	if span <= 0 || len(s.Points) == 0 {
		return chartSeries{}, false
	}
	b = chartSeries{since: since, until: until, width: span / time.Duration(n), vals: make([]float64, n), has: make([]bool, n), last: -1}
	for _, p := range s.Points {
		if !inChart(p, since, until) {
			continue
		}
		i := min(int(p.At.Sub(since)/b.width), n-1)
		switch {
		case !b.has[i]:
			b.vals[i] = p.Value
		case kind == ChartBars:
			b.vals[i] += p.Value
		default:
			b.vals[i] = math.Max(b.vals[i], p.Value)
		}
		b.has[i] = true
	}
	if kind == ChartBars {
		// Per minute, so that a day's 12-minute buckets read like an hour's one-minute ones.
		perMinute := b.width.Minutes()
		for i := range b.vals {
			b.vals[i] /= perMinute
		}
	}
	for i := range b.vals {
		if b.has[i] {
			b.max = math.Max(b.max, b.vals[i])
			b.last = i
		}
	}
	return b, b.last >= 0
}

// inChart reports whether a point is drawn on a chart of [since, until): within it, a number.
func inChart(p views.Point, since, until time.Time) bool {
	return !p.At.Before(since) && p.At.Before(until) && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0)
}

// newestPoint is the newest point of s drawn on a chart of [since, until).
func newestPoint(s views.Series, since, until time.Time) views.Point {
	var newest views.Point
	for _, p := range s.Points {
		if inChart(p, since, until) && !p.At.Before(newest.At) {
			newest = p
		}
	}
	return newest
}

// label names bucket i's time: its start, or its start and end when it spans more than a minute.
func (b *chartSeries) label(i int) string {
	stamp := "15:04"
	if b.until.Sub(b.since) > 24*time.Hour {
		stamp = "Jan 2 15:04"
	}
	at := b.since.Add(time.Duration(i) * b.width).UTC()
	if b.width > time.Minute {
		return at.Format(stamp) + "–" + at.Add(b.width).Format("15:04") + " UTC"
	}
	return at.Format(stamp) + " UTC"
}

// caption says what the end of the chart shows and returns the newest bucket's own value. A
// line's newest bucket is drawn at the newest reading (its hover says the bucket's maximum beside
// it), so that the line, its caption and the stats card agree; a bar is its bucket's rate.
func (c *Chart) caption(b *chartSeries, newest views.Point, format func(float64) string) (lastMax float64) {
	lastMax = b.vals[b.last]
	if c.Kind == ChartBars {
		c.Latest, c.LatestAt, c.LatestWhen = format(lastMax)+" a minute", b.since.Add(time.Duration(b.last)*b.width), b.label(b.last)
		return lastMax
	}
	b.vals[b.last] = newest.Value
	c.Latest, c.LatestAt, c.LatestWhen = format(newest.Value), newest.At, newest.At.UTC().Format("15:04:05 UTC")
	return lastMax
}

// yAxis lays out the y axis's ticks and gridlines over a nice scale from 0 past max, and
// returns the scale's top.
func (c *Chart) yAxis(max float64, format func(float64) string) float64 {
	step, intervals := niceScale(max, c.Unit)
	scale := step * float64(intervals)
	for k := intervals; k >= 0; k-- {
		v := step * float64(k)
		c.YTicks = append(c.YTicks, ChartTick{Label: format(v)})
		c.Grid = append(c.Grid, round1(float64(chartHeight)-v/scale*float64(chartHeight)))
	}
	return scale
}

// plot draws each bucket with a point: a hover column with its tooltip, and a bar or a vertex of
// the line, against the scale's top.
func (c *Chart) plot(b *chartSeries, scale, lastMax float64, format func(float64) string) {
	colW := float64(chartWidth) / float64(len(b.vals))
	var line strings.Builder
	for i, v := range b.vals {
		if !b.has[i] {
			continue
		}
		x := float64(i) * colW
		h := v / scale * float64(chartHeight)
		y := float64(chartHeight) - h
		label := b.label(i) + ": " + format(v)
		switch {
		case c.Kind == ChartBars:
			label += " a minute"
		case i == b.last && lastMax != v:
			label += " now, " + format(lastMax) + " at most"
		}
		from := b.since.Add(time.Duration(i) * b.width)
		c.Hits = append(c.Hits, ChartRect{X: round1(x), Y: 0, W: round1(colW), H: chartHeight, Label: label, From: from, To: from.Add(b.width)})
		if c.Kind == ChartBars {
			c.Bars = append(c.Bars, ChartRect{X: round1(x + colW*0.1), Y: round1(y), W: round1(colW * 0.8), H: round1(h), Label: label})
			continue
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(fmtCoord(x+colW/2) + "," + fmtCoord(y))
	}
	c.Line = line.String()
}

// WithMarks draws redrives over the chart: each one that overlaps its range, clipped to it.
func (c Chart) WithMarks(marks []views.RedriveMark, now time.Time) Chart {
	if c.Empty {
		return c
	}
	span := c.Until.Sub(c.Since)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(c.Since)) / float64(span)
		return round1(math.Min(math.Max(f, 0), 1) * chartWidth)
	}
	for _, m := range marks {
		end := c.Until
		if m.EndedAt != nil {
			end = *m.EndedAt
		}
		if !m.StartedAt.Before(c.Until) || end.Before(c.Since) {
			continue
		}
		label := "Redrive " + m.StartedAt.UTC().Format("15:04:05")
		if m.EndedAt != nil {
			label += "–" + m.EndedAt.UTC().Format("15:04:05") + " UTC"
		} else {
			label += " UTC, running"
		}
		label += ": moved " + Count(m.Moved) + " (" + strings.ToLower(m.Status) + ")"
		x1, x2 := x(m.StartedAt), x(end)
		if x2-x1 < 2 {
			x2 = math.Min(x1+2, chartWidth)
		}
		c.Marks = append(c.Marks, ChartMark{X1: x1, X2: x2, Label: label, Running: m.EndedAt == nil})
	}
	return c
}

// AriaLabel sums the chart up for screen readers.
func (c Chart) AriaLabel() string {
	s := c.Title
	if c.Unit != "" {
		s += " (" + c.Unit + ")"
	}
	s += ": newest " + c.Latest + ", max " + c.MaxText + ", " + c.Since.UTC().Format("15:04") + " to " + c.Until.UTC().Format("15:04 UTC")
	if len(c.Marks) > 0 {
		s += "; " + strconv.Itoa(len(c.Marks)) + " redrive markers"
	}
	return s + ". Use the arrow keys for each bucket's value."
}

// niceScale picks the step of the y axis' gridlines and how many of them the largest value
// needs (1 to 4): steps of 1, 2 or 5 times a power of ten, whole numbers of messages on gauges,
// and steps a clock reads (15 s, 1 min, 5 min, 1 h…) for seconds.
func niceScale(top float64, unit string) (step float64, intervals int) {
	if top <= 0 || math.IsNaN(top) {
		return 1, 1
	}
	raw := top / 4
	if unit == UnitSeconds {
		step = 86400 * math.Ceil(raw/86400)
		for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
			if s >= raw {
				step = s
				break
			}
		}
	} else {
		mag := math.Pow(10, math.Floor(math.Log10(raw)))
		step = 10 * mag
		for _, m := range []float64{1, 2, 5, 10} {
			if m*mag >= raw {
				step = m * mag
				break
			}
		}
		if unit == UnitMessages && step < 1 {
			step = 1
		}
	}
	intervals = int(math.Ceil(top/step - 1e-9))
	return step, min(max(intervals, 1), 4)
}

// timeTicks labels the time axis at chartTimeTicks even steps, so that the labels sit over
// their gridlines when laid out with equal space between them.
func timeTicks(since, until time.Time) []ChartTick {
	span := until.Sub(since)
	stamp := "15:04"
	if span > 24*time.Hour {
		stamp = "Jan 2 15:04"
	}
	out := make([]ChartTick, chartTimeTicks)
	for k := range out {
		at := since.Add(span * time.Duration(k) / (chartTimeTicks - 1)).UTC()
		out[k] = ChartTick{Label: at.Format(stamp), At: at}
	}
	out[len(out)-1].Label += " UTC"
	return out
}

// Sparkline returns the polyline points of values in a 100×24 box, oldest left; "" for fewer
// than two values. The box is drawn at 100×24 pixels, so whole coordinates lose nothing, and a
// point between two of the same height draws nothing either: both are left out, which keeps the
// thousand sparklines of an overview small on the wire and quick to write.
func Sparkline(values []float64) string { return SparklineTo(values, 0) }

// SparklineTo is Sparkline on a scale whose top is top (the largest of several sparklines drawn
// to one scale); 0 scales the sparkline to its own largest value.
func SparklineTo(values []float64, top float64) string {
	if len(values) < 2 {
		return ""
	}
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			top = max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	// Each point's height once (a thousand sparklines are drawn at every minute's turn): in a
	// buffer on the stack for an hour's sixty points.
	var heights [views.SparklinePoints]int64
	ys := heights[:0]
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			v = 0
		}
		ys = append(ys, int64(math.Round(23-v/top*22)))
	}
	b := make([]byte, 0, 6*len(values))
	step := 100.0 / float64(len(values)-1)
	last := len(values) - 1
	for i, yi := range ys {
		if i > 0 && i < last && ys[i-1] == yi && ys[i+1] == yi {
			continue
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(math.Round(float64(i)*step)), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, yi, 10)
	}
	return string(b)
}

// SparklineLabel describes a sparkline for screen readers.
func SparklineLabel(values []float64) string {
	if len(values) == 0 {
		return "no depth history yet"
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	return "visible messages over the last hour, at most " + Number(top) + ", now " + Number(values[len(values)-1])
}

// SparkRange writes a sparkline's least and largest values ("0–12"), as a reader compares rows.
func SparkRange(values []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return ""
	}
	if lo == hi {
		return Number(hi)
	}
	return Number(lo) + "–" + Number(hi)
}

// SparkValues writes a sparkline's values as its cell carries them (data-v): space-separated,
// as few digits as tell them apart.
func SparkValues(values []float64) string {
	b := make([]byte, 0, 3*len(values))
	for i, v := range values {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return string(b)
}

// SparkShift is how one row's sparkline moved on between two pushes: its values become the old
// ones without the first Drop and the last Cut, followed by Points (a minute's turn drops the
// hour's first minute; a sample of a new minute adds a point; a sample of the minute under way
// replaces the last).
type SparkShift struct {
	ID        int64
	Drop, Cut int
	Points    []float64
}

// maxShift bounds what a shift may carry: more, and the push sends the cell.
const maxShift = 3

// ShiftOf returns how the sparkline before becomes after by dropping at most maxShift points
// at its start and cutting at most one at its end, then adding at most maxShift points; false
// when it cannot, or when either has fewer than two points (the cell then says "–").
func ShiftOf(before, after []float64) (drop, cut int, points []float64, ok bool) {
	if len(before) < 2 || len(after) < 2 {
		return 0, 0, nil, false
	}
	for drop = 0; drop <= maxShift && drop < len(before); drop++ {
		for cut = 0; cut <= 1 && drop+cut < len(before); cut++ {
			kept := before[drop : len(before)-cut]
			if len(kept) > len(after) || len(after)-len(kept) > maxShift || !slices.Equal(kept, after[:len(kept)]) {
				continue
			}
			return drop, cut, after[len(kept):], true
		}
	}
	return 0, 0, nil, false
}

// SparkShiftsText writes shifts as SparkPoints carries them: "ID DROP CUT POINT…" each, joined
// by ";".
func SparkShiftsText(shifts []SparkShift) string {
	var b []byte
	for i, sh := range shifts {
		if i > 0 {
			b = append(b, ';')
		}
		b = strconv.AppendInt(b, sh.ID, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(sh.Drop), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(sh.Cut), 10)
		for _, v := range sh.Points {
			b = append(b, ' ')
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
		}
	}
	return string(b)
}

// SparkTop is the largest value of every row's sparkline: the top of their shared scale.
func SparkTop(rows []*RenderedRow) float64 {
	top := 0.0
	for _, r := range rows {
		for _, v := range r.Sparkline {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = max(top, v)
			}
		}
	}
	return top
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func fmtCoord(f float64) string { return strconv.FormatFloat(round1(f), 'f', -1, 64) }

// Fmt writes an SVG coordinate.
func Fmt(f float64) string { return fmtCoord(f) }
