package templates

import (
	"math"
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

// Chart geometry, in SVG user units (the stylesheet scales the SVG to its box).
const (
	chartWidth   = 600
	chartHeight  = 150
	chartTop     = 14 // room for the maximum's label
	chartBuckets = 120
)

// ChartRect is a bar or a hover column, with what its tooltip says.
type ChartRect struct {
	X, Y, W, H float64
	Label      string
}

// Chart is a server-rendered SVG chart of one series: no chart library, values on hover through
// a <title> per bucket.
type Chart struct {
	Metric  string // the CloudWatch metric name
	Title   string
	Kind    ChartKind
	Line    string      // polyline points, for ChartLine
	Bars    []ChartRect // for ChartBars
	Hits    []ChartRect // full-height hover columns, one per bucket with data
	MaxText string      // the top of the scale
	// Latest is the series' newest value and LatestAt its time, for the caption: the same
	// reading as the stats card above the charts, not a bucket's maximum.
	Latest   string
	LatestAt time.Time
	Since    time.Time
	Until    time.Time
	Empty    bool
}

// Width and Height are the viewBox size, for the template.
func (Chart) Width() int { return chartWidth }

// Height is the viewBox height.
func (Chart) Height() int { return chartHeight }

// ViewBox is the chart's viewBox attribute.
func (Chart) ViewBox() string {
	return "0 0 " + strconv.Itoa(chartWidth) + " " + strconv.Itoa(chartHeight)
}

// NewChart lays out a series over [since, until) in at most chartBuckets buckets, so that a week
// of one-minute points stays a light page. format writes a value for the tooltips and the scale.
func NewChart(title string, kind ChartKind, s views.Series, since, until time.Time, format func(float64) string) Chart {
	c := Chart{Metric: s.Name, Title: title, Kind: kind, Since: since, Until: until}
	span := until.Sub(since)
	n := chartBuckets
	if minutes := int(span / time.Minute); minutes > 0 && minutes < n {
		n = minutes
	}
	if span <= 0 || len(s.Points) == 0 {
		c.Empty = true
		return c
	}
	width := span / time.Duration(n)
	vals := make([]float64, n)
	has := make([]bool, n)
	for _, p := range s.Points {
		if p.At.Before(since) || !p.At.Before(until) || math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			continue
		}
		i := int(p.At.Sub(since) / width)
		if i >= n {
			i = n - 1
		}
		switch {
		case !has[i]:
			vals[i] = p.Value
		case kind == ChartBars:
			vals[i] += p.Value
		default:
			vals[i] = math.Max(vals[i], p.Value)
		}
		has[i] = true
	}
	var newest views.Point
	for _, p := range s.Points {
		if !p.At.Before(since) && p.At.Before(until) && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) && !p.At.Before(newest.At) {
			newest = p
		}
	}
	max := 0.0
	last := -1
	for i := range vals {
		if has[i] {
			max = math.Max(max, vals[i])
			last = i
		}
	}
	if last < 0 {
		c.Empty = true
		return c
	}
	c.MaxText = format(max)
	c.Latest, c.LatestAt = format(newest.Value), newest.At
	scale := max
	if scale <= 0 {
		scale = 1
	}
	colW := float64(chartWidth) / float64(n)
	plotH := float64(chartHeight - chartTop)
	var line strings.Builder
	for i := range vals {
		if !has[i] {
			continue
		}
		x := float64(i) * colW
		h := vals[i] / scale * plotH
		y := float64(chartHeight) - h
		label := since.Add(time.Duration(i)*width).UTC().Format("Jan 2 15:04") + " UTC: " + format(vals[i])
		c.Hits = append(c.Hits, ChartRect{X: round1(x), Y: 0, W: round1(colW), H: chartHeight, Label: label})
		if kind == ChartBars {
			c.Bars = append(c.Bars, ChartRect{X: round1(x + colW*0.1), Y: round1(y), W: round1(colW * 0.8), H: round1(h), Label: label})
			continue
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(fmtCoord(x+colW/2) + "," + fmtCoord(y))
	}
	c.Line = line.String()
	return c
}

// Sparkline returns the polyline points of values in a 100×24 box, oldest left; "" for fewer
// than two values. The box is drawn at 100×24 pixels, so whole coordinates lose nothing, and a
// point between two of the same height draws nothing either: both are left out, which keeps the
// thousand sparklines of an overview small on the wire and quick to write.
func Sparkline(values []float64) string {
	if len(values) < 2 {
		return ""
	}
	top := 0.0
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			top = math.Max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	y := func(i int) int64 {
		v := values[i]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			v = 0
		}
		return int64(math.Round(23 - v/top*22))
	}
	b := make([]byte, 0, 6*len(values))
	step := 100.0 / float64(len(values)-1)
	last := len(values) - 1
	for i := range values {
		yi := y(i)
		if i > 0 && i < last && y(i-1) == yi && y(i+1) == yi {
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
	max := 0.0
	for _, v := range values {
		max = math.Max(max, v)
	}
	return "visible messages over the last hour, at most " + Number(max) + ", now " + Number(values[len(values)-1])
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func fmtCoord(f float64) string { return strconv.FormatFloat(round1(f), 'f', -1, 64) }

// Fmt writes an SVG coordinate.
func Fmt(f float64) string { return fmtCoord(f) }
