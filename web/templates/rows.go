package templates

import (
	"bytes"
	"context"
	"io"

	"github.com/a-h/templ"
)

// RenderedRow is one queue's overview row rendered once: its class and its cells' HTML, in
// QueueCells' order, as the table's body writes them (RowOf). The overview renders each row of a
// snapshot once for every page and push that shows it; a push compares a page's rows with the
// new ones cell by cell, to send only what changed.
type RenderedRow struct {
	OverviewRow
	Class string
	html  []byte // the cells, one after another
	ends  []int  // where each cell ends in html
}

// RenderRow renders r for a page of nav.
func RenderRow(ctx context.Context, r OverviewRow, nav Nav) (*RenderedRow, error) {
	var buf bytes.Buffer
	cells := QueueCells(r, nav)
	out := &RenderedRow{OverviewRow: r, Class: RowClass(r), ends: make([]int, len(cells))}
	for i, cell := range cells {
		if err := cell(nil).Render(ctx, &buf); err != nil {
			return nil, err
		}
		out.ends[i] = buf.Len()
	}
	out.html = bytes.Clone(buf.Bytes())
	return out, nil
}

// Cell is the HTML of the row's i-th cell.
func (r *RenderedRow) Cell(i int) []byte {
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.html[start:r.ends[i]]
}

// Cells is how many cells the row has.
func (r *RenderedRow) Cells() int { return len(r.ends) }

// Same reports whether two renderings of a row write the same HTML.
func (r *RenderedRow) Same(o *RenderedRow) bool {
	return r == o || (r.ID == o.ID && r.Class == o.Class && bytes.Equal(r.html, o.html))
}

// WithSparkTop is the row with its sparkline drawn to top, a scale it shares with other rows.
func (r *RenderedRow) WithSparkTop(ctx context.Context, top float64, nav Nav) (*RenderedRow, error) {
	row := r.OverviewRow
	row.SparkTop = top
	var spark bytes.Buffer
	if err := QueueCells(row, nav)[SparkCell](nil).Render(ctx, &spark); err != nil {
		return nil, err
	}
	head, tail := r.html[:r.ends[SparkCell-1]], r.html[r.ends[SparkCell]:]
	out := &RenderedRow{OverviewRow: row, Class: r.Class, ends: make([]int, len(r.ends))}
	out.html = append(append(append(make([]byte, 0, len(head)+spark.Len()+len(tail)), head...), spark.Bytes()...), tail...)
	grow := spark.Len() - len(r.Cell(SparkCell))
	for i, end := range r.ends {
		if i >= SparkCell {
			end += grow
		}
		out.ends[i] = end
	}
	return out, nil
}

// CellSwapped is the row's i-th cell rendered to swap that cell alone out of band (CellSwap).
func (r *RenderedRow) CellSwapped(i int, nav Nav) templ.Component {
	return QueueCells(r.OverviewRow, nav)[i](CellSwap(r.ID, i))
}

// cellsHTML writes a rendered row's cells.
func cellsHTML(r *RenderedRow) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := w.Write(r.html)
		return err
	})
}
