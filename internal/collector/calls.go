package collector

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/store"
)

// cycle is one recorded pass of one loop: its store run, and the calls and errors it counts.
type cycle struct {
	kind    string
	runID   int64
	started time.Time
	calls   atomic.Int64
	errors  atomic.Int64
	queues  atomic.Int64
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

// finish records the end of a pass and its telemetry.
func (c *Collector) finish(ctx context.Context, cy *cycle) {
	end := c.now()
	c.tel.cycles.WithLabelValues(cy.kind).Inc()
	c.tel.cycleSeconds.WithLabelValues(cy.kind).Observe(end.Sub(cy.started).Seconds())
	if cy.runID == 0 {
		return
	}
	// The run row is written even when the cycle was cancelled, so that no pass is left open.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
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

// call makes one AWS call through fn, counts it and, when it fails, records the error against
// the queue (nil when the call is about no single queue) and returns it. A quiet filter that
// returns true for the error keeps it out of the store (an expected answer, or one already
// recorded).
func (c *Collector) call(ctx context.Context, cy *cycle, op string, q *watchedQueue, fn func(context.Context) error, quiet ...func(error) bool) error {
	cy.calls.Add(1)
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		c.tel.awsCalls.Add(op, awscalls.Canceled)
		return ctx.Err()
	}
	err := fn(ctx)
	<-c.sem
	code, outcome := awscalls.Classify(err)
	c.tel.awsCalls.Add(op, outcome)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// Shutting down: not an AWS failure worth a row.
		return err
	}
	for _, f := range quiet {
		if f(err) {
			return err
		}
	}
	c.recordError(ctx, cy, op, q, code, safeMessage(err))
	return err
}

// errorRepeat is how often the same failure (queue, operation, code) is stored. A policy that
// denies GetQueueAttributes on a thousand queues would otherwise add four thousand rows a
// minute; the run rows still count every failure.
const errorRepeat = time.Minute

// errorKey identifies a kind of failure for errorRepeat.
type errorKey struct {
	queueID  int64
	op, code string
}

// recordError stores one failed call (or other per-queue failure) of a cycle.
func (c *Collector) recordError(ctx context.Context, cy *cycle, op string, q *watchedQueue, code, msg string) {
	cy.errors.Add(1)
	e := store.CollectorError{RunID: cy.runID, Operation: op, Code: code, Message: msg, At: c.now()}
	var queue string
	if q != nil {
		e.QueueID = q.id
		queue = q.name
	}
	k := errorKey{queueID: e.QueueID, op: op, code: code}
	c.mu.Lock()
	last, seen := c.recorded[k]
	repeat := seen && e.At.Sub(last) < errorRepeat
	if !repeat {
		c.recorded[k] = e.At
	}
	c.mu.Unlock()
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
	c.recordError(context.WithoutCancel(ctx), cy, cy.kind, q, "panic", safeText(fmt.Sprint(p), maxErrorMessage))
}

// isUnsupported reports whether err says the endpoint does not implement the operation (kumo,
// an older emulator, a partition without the feature).
func isUnsupported(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "InvalidAction", "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation",
		"UnknownOperationException", "UnknownOperation", "NotImplemented":
		return true
	}
	return false
}

// isAccessDenied reports whether err says the credentials may not call the operation.
func isAccessDenied(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "AccessDenied", "AccessDeniedException", "AuthorizationError", "UnauthorizedOperation":
		return true
	}
	return false
}

// maxErrorMessage bounds what is stored of an error message.
const maxErrorMessage = 500

// safeMessage is the text of err fit for storage and display: the AWS message when there is one
// (without the SDK's request-id and retry wrapping), valid UTF-8, bounded in length.
func safeMessage(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if m := apiErr.ErrorMessage(); m != "" {
			return safeText(m, maxErrorMessage)
		}
		return safeText(apiErr.ErrorCode(), maxErrorMessage)
	}
	return safeText(err.Error(), maxErrorMessage)
}

// safeText makes hostile text storable: valid UTF-8, no control characters but newline and
// tab, at most max bytes cut on a rune boundary.
func safeText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return truncateUTF8(s, max)
}

// truncateUTF8 cuts s to at most max bytes without splitting a rune.
func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// skipKey names an operation not to call again for a while: on a whole region (queueID 0) or
// on one queue.
type skipKey struct {
	region  string
	op      string
	queueID int64
}

// accessDeniedBackoff is how long an operation refused with AccessDenied is left alone: the
// operator may fix the policy, but asking every cycle would flood the error log.
const accessDeniedBackoff = time.Hour

// forever marks an operation the endpoint does not have: it is not asked again by this process.
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// skipping reports whether k should not be called now.
func (c *Collector) skipping(k skipKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.skipped[k]
	return ok && c.now().Before(until)
}

// skipAfter decides from err whether k should be left alone for a while, and records that.
// It reports whether it did.
func (c *Collector) skipAfter(k skipKey, err error) bool {
	var until time.Time
	switch {
	case isUnsupported(err):
		until = forever
	case isAccessDenied(err):
		until = c.now().Add(accessDeniedBackoff)
	default:
		return false
	}
	c.mu.Lock()
	c.skipped[k] = until
	c.mu.Unlock()
	return true
}

// warn logs a failure to keep what was collected, except once ctx has ended: a shutdown
// cancels the store writes in flight, which is expected and not worth a warning.
func (c *Collector) warn(ctx context.Context, msg string, args ...any) {
	if ctx.Err() != nil {
		return
	}
	c.log.Warn(msg, args...)
}
