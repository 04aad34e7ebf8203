package collector

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// cycle is one recorded pass of one loop: its store run, and the calls and errors it counts,
// in all and per region.
type cycle struct {
	kind    string
	runID   int64
	started time.Time
	calls   atomic.Int64
	errors  atomic.Int64
	queues  atomic.Int64

	mu      sync.Mutex
	regions map[string]*regionTally // by region name
}

// startCycle records the start of a pass. A store failure is logged, not fatal: the pass still
// collects, it only lacks its run row.
func (c *Collector) startCycle(ctx context.Context, kind string) *cycle {
	cy := &cycle{kind: kind, started: c.now()}
	id, err := c.store.StartRun(ctx, kind, cy.started)
	if err != nil {
		c.warn(ctx, "collector: start run", "kind", kind, "err", err)
	}
	cy.runID = id
	return cy
}

// finish records the end of a pass: its run row, its outcome per region, the operation statuses
// it changed, and its telemetry.
func (c *Collector) finish(ctx context.Context, cy *cycle) {
	end := c.now()
	c.tel.cycles.WithLabelValues(cy.kind).Inc()
	c.tel.cycleSeconds.WithLabelValues(cy.kind).Observe(end.Sub(cy.started).Seconds())
	// Written even when the cycle was cancelled, so that no pass is left open.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c.saveSight(ctx)
	c.saveLoops(ctx, cy, end)
	if cy.runID == 0 {
		return
	}
	err := c.store.FinishRun(ctx, store.CollectorRun{
		ID:         cy.runID,
		Kind:       cy.kind,
		StartedAt:  cy.started,
		FinishedAt: end,
		Queues:     int(cy.queues.Load()),
		Calls:      int(cy.calls.Load()),
		Errors:     int(cy.errors.Load()),
	})
	if err != nil {
		c.warn(ctx, "collector: finish run", "kind", cy.kind, "err", err)
	}
}

// call makes one AWS call of op in region r through fn, counts it, records its outcome in the
// collector's sight and, when it fails, records the error against the queue (nil when the call
// is about no single queue) and returns it. A call of an operation that is backed off is not
// made: it returns errBackedOff. A quiet filter that returns true for the error keeps it out of
// the error log (an expected answer, or one already recorded).
func (c *Collector) call(ctx context.Context, cy *cycle, r *region, op string, q *watchedQueue, fn func(context.Context) error, quiet ...func(error) bool) error {
	if op != opChangeMessageVisibilityBatch && c.backedOff(r.key, op) {
		c.tel.awsCalls.Add(op, awscalls.Skipped)
		cy.countCall(r.key, true)
		cy.errors.Add(1)
		return errBackedOff
	}
	cy.calls.Add(1)
	budget := c.budget(cy.kind)
	select {
	case budget <- struct{}{}:
	case <-ctx.Done():
		c.tel.awsCalls.Add(op, awscalls.Canceled)
		return ctx.Err()
	}
	err := fn(ctx)
	<-budget
	f := awscalls.Describe(err)
	c.tel.awsCalls.Add(op, f.Outcome)
	if err != nil && ctx.Err() != nil {
		// Shutting down: not an AWS failure worth a row.
		return err
	}
	c.observe(r.key, op, err, f)
	cy.countCall(r.key, err != nil)
	if err == nil {
		return nil
	}
	for _, quiet := range quiet {
		if quiet(err) {
			cy.errors.Add(1)
			return err
		}
	}
	c.recordErrorIn(ctx, cy, r, op, q, f.Code, f.Message)
	return err
}

// budget returns the semaphore of a loop's AWS calls in flight (Collector.budgets), by the kind
// of its cycles.
func (c *Collector) budget(kind string) chan struct{} {
	if b, ok := c.budgets[kind]; ok {
		return b
	}
	return c.budgets[store.RunAttributes]
}

// errorRepeat is how often the same failure (queue, operation, code) is stored. A policy that
// denies GetQueueAttributes on a thousand queues would otherwise add four thousand rows a
// minute; the run rows still count every failure.
const errorRepeat = time.Minute

// errorKey identifies a kind of failure for errorRepeat, on the queue or the collector that
// remembers it.
type errorKey struct{ op, code, scope string }

// failureMemory is when each kind of failure was last stored.
type failureMemory map[errorKey]time.Time

// repeat reports whether a failure of kind k at `at` repeats one stored less than errorRepeat
// before; if not, it remembers k as stored at `at`.
func (m failureMemory) repeat(k errorKey, at time.Time) bool {
	if last, seen := m[k]; seen && at.Sub(last) < errorRepeat {
		return true
	}
	m[k] = at
	return false
}

// expire forgets the failures stored errorRepeat or longer before now: the next one of the same
// kind is stored whether it is remembered or not.
func (m failureMemory) expire(now time.Time) {
	maps.DeleteFunc(m, func(_ errorKey, last time.Time) bool { return now.Sub(last) >= errorRepeat })
}

// recordError stores one failed call (or other per-queue failure) of a cycle.
func (c *Collector) recordError(ctx context.Context, cy *cycle, op string, q *watchedQueue, code, msg string) {
	c.recordErrorIn(ctx, cy, nil, op, q, code, msg)
}

