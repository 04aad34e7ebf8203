package templates

import (
	"strconv"

	"github.com/a-h/templ"

	"github.com/toolq/toolq/web/templates/ids"
)

// QueueCell renders one cell of a queue's overview row, with attributes of its own (a push's
// out-of-band swap of the cell alone, see CellSwap; nil in the row).
type QueueCell func(attrs templ.Attributes) templ.Component

// SparkCell is the place of the sparkline's cell among QueueCells: a shared scale redraws it
// alone (RenderedRow.WithSparkTop).
const SparkCell = 7

// QueueCells are the cells of a queue's overview row, in the table's column order: RenderRow
// renders them, and a push compares them one by one to send only those that changed. The cell
// at SparkCell reads the row's Sparkline and SparkTop and nothing else, and no other cell reads
// SparkTop.
func QueueCells(r OverviewRow, nav Nav) []QueueCell {
	return []QueueCell{
		func(a templ.Attributes) templ.Component { return queueNameCell(r, nav, a) },
		func(a templ.Attributes) templ.Component { return queueTypeCell(r, a) },
		func(a templ.Attributes) templ.Component { return queueVisibleCell(r, a) },
		func(a templ.Attributes) templ.Component { return queueCountCell(r.InFlight, a) },
		func(a templ.Attributes) templ.Component { return queueCountCell(r.Delayed, a) },
		func(a templ.Attributes) templ.Component { return queueOldestCell(r, a) },
		func(a templ.Attributes) templ.Component { return queueDLQCell(r, a) },
		func(a templ.Attributes) templ.Component { return queueSparkCell(r, a) },
		func(a templ.Attributes) templ.Component { return queueHealthCell(r, nav, a) },
	}
}

// RowClass is the class of a queue's overview row: its health, and whether it is gone. A push
// that would change it swaps the whole row, not its cells.
func RowClass(r OverviewRow) string {
	class := "health-" + string(r.Health.Status)
	if r.Gone {
		class += " gone"
	}
	return class
}

// CellSwap swaps cell i (QueueCells' order) of queue id's row out of band: htmx replaces the
// row's i-th child with the pushed cell.
func CellSwap(id int64, i int) templ.Attributes {
	return templ.Attributes{"hx-swap-oob": "outerHTML:#" + ids.QueueRow(id) + ">:nth-child(" + strconv.Itoa(i+1) + ")"}
}
