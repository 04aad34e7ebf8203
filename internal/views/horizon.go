package views

import "time"

// horizon is how long judgements made at one instant stay true. The health rules, the ages and
// the windows the views read compare times with the clock ("data is 50 s old", "gone 3 min
// ago", an error that leaves its window, a sparkline's minute that turns): each comparison tells
// the horizon when its answer or its text would change, and the earliest of those instants is
// when a snapshot must be built again (Snapshot.Until), so that nothing reads fresh or fine after
// it stopped being so.
type horizon struct {
	now   time.Time
	until time.Time // zero: nothing read at now changes with the clock
}

// newHorizon starts a horizon at now.
func newHorizon(now time.Time) *horizon { return &horizon{now: now} }

// change records that what was read at now reads differently from t on.
func (h *horizon) change(t time.Time) {
	if t.After(h.now) && (h.until.IsZero() || t.Before(h.until)) {
		h.until = t
	}
}

// past reports whether now is after t, as now.Sub(x) > d does for t = x+d.
func (h *horizon) past(t time.Time) bool {
	if h.now.After(t) {
		return true
	}
	h.change(t.Add(time.Nanosecond))
	return false
}

// within reports whether now is at or before t, as now.Sub(x) <= d does for t = x+d.
func (h *horizon) within(t time.Time) bool { return !h.past(t) }

// before reports whether now is before t, as now.Sub(x) < d does for t = x+d.
func (h *horizon) before(t time.Time) bool {
	if h.now.Before(t) {
		h.change(t)
		return true
	}
	return false
}

// since is humanDuration(now - t), the text of an age, recorded with the instant at which the
// text changes: the next whole second under a minute, minute under an hour, and so on.
func (h *horizon) since(t time.Time) string {
	d := h.now.Sub(t)
	h.change(h.now.Add(nextDurationStep(d)))
	return humanDuration(d)
}

// nextDurationStep is how much longer than d a duration must be for humanDuration to read
// differently.
func nextDurationStep(d time.Duration) time.Duration {
	if d < 0 {
		return -d + time.Second
	}
	unit := time.Second
	switch {
	case d < time.Minute:
	case d < time.Hour:
		unit = time.Minute
	case d < 48*time.Hour:
		unit = time.Hour
	default:
		unit = 24 * time.Hour
	}
	return (d/unit+1)*unit - d
}
