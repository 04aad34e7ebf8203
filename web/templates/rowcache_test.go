package templates

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/toolq/toolq/internal/views"
)

// filled sets every field of v, recursively, to a value other than its zero: each pointer to a
// filled value, each slice to one filled element. Unexported fields are left as they are.
func filled(v reflect.Value) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(3)
	case reflect.String:
		v.SetString("warning")
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		filled(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		filled(v.Index(0))
	case reflect.Array:
		for i := range v.Len() {
			filled(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				filled(v.Field(i))
			}
		}
	}
}

// eachChange calls change once for every way of changing v a step at a time: each leaf (a
// number, a string, a flag, a time) altered, each pointer made nil, each slice made longer and
// emptied. change gets the field's path and a function that undoes the change.
func eachChange(v reflect.Value, path string, change func(path string, undo func())) {
	set := func(path string, to reflect.Value) {
		was := reflect.New(v.Type()).Elem()
		was.Set(v)
		v.Set(to)
		change(path, func() { v.Set(was) })
	}
	if v.Type() == timeType {
		set(path, reflect.ValueOf(v.Interface().(time.Time).Add(time.Second)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		set(path, reflect.ValueOf(!v.Bool()).Convert(v.Type()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		set(path, reflect.ValueOf(v.Int()+1).Convert(v.Type()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		set(path, reflect.ValueOf(v.Uint()+1).Convert(v.Type()))
	case reflect.Float32, reflect.Float64:
		set(path, reflect.ValueOf(v.Float()+0.5).Convert(v.Type()))
	case reflect.String:
		set(path, reflect.ValueOf(v.String()+"x").Convert(v.Type()))
	case reflect.Pointer:
		if !v.IsNil() {
			eachChange(v.Elem(), path, change)
			set(path+"=nil", reflect.Zero(v.Type()))
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachChange(v.Index(i), path+"[]", change)
		}
		set(path+" emptied", reflect.MakeSlice(v.Type(), 0, 0))
		set(path+" longer", reflect.Append(v, v.Index(0)))
	case reflect.Array:
		for i := range v.Len() {
			eachChange(v.Index(i), path+"[]", change)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				eachChange(v.Field(i), path+"."+f.Name, change)
			}
		}
	}
}

// TestRowPrintCoversEveryField changes every field of a row and of its links' context, one at a
// time, and wants the row's prints to change each time, but for the fields the prints leave out,
// whose change must then change no rendering: a field a print missed would let the row cache
// serve a stale row. The frame's print and the sparkline's are checked apart: where one of them
// stays, its piece of the rendering must stay too, so that no cell but the sparkline's reads
// the sparkline and the sparkline's reads nothing else.
func TestRowPrintCoversEveryField(t *testing.T) {
	ctx := context.Background()
	var row OverviewRow
	filled(reflect.ValueOf(&row).Elem())
	var nav Nav
	filled(reflect.ValueOf(&nav).Elem())
	pieces := func() (frame rowFrame, spark string) {
		frame, err := renderFrame(ctx, row, nav, true)
		if err != nil {
			t.Fatal(err)
		}
		return frame, renderString(t, QueueCells(row, nav)[SparkCell](nil))
	}
	base := PrintRow(&row, &nav, true)
	baseFrame, baseSpark := pieces()
	rendered := renderString(t, QueueRow(row, nav, true))
	changes, sparkChanges := 0, 0
	check := func(path string, undo func()) {
		changes++
		print := PrintRow(&row, &nav, true)
		frame, spark := pieces()
		if print == base {
			left := false
			for _, name := range unrendered[reflect.TypeFor[views.QueueSummary]()] {
				field := "row.QueueSummary." + name
				left = left || path == field || path == field+"=nil"
			}
			switch {
			case !left:
				t.Errorf("changing %s leaves the row's prints as they were", path)
			case renderString(t, QueueRow(row, nav, true)) != rendered:
				t.Errorf("%s is left out of the prints, yet changing it changes the rendering", path)
			}
		}
		if print.Frame == base.Frame && (!bytes.Equal(frame.head, baseFrame.head) || !bytes.Equal(frame.tail, baseFrame.tail)) {
			t.Errorf("changing %s leaves the frame's print as it was, yet changes the row but for its sparkline", path)
		}
		if print.Spark == base.Spark && spark != baseSpark {
			t.Errorf("changing %s leaves the sparkline's print as it was, yet changes its cell", path)
		}
		if print.Spark != base.Spark {
			sparkChanges++
		}
		undo()
		if PrintRow(&row, &nav, true) != base {
			t.Fatalf("undoing the change of %s did not restore the prints", path)
		}
	}
	eachChange(reflect.ValueOf(&row).Elem(), "row", check)
	eachChange(reflect.ValueOf(&nav).Elem(), "nav", check)
	if PrintRow(&row, &nav, false).Frame == base.Frame {
		t.Error("the out-of-band flag leaves the frame's print as it was")
	}
	// The walk reached the fields that matter most, not just a few: the sparkline's value, its
	// being emptied and made longer, and its scale's top.
	if changes < 60 || sparkChanges != 4 {
		t.Errorf("%d changes tried, %d of the sparkline's; the walk missed fields", changes, sparkChanges)
	}
	// The frame and the sparkline's cell, written one in the other, are the row.
	if got := string(baseFrame.head) + baseSpark + string(baseFrame.tail); got != rendered {
		t.Errorf("the frame around the sparkline's cell is\n%s\nQueueRow renders\n%s", got, rendered)
	}
	// Two equal rows built apart print the same.
	var again OverviewRow
	filled(reflect.ValueOf(&again).Elem())
	if PrintRow(&again, &nav, true) != base {
		t.Error("two equal rows print differently")
	}
}

func renderString(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestRowCacheRendersWhatQueueRowDoes renders rows through the cache as they change and wants
// each time exactly what QueueRow renders.
func TestRowCacheRendersWhatQueueRowDoes(t *testing.T) {
	c := NewRowCache()
	age := 42.0
	row := OverviewRow{QueueSummary: views.QueueSummary{ID: 7, Ref: "calls", Name: "calls", Region: "us-east-1", Visible: 5,
		OldestMessageAgeSeconds: &age, Sparkline: []float64{1, 3, 2},
		Health: views.Health{Status: views.HealthWarning, Reasons: []string{"growing"}}}}
	embed := Nav{Embed: true, EmbedToken: "tok"}
	steps := []struct {
		name string
		edit func(r *OverviewRow)
		nav  Nav
	}{
		{"first rendering", func(r *OverviewRow) {}, Nav{}},
		{"the same again, from the cache", func(r *OverviewRow) {}, Nav{}},
		{"depth changed", func(r *OverviewRow) { r.Visible = 6 }, Nav{}},
		{"sparkline moved on", func(r *OverviewRow) { r.Sparkline = []float64{3, 2, 6} }, Nav{}},
		{"health changed", func(r *OverviewRow) { r.Health = views.Health{Status: views.HealthOK} }, Nav{}},
		{"back to a cached rendering", func(r *OverviewRow) { r.Visible = 5 }, Nav{}},
		{"an embed's links", func(r *OverviewRow) {}, embed},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.edit(&row)
			for _, oob := range []bool{false, true} {
				got, want := renderString(t, c.Row(row, s.nav, oob)), renderString(t, QueueRow(row, s.nav, oob))
				if got != want {
					t.Errorf("oob=%v: cached\n%s\nwant\n%s", oob, got, want)
				}
			}
		})
	}
	if !strings.Contains(renderString(t, c.Row(row, embed, false)), `target="_blank"`) {
		t.Error("the embed's row is the page's: its links do not leave the frame")
	}
	var none *RowCache
	if got, want := renderString(t, none.Row(row, Nav{}, false)), renderString(t, QueueRow(row, Nav{}, false)); got != want {
		t.Error("a nil cache renders otherwise than QueueRow")
	}
}

// TestRowCacheStaysWithinTwoGenerations fills the cache with more distinct rows than a
// generation holds and wants it to keep at most two generations, and the rows of the newest.
func TestRowCacheStaysWithinTwoGenerations(t *testing.T) {
	c := NewRowCache()
	c.Fit(10) // the smallest generation
	for id := range int64(3*minRowCacheLimit + 5) {
		row := OverviewRow{QueueSummary: views.QueueSummary{ID: id, Name: "q", Ref: "q"}}
		renderString(t, c.Row(row, Nav{}, false))
	}
	if n := c.frames.len(); n > 2*minRowCacheLimit {
		t.Errorf("%d renderings kept, want at most %d", n, 2*minRowCacheLimit)
	}
	const last = 3*minRowCacheLimit + 4
	if !c.kept(last, PrintRow(&OverviewRow{QueueSummary: views.QueueSummary{ID: last, Name: "q", Ref: "q"}}, &Nav{}, false)).whole() {
		t.Error("the newest rendering is not kept")
	}
	c.Fit(5000)
	if c.limit != 20000 {
		t.Errorf("limit for 5,000 queues = %d, want 20,000", c.limit)
	}
}

// BenchmarkRowPrint fingerprints one overview row with an hour's sparkline and two pieces of
// advice, as the overview does for each of its rows on every page and push.
func BenchmarkRowPrint(b *testing.B) {
	var row OverviewRow
	filled(reflect.ValueOf(&row).Elem())
	row.Sparkline = make([]float64, 60)
	row.Advice = append(row.Advice, row.Advice[0])
	for b.Loop() {
		PrintRow(&row, &Nav{}, false)
	}
}

// TestRowSetRendersWhatQueueRowDoes prepares a body of rows, some already in the cache, and
// wants each rendering to be QueueRow's, each print RowPrint's, and the table's body to use the
// set only for the rows and links' context it was prepared from.
func TestRowSetRendersWhatQueueRowDoes(t *testing.T) {
	ctx := context.Background()
	c := NewRowCache()
	var rows []OverviewRow
	for id := range int64(25) {
		rows = append(rows, OverviewRow{QueueSummary: views.QueueSummary{ID: id + 1, Ref: "q", Name: "q", Visible: id,
			Sparkline: []float64{float64(id), 1}, Health: views.Health{Status: views.HealthOK}}})
	}
	renderString(t, c.Row(rows[3], Nav{}, false)) // one row already kept
	for _, cache := range []*RowCache{c, nil} {
		set, err := cache.Prepare(ctx, rows, Nav{})
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Render(ctx); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if set.Print(i) != PrintRow(&r, &Nav{}, false) {
				t.Errorf("row %d: print is not PrintRow's", i)
			}
			if got, want := renderString(t, set.row(i)), renderString(t, QueueRow(r, Nav{}, false)); got != want {
				t.Errorf("row %d: prepared\n%s\nwant\n%s", i, got, want)
			}
		}
		p := OverviewProps{Rows: rows, RowCache: cache, RowSet: set}
		if got, want := renderString(t, OverviewRows(p, false)), renderString(t, OverviewRows(OverviewProps{Rows: rows}, false)); got != want {
			t.Error("the body from a prepared set differs from the body rendered row by row")
		}
		// Another slice of the same rows, or an embed's links: the set is not theirs.
		other := slices.Clone(rows)
		other[0].Visible = 99
		p.Rows = other
		if !strings.Contains(renderString(t, OverviewRows(p, false)), ">99<") {
			t.Error("a body of other rows was written from a set prepared for the first")
		}
		p.Rows, p.Nav = rows, Nav{Embed: true, EmbedToken: "tok"}
		if !strings.Contains(renderString(t, OverviewRows(p, false)), `target="_blank"`) {
			t.Error("an embed's body was written from a set prepared for the page's links")
		}
	}
}

// TestPartRendersAgainWhenItsPrintChanges keeps the problem list and wants the kept rendering
// while the problems stay, and a new one as soon as they change.
func TestPartRendersAgainWhenItsPrintChanges(t *testing.T) {
	c := NewRowCache()
	problems := []views.Problem{{Kind: views.ProblemDeadLetter, Severity: views.HealthCritical, Queue: "calls-dlq", Ref: "calls-dlq", Region: "us-east-1", Text: "3 messages"}}
	p := OverviewProps{RowCache: c, Overview: views.Overview{Problems: problems}}
	for _, oob := range []bool{false, true} {
		if got, want := renderString(t, p.attention(oob)), renderString(t, Attention(problems, Nav{}, oob)); got != want {
			t.Errorf("oob=%v: kept\n%s\nwant\n%s", oob, got, want)
		}
	}
	p.Overview.Problems = []views.Problem{problems[0], problems[0]}
	p.Overview.Problems[1].Text = "7 messages"
	if got := renderString(t, p.attention(false)); !strings.Contains(got, "7 messages") {
		t.Errorf("the problems changed, the kept list did not:\n%s", got)
	}
	if got, want := renderString(t, p.attention(true)), renderString(t, Attention(p.Overview.Problems, Nav{}, true)); got != want {
		t.Errorf("after the change, oob: kept\n%s\nwant\n%s", got, want)
	}
}

// TestAttentionPrintCoversEveryField changes every field of a problem and of the links'
// context, one at a time, and wants the problem list's print to change each time.
func TestAttentionPrintCoversEveryField(t *testing.T) {
	var problems []views.Problem
	filled(reflect.ValueOf(&problems).Elem())
	var nav Nav
	filled(reflect.ValueOf(&nav).Elem())
	base := AttentionPrint(problems, nav, true)
	check := func(path string, undo func()) {
		if AttentionPrint(problems, nav, true) == base {
			t.Errorf("changing %s leaves the problem list's print as it was", path)
		}
		undo()
	}
	eachChange(reflect.ValueOf(&problems).Elem(), "problems", check)
	eachChange(reflect.ValueOf(&nav).Elem(), "nav", check)
	if AttentionPrint(problems, nav, false) == base {
		t.Error("the out-of-band flag leaves the print as it was")
	}
}

// BenchmarkQueueRow renders one overview row as the fleet's are: a dead-letter queue with an
// hour's sparkline and a reason, what the overview renders for each row whose numbers changed.
func BenchmarkQueueRow(b *testing.B) {
	ctx := context.Background()
	visible, mrc, age := int64(1), 5, 3540.0
	row := OverviewRow{QueueSummary: views.QueueSummary{ID: 244, Ref: "tool-calls-0121-dlq", Name: "tool-calls-0121-dlq",
		Region: "us-east-1", Account: "default", AccountID: "000000000000", IsDeadLetterQueue: true, DeadLetterKind: views.DeadLetterSQS,
		Visible: visible, InFlight: 2, MaxReceiveCount: &mrc, OldestMessageAgeSeconds: &age, OldestMessageAgeSource: "sample",
		Health: views.Health{Status: views.HealthWarning, Reasons: []string{"1 message in the dead-letter queue"}}}}
	for i := range 60 {
		row.Sparkline = append(row.Sparkline, float64(1+4*(i%3/2)))
	}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := QueueRow(row, Nav{}, false).Render(ctx, &buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}

// BenchmarkSparkCell renders one row's sparkline cell of an hour's varied depths: what a
// minute's turn renders for every row of a busy fleet.
func BenchmarkSparkCell(b *testing.B) {
	ctx := context.Background()
	var row OverviewRow
	for i := range 60 {
		row.Sparkline = append(row.Sparkline, float64(1+4*(i%3/2)+i%7))
	}
	cell := QueueCells(row, Nav{})[SparkCell]
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := cell(nil).Render(ctx, &buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}