// recordErrorIn is recordError of a call made in r (nil: none in particular). A failure about
// no single queue is remembered per scope, and says its scope when there are several: two
// accounts (or regions) failing alike are two failures, not one repeated.
func (c *Collector) recordErrorIn(ctx context.Context, cy *cycle, r *region, op string, q *watchedQueue, code, msg string) {
	cy.errors.Add(1)
	k := errorKey{op: op, code: code}
	if q == nil && r != nil {
		k.scope = r.key
		if len(c.regions) > 1 {
			msg = safetext.Store(r.key+": "+msg, awscalls.MaxMessage)
		}
	}
	e := store.CollectorError{RunID: cy.runID, Operation: op, Code: code, Message: msg, At: c.now()}
	var queue string
	var repeat bool
	if q != nil {
		e.QueueID = q.id
		queue = q.name
		repeat = q.failedAgain(k, e.At)
	} else {
		c.mu.Lock()
		repeat = c.recorded.repeat(k, e.At)
		c.mu.Unlock()
	}
	if repeat {
		c.log.Debug("collector: call failed again", "op", op, "queue", queue, "code", code)
		return
	}
	c.log.Warn("collector: call failed", "op", op, "queue", queue, "code", code, "err", msg)
	if err := c.store.RecordError(ctx, e); err != nil {
		c.warn(ctx, "collector: record error", "err", err)
	}
}

// storeFailed records a failed store write of a cycle, except once ctx has ended: a shutdown
// cancels the writes in flight, which is neither an error of the queue nor worth a row.
func (c *Collector) storeFailed(ctx context.Context, cy *cycle, op string, q *watchedQueue, err error) {
	if ctx.Err() != nil {
		return
	}
	c.recordError(ctx, cy, op, q, "store", safeMessage(err))
}

// recoverQueue turns a panic in one queue's task into a recorded error. Hostile input (a body,
// an attribute) must never take the collector down, and the other queues must go on.
func (c *Collector) recoverQueue(ctx context.Context, cy *cycle, q *watchedQueue) {
	p := recover()
	if p == nil {
		return
	}
	c.log.Error("collector: queue task panicked", "kind", cy.kind, "queue", q.name, "panic", p, "stack", string(debug.Stack()))
	c.recordError(context.WithoutCancel(ctx), cy, cy.kind, q, "panic", safetext.Store(fmt.Sprint(p), awscalls.MaxMessage))
}

// safeMessage is the text of err fit for storage and display (awscalls.Describe).
func safeMessage(err error) string { return awscalls.Describe(err).Message }

// skipKey names an operation not to call again for a while: in a whole region, or on one
// queue, which then holds the skip itself (watchedQueue.skips) so that it goes with the queue.
type skipKey struct {
	region string
	op     string
	queue  *watchedQueue // nil: the whole region
}

// accessDeniedBackoff is how long an operation refused with AccessDenied is left alone: the
// operator may fix the policy, but asking every cycle would flood the error log.
const accessDeniedBackoff = time.Hour

// forever marks an operation the endpoint does not have: it is not asked again by this process.
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// skipMemory holds, for each operation (by K), the time before which it is not to be called.
type skipMemory[K comparable] map[K]time.Time

// active reports whether k is not to be called at now.
func (m skipMemory[K]) active(k K, now time.Time) bool {
	until, ok := m[k]
	return ok && now.Before(until)
}

// claim marks k as not to be called before until, and reports whether it was not marked at now
// already.
func (m skipMemory[K]) claim(k K, until, now time.Time) bool {
	if m.active(k, now) {
		return false
	}
	m[k] = until
	return true
}

// expire forgets the skips that ended by now: they no longer skip anything.
func (m skipMemory[K]) expire(now time.Time) {
	maps.DeleteFunc(m, func(_ K, until time.Time) bool { return !now.Before(until) })
}

// skipping reports whether k should not be called now.
func (c *Collector) skipping(k skipKey) bool {
	now := c.now()
	if k.queue != nil {
		return k.queue.skipping(k.op, now)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped.active(opKey{k.region, k.op}, now)
}

// claimSkip marks k as not to be called before until, and reports whether it was not marked
// already: of several calls that fail at once, one claims the right to record the failure.
func (c *Collector) claimSkip(k skipKey, until time.Time) bool {
	now := c.now()
	if k.queue != nil {
		return k.queue.claimSkip(k.op, until, now)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped.claim(opKey{k.region, k.op}, until, now)
}

// skipAfter decides from err whether k should be left alone for a while, and records that.
// It reports whether it did.
func (c *Collector) skipAfter(k skipKey, err error) bool {
	var until time.Time
	switch {
	case awscalls.AccessDenied(err):
		until = c.now().Add(accessDeniedBackoff)
	default:
		return false
	}
	if k.queue != nil {
		k.queue.skip(k.op, until)
		return true
	}
	c.mu.Lock()
	c.skipped[opKey{k.region, k.op}] = until
	c.mu.Unlock()
	return true
}

// forgetExpired drops the failures and skips, the collector's own and every watched queue's,
// that no longer change what the collector does (failureMemory.expire, skipMemory.expire), so
// that what an hour of failures left behind does not stay for the life of the process.
func (c *Collector) forgetExpired(now time.Time) {
	c.mu.Lock()
	c.recorded.expire(now)
	c.skipped.expire(now)
	c.mu.Unlock()
	for _, q := range c.watched() {
		q.forgetExpired(now)
	}
}

// warn logs a failure to keep what was collected, except once ctx has ended: a shutdown
// cancels the store writes in flight, which is expected and not worth a warning.
func (c *Collector) warn(ctx context.Context, msg string, args ...any) {
	if ctx.Err() != nil {
		return
	}
	c.log.Warn(msg, args...)
}
