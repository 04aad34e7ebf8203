package collector

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/store"
)

// The collector's sight: what it knows of each AWS operation in each region (last success, last
// failure and why, a backoff), and of each loop's last cycle per region. It is what the status
// page, the health rules and the summary read to say what cannot be seen, rather than letting
// old data look current.

// opKey names one AWS operation in one region.
type opKey struct{ region, op string }

// Backoff of an operation that keeps failing for a reason retrying will not fix soon: an
// endpoint answering 5xx, or one without the operation. Throttling is the SDK's to handle, and
// a denied call is left to the operator's policy fix (see accessDeniedBackoff).
const (
	// backoffAfter is how many failures in a row (across queues) start a backoff of a 5xx.
	backoffAfter = 3
)

// errBackedOff is returned for a call not made because its operation is backed off.
var errBackedOff = errors.New("collector: operation backed off after repeated failures")

// sight holds the operation statuses. It has its own lock: every AWS call passes through it.
type sight struct {
	mu    sync.Mutex
	ops   map[opKey]*store.OperationStatus
	dirty map[opKey]bool
}

func newSight() *sight {
	return &sight{ops: make(map[opKey]*store.OperationStatus), dirty: make(map[opKey]bool)}
}

// backedOff reports whether op is not to be called in region now.
func (c *Collector) backedOff(region, op string) bool {
	c.sight.mu.Lock()
	defer c.sight.mu.Unlock()
	st := c.sight.ops[opKey{region, op}]
	return st != nil && c.now().Before(st.BackoffUntil)
}

// observe records the outcome of one call of op in region, and backs the operation off when it
// keeps failing: 5xx from the third failure in a row with no success for an attribute interval,
// "unsupported" at once, each time for twice as long, from the attribute interval up to the
// discovery interval.
func (c *Collector) observe(region, op string, err error, f awscalls.Failure) {
	if f.Outcome == awscalls.Canceled {
		return
	}
	now := c.now()
	c.sight.mu.Lock()
	defer c.sight.mu.Unlock()
	k := opKey{region, op}
	st := c.sight.ops[k]
	if st == nil {
		st = &store.OperationStatus{Region: region, Operation: op}
		c.sight.ops[k] = st
	}
	c.sight.dirty[k] = true
	if err == nil {
		st.LastSuccessAt = now
		st.FailuresInRow = 0
		st.BackoffUntil = time.Time{}
		return
	}
	st.LastFailureAt = now
	st.FailureCode, st.FailureMessage, st.FailureStatus = f.Code, f.Message, f.HTTPStatus
	st.FailuresInRow++
	if op == opChangeMessageVisibilityBatch {
		return // handing sampled messages back is never skipped
	}
	n := 0
	switch {
	case awscalls.Unsupported(err):
		n = st.FailuresInRow
	case f.Outcome == awscalls.ServerError && st.FailuresInRow >= backoffAfter &&
		now.Sub(st.LastSuccessAt) >= c.opts.AttributesInterval:
		// Failing for a cycle's length with no success between: an endpoint that answers
		// some calls is degraded, not down, and each queue's own failure is recorded.
		n = st.FailuresInRow - backoffAfter + 1
	default:
		return
	}
	wait := c.opts.AttributesInterval
	for i := 1; i < n && wait < c.opts.DiscoveryInterval; i++ {
		wait *= 2
	}
	st.BackoffUntil = now.Add(min(wait, c.opts.DiscoveryInterval))
}

// failing reports whether op's newest call in region failed, and how.
func (c *Collector) failing(region, op string) (store.OperationStatus, bool) {
	c.sight.mu.Lock()
	defer c.sight.mu.Unlock()
	st := c.sight.ops[opKey{region, op}]
	if st == nil || !st.Failing() {
		return store.OperationStatus{}, false
	}
	return *st, true
}

// saveSight writes the operation statuses that changed since the last save.
func (c *Collector) saveSight(ctx context.Context) {
	c.sight.mu.Lock()
	changed := make([]store.OperationStatus, 0, len(c.sight.dirty))
	for k := range c.sight.dirty {
		changed = append(changed, *c.sight.ops[k])
	}
	clear(c.sight.dirty)
	c.sight.mu.Unlock()
	if err := c.store.SaveOperationStatuses(ctx, changed); err != nil {
		c.warn(ctx, "collector: save operation statuses", "err", err)
		c.sight.mu.Lock()
		for _, st := range changed {
			c.sight.dirty[opKey{st.Region, st.Operation}] = true
		}
		c.sight.mu.Unlock()
	}
}

// resumeSight loads the statuses an earlier run stored, so that a restart keeps the last
// success of each operation (and its backoff) rather than starting blind of its own history,
// and forgets those of scopes it no longer watches.
func (c *Collector) resumeSight(ctx context.Context) {
	// What the store says of scopes this collector does not watch (any more) is nobody's to
	// keep current: it would stay on /status, a failure among it as a region nobody can see.
	scopes := c.regionKeys()
	if n, err := c.store.ForgetScopesExcept(ctx, scopes); err != nil {
		c.warn(ctx, "collector: forget unwatched scopes", "err", err)
	} else if n > 0 {
		c.log.Info("collector: forgot the statuses of scopes no longer watched", "rows", n, "watched", scopes)
	}
	stored, err := c.store.OperationStatuses(ctx)
	if err != nil {
		c.warn(ctx, "collector: load operation statuses", "err", err)
		return
	}
	c.sight.mu.Lock()
	defer c.sight.mu.Unlock()
	for _, st := range stored {
		k := opKey{st.Region, st.Operation}
		if _, known := c.sight.ops[k]; !known {
			st := st
			c.sight.ops[k] = &st
		}
	}
}

// regionTally is what one cycle did in one region.
type regionTally struct {
	queues, failedQueues int
	calls, failures      int
	// blind: the cycle could not do its job in the region at all (a failed listing).
	blind bool
}

// succeeded reports whether the cycle read what it was for in the region: it was not blind, not
// every one of its queues failed, and not every call failed.
func (t regionTally) succeeded() bool {
	return !t.blind && (t.queues == 0 || t.failedQueues < t.queues) && (t.calls == 0 || t.failures < t.calls)
}

// tally returns the cycle's tally of a region, creating it; callers hold cy.mu.
func (cy *cycle) tally(region string) *regionTally {
	if cy.regions == nil {
		cy.regions = make(map[string]*regionTally)
	}
	t := cy.regions[region]
	if t == nil {
		t = &regionTally{}
		cy.regions[region] = t
	}
	return t
}

// cover declares that the cycle is about n queues of region (n may be 0: the region is covered
// and had nothing to read).
func (cy *cycle) cover(region string, n int) {
	cy.mu.Lock()
	defer cy.mu.Unlock()
	cy.tally(region).queues += n
}

// queueFailed records that the cycle could not read one queue of region.
func (cy *cycle) queueFailed(region string) {
	cy.mu.Lock()
	defer cy.mu.Unlock()
	cy.tally(region).failedQueues++
}

// markBlind records that the cycle could not do its job in region (a failed listing).
func (cy *cycle) markBlind(region string) {
	cy.mu.Lock()
	defer cy.mu.Unlock()
	cy.tally(region).blind = true
}

// countCall counts one call of the cycle in region.
func (cy *cycle) countCall(region string, failed bool) {
	cy.mu.Lock()
	defer cy.mu.Unlock()
	t := cy.tally(region)
	t.calls++
	if failed {
		t.failures++
	}
}

// saveLoops records the cycle's outcome in each region it covered, and the gauge of each
// region's last success.
func (c *Collector) saveLoops(ctx context.Context, cy *cycle, end time.Time) {
	cy.mu.Lock()
	tallies := make(map[string]regionTally, len(cy.regions))
	for r, t := range cy.regions {
		tallies[r] = *t
	}
	cy.mu.Unlock()
	for region, t := range tallies {
		l := store.LoopStatus{
			Loop: cy.kind, Region: region, FinishedAt: end,
			Queues: t.queues, FailedQueues: t.failedQueues, Calls: t.calls, Failures: t.failures,
		}
		if t.succeeded() {
			l.LastSuccessAt = end
		}
		c.tel.loopDone(cy.kind, region, t.succeeded(), end)
		if err := c.store.SaveLoopStatus(ctx, l); err != nil {
			c.warn(ctx, "collector: save loop status", "loop", cy.kind, "region", region, "err", err)
		}
	}
}
