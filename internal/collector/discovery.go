package collector

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// maxPages bounds a paginated listing, so that an endpoint that keeps answering with a token
// cannot keep a cycle busy forever.
const maxPages = 1000

// Discover finds the watched queues of every region: ListQueues per prefix (or of the whole
// account), GetQueueUrl per named queue. A new queue is adopted (its attributes read once for
// its ARN); a queue no longer listed is marked gone; the dead-letter queues of watched queues
// are watched too, tier after tier; and, where the configuration selects queues,
// ListDeadLetterSourceQueues finds the sources outside the selection.
func (c *Collector) Discover(ctx context.Context) error {
	return c.discover(ctx, true)
}

// discover is Discover, without ListDeadLetterSourceQueues unless listSources: Run's first
// discovery leaves that to the discovery loop, so that the first attribute cycle starts as soon
// as the queues are known.
func (c *Collector) discover(ctx context.Context, listSources bool) error {
	cy := c.startCycle(ctx, store.RunDiscovery)
	defer c.finish(ctx, cy)
	known, err := c.readStored(ctx)
	if err != nil {
		c.warn(ctx, "collector: list stored queues", "err", err)
	}
	changed := false
	for _, r := range c.regions {
		if c.discoverRegion(ctx, cy, r, known) {
			changed = true
		}
	}
	for _, q := range c.watched() {
		cy.cover(q.region.key, 1)
	}
	if c.adoptDeadLetterQueues(ctx, cy, known) {
		changed = true
	}
	if listSources {
		c.listDeadLetterSources(ctx, cy)
	}
	cy.queues.Store(int64(len(c.watched())))
	c.updateCost(ctx)
	if changed {
		c.pub.Publish(events.Event{Kind: events.QueuesChanged, At: c.now()})
	}
	return ctx.Err()
}

// storedQueues is what adoption needs of the queues an earlier run stored: a queue by ARN, and,
// for a queue resumed from the store, its newest depth and message sample. A discovery reads it
// all at once (every stored queue in one statement with its pairs, the newest depths and samples
// in one each, only when a queue is resumed), so that its store reads grow with the fleet and
// not with the fleet squared; the topology loop, adopting an EventBridge target's dead-letter
// queue now and then, looks each one up instead (byARN nil).
type storedQueues struct {
	err   error                  // reading byARN failed: nothing is known of the store
	byARN map[string]store.Queue // every stored queue, gone ones too

	once    sync.Once
	depths  map[int64]store.AttributeSample
	samples map[int64]store.Sample
}

// readStored reads every queue the store holds, for one discovery.
func (c *Collector) readStored(ctx context.Context) (*storedQueues, error) {
	qs, err := c.store.ListQueues(ctx, store.QueueFilter{IncludeGone: true})
	k := &storedQueues{err: err, byARN: make(map[string]store.Queue, len(qs))}
	for _, sq := range qs {
		k.byARN[sq.ARN] = sq
	}
	return k, err
}

// scope returns the stored queues of r's scope (store.QueueFilter's meaning: without a
// configured account, every queue of the region).
func (k *storedQueues) scope(r *region) []store.Queue {
	var out []store.Queue
	for _, sq := range k.byARN {
		if sq.Region == r.Name && (r.Account == "" || sq.Account == r.Account) {
			out = append(out, sq)
		}
	}
	slices.SortFunc(out, func(a, b store.Queue) int { return strings.Compare(a.ARN, b.ARN) })
	return out
}

// queue returns the stored queue of that ARN, if the store has one.
func (c *Collector) storedQueue(ctx context.Context, k *storedQueues, arn string) (store.Queue, bool) {
	if k.byARN != nil {
		sq, ok := k.byARN[arn]
		return sq, ok
	}
	sq, err := c.store.GetQueueByARN(ctx, arn)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.warn(ctx, "collector: load queue", "arn", arn, "err", err)
	}
	return sq, err == nil
}

// newest returns the newest depth and message sample (nil without one) of a stored queue.
func (c *Collector) newest(ctx context.Context, k *storedQueues, id int64) (store.AttributeSample, *store.Sample) {
	if k.byARN == nil {
		var sample *store.Sample
		if s, err := c.store.LatestSample(ctx, id); err == nil {
			sample = &s
		} else if !errors.Is(err, store.ErrNotFound) {
			c.warn(ctx, "collector: load latest sample", "queue_id", id, "err", err)
		}
		return store.AttributeSample{}, sample
	}
	k.once.Do(func() {
		var err error
		if k.depths, err = c.store.LatestAttributeSamples(ctx); err != nil {
			c.warn(ctx, "collector: load newest depths", "err", err)
		}
		if k.samples, err = c.store.LatestSamples(ctx); err != nil {
			c.warn(ctx, "collector: load newest samples", "err", err)
		}
	})
	if s, ok := k.samples[id]; ok {
		return k.depths[id], &s
	}
	return k.depths[id], nil
}

// discoverRegion lists the region's selected queues, adopts new ones and marks vanished ones
// gone. It reports whether the set of watched queues changed.
func (c *Collector) discoverRegion(ctx context.Context, cy *cycle, r *region, known *storedQueues) bool {
	cy.cover(r.key, 0)
	stored := known.scope(r)
	if !c.checkIdentity(ctx, cy, r) {
		// Listing with credentials that reach no account, or another one, would file what it
		// finds under the wrong account: the scope is blind until the check passes.
		cy.markBlind(r.key)
		return c.resumeFromStore(ctx, r, known, stored)
	}
	listed, complete := c.listRegion(ctx, cy, r)
	if ctx.Err() != nil {
		return false
	}
	if !complete {
		cy.markBlind(r.key)
	}
	changed := c.adoptListed(ctx, cy, r, listed, known, stored)
	// A failed listing says nothing about the queues it did not return.
	if !complete {
		return c.resumeFromStore(ctx, r, known, stored) || changed
	}
	if known.err != nil {
		return changed
	}
	listedSet := make(map[string]bool, len(listed))
	for _, u := range listed {
		listedSet[u] = true
	}
	// A stored queue the listing returned at another URL (the endpoint changed, or another
	// replica reaches AWS by another address) was adopted again by its ARN: it is not gone.
	watchedIDs := map[int64]bool{}
	for _, q := range c.watched() {
		watchedIDs[q.id] = true
	}
	for _, sq := range stored {
		if sq.Gone() || listedSet[sq.URL] || !c.selected(r, sq.Name, sq.URL) {
			continue
		}
		if watchedIDs[sq.ID] && c.byURL(r, sq.URL) == nil {
			continue
		}
		if q := c.byURL(r, sq.URL); q != nil {
			c.markGone(ctx, q)
		} else {
			// Watched by an earlier run and gone while the collector was away.
			c.storeGone(ctx, &watchedQueue{id: sq.ID, region: r, name: sq.Name, url: sq.URL, arn: sq.ARN})
		}
		changed = true
	}
	return changed
}

// adoptListed watches the listed queues that are not watched yet, and records that every listed
// queue was seen. A queue the store knows (an earlier run watched it) is resumed from the store
// without an AWS call: the first attribute cycle reads it, with all the others, at its budget's
// concurrency. A queue never seen is adopted (adopt), as many at once as discovery's budget
// allows. It reports whether any queue is new to this collector.
func (c *Collector) adoptListed(ctx context.Context, cy *cycle, r *region, listed []string, known *storedQueues, stored []store.Queue) bool {
	byURL := make(map[string]store.Queue, len(stored))
	for _, sq := range stored {
		byURL[sq.URL] = sq
	}
	var seen []int64
	var fresh []string
	var resumable []store.Queue
	for _, u := range listed {
		switch q, sq := c.byURL(r, u), byURL[u]; {
		case q != nil:
			seen = append(seen, q.id)
		case sq.ID != 0:
			seen = append(seen, sq.ID)
			resumable = append(resumable, sq)
		default:
			fresh = append(fresh, u)
		}
	}
	changed := false
	if len(resumable) > 0 {
		changed = c.resumeStored(ctx, r, known, resumable) || changed
	}
	if err := c.store.TouchQueues(ctx, seen, c.now()); err != nil {
		c.warn(ctx, "collector: record queues seen", "region", r.key, "err", err)
	}
	var mu sync.Mutex
	forEach(ctx, 2*cap(c.budget(cy.kind)), fresh, func(u string) {
		defer c.recoverURL(ctx, cy, u)
		if adopted, err := c.adopt(ctx, cy, r, u, known); err == nil && adopted {
			mu.Lock()
			changed = true
			mu.Unlock()
		}
	})
	return changed
}

// recoverURL turns a panic in the adoption of the queue at u into a recorded error, as
// recoverQueue does for a watched queue.
func (c *Collector) recoverURL(ctx context.Context, cy *cycle, u string) {
	if p := recover(); p != nil {
		c.log.Error("collector: adoption panicked", "url", u, "panic", p, "stack", string(debug.Stack()))
		c.recordError(context.WithoutCancel(ctx), cy, cy.kind, nil, "panic", safetext.Store(fmt.Sprint(p), awscalls.MaxMessage))
	}
}

// resumeStored watches queues an earlier run stored, from what the store holds of them: their
// attributes, redrive policy, newest depth and newest sample. It reports whether any was added.
func (c *Collector) resumeStored(ctx context.Context, r *region, known *storedQueues, stored []store.Queue) bool {
	changed := false
	for _, sq := range stored {
		depth, sample := c.newest(ctx, known, sq.ID)
		q := c.resumeQueue(ctx, r, sq, storedState(sq, depth), sample)
		c.mu.Lock()
		if _, watched := c.queues[sq.ARN]; !watched {
			c.queues[sq.ARN] = q
			c.urls[urlKey{r.key, sq.URL}] = q
			changed = true
		}
		c.mu.Unlock()
	}
	return changed
}

// storedState is what the store says of a queue that the loops need: its last attributes and
// their redrive policy, and its newest depth.
func storedState(sq store.Queue, depth store.AttributeSample) queueState {
	st := queueState{
		fifo: sq.FIFO, deadLetterTargetARN: sq.DeadLetterTargetARN, maxReceiveCount: sq.MaxReceiveCount,
		redrivePolicy: sq.Attributes["RedrivePolicy"], attributesAt: sq.AttributesAt,
		visible: depth.Visible, inFlight: depth.InFlight, delayed: depth.Delayed, changedAt: depth.At,
		heldMessages: depth.Visible+depth.InFlight > 0,
	}
	st.visibilityTimeout, _ = visibilityTimeout(sq.Attributes)
	return st
}

// listRegion returns the URLs of the region's selected queues, and whether every listing call
// succeeded.
func (c *Collector) listRegion(ctx context.Context, cy *cycle, r *region) (urls []string, complete bool) {
	complete = true
	seen := make(map[string]bool)
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			urls = append(urls, u)
		}
	}
	prefixes := c.opts.QueuePrefixes
	if len(prefixes) == 0 && len(c.opts.Queues) == 0 {
		prefixes = []string{""}
	}
	for _, p := range prefixes {
		got, err := c.listQueues(ctx, cy, r, p)
		if err != nil {
			complete = false
		}
		for _, u := range got {
			add(u)
		}
	}
	for _, named := range c.opts.Queues {
		if isURL(named) {
			if c.urlRegion(named) == r {
				add(named)
			}
			continue
		}
		var out *sqs.GetQueueUrlOutput
		err := c.call(ctx, cy, r, opGetQueueURL, nil, func(ctx context.Context) error {
			var err error
			out, err = r.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(named)})
			return err
		}, func(err error) bool {
			// A named queue lives in one of the regions; its absence from the others is normal.
			return awscalls.QueueMissing(err) && len(c.regions) > 1
		})
		switch {
		case err == nil && out.QueueUrl != nil:
			add(*out.QueueUrl)
		case err != nil && !awscalls.QueueMissing(err):
			complete = false
		}
	}
	return urls, complete
}

// listQueues pages through ListQueues for one prefix.
func (c *Collector) listQueues(ctx context.Context, cy *cycle, r *region, prefix string) ([]string, error) {
	var urls []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	for range maxPages {
		var out *sqs.ListQueuesOutput
		err := c.call(ctx, cy, r, opListQueues, nil, func(ctx context.Context) error {
			var err error
			out, err = r.SQS.ListQueues(ctx, in)
			return err
		})
		if err != nil {
			return urls, err
		}
		urls = append(urls, out.QueueUrls...)
		if out.NextToken == nil || *out.NextToken == "" || (in.NextToken != nil && *in.NextToken == *out.NextToken) {
			return urls, nil
		}
		in.NextToken = out.NextToken
	}
	return urls, fmt.Errorf("collector: list queues %q: more than %d pages", prefix, maxPages)
}

// adopt starts watching the queue at u unless it is watched already; either way it records that
// the queue was seen. It reports whether the queue is new.
func (c *Collector) adopt(ctx context.Context, cy *cycle, r *region, u string, known *storedQueues) (bool, error) {
	if q := c.byURL(r, u); q != nil {
		if err := c.store.TouchQueues(ctx, []int64{q.id}, c.now()); err != nil {
			c.warn(ctx, "collector: record queue seen", "queue", q.name, "err", err)
		}
		return false, nil
	}
	// The ARN identifies a queue in the store and only GetQueueAttributes says it reliably (the
	// URL's host is an endpoint, not a partition). Reading all attributes here also gives the
	// queue its first sample at once.
	var out *sqs.GetQueueAttributesOutput
	name := queueNameFromURL(u)
	err := c.call(ctx, cy, r, opGetQueueAttributes, nil, func(ctx context.Context) error {
		var err error
		out, err = r.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(u), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
		})
		return err
	})
	if err != nil {
		return false, err
	}
	at := c.now()
	arn := out.Attributes["QueueArn"]
	if arn == "" {
		c.recordError(ctx, cy, opGetQueueAttributes, nil, "MissingQueueArn", safetext.Store("queue "+name+": no QueueArn attribute", awscalls.MaxMessage))
		return false, errors.New("collector: no QueueArn")
	}
	fifo := strings.HasSuffix(name, ".fifo") || out.Attributes["FifoQueue"] == "true"
	id, err := c.store.UpsertQueue(ctx, store.Queue{
		Region: r.Name, Account: r.Account, Name: name, URL: u, ARN: arn, FIFO: fifo, FirstSeen: at, LastSeen: at,
	})
	if err != nil {
		c.storeFailed(ctx, cy, "UpsertQueue", nil, err)
		return false, err
	}
	// A queue the store knows by its ARN (at another URL: an endpoint changed) keeps what an
	// earlier run learned of it; any other is new to the store too.
	q := newWatchedQueue(r, id, name, u, arn, queueState{fifo: fifo}, nil)
	if sq, ok := c.storedQueue(ctx, known, arn); ok {
		sq.ID, sq.Name, sq.URL = id, name, u
		_, sample := c.newest(ctx, known, id)
		q = c.resumeQueue(ctx, r, sq, queueState{fifo: fifo}, sample)
	}
	c.mu.Lock()
	if existing := c.queues[arn]; existing != nil {
		// Listed twice (a prefix and a name): keep the first.
		c.mu.Unlock()
		return false, nil
	}
	c.queues[arn] = q
	c.urls[urlKey{r.key, u}] = q
	c.mu.Unlock()
	c.applyAttributes(ctx, cy, q, out.Attributes, at)
	c.log.Info("collector: watching queue", "queue", name, "region", r.key, "fifo", fifo)
	return true, nil
}

// resumeFromStore watches, after a failed listing of r, the queues an earlier run stored for it
// (stored: those of its scope) that are selected (and their dead-letter queues), without an AWS
// call. A restart while AWS is unreachable then keeps trying the queues it knew, recording an
// error against each and letting their data age visibly, rather than watching nothing until a
// discovery succeeds. A queue that vanished meanwhile is marked gone by the next complete
// listing.
func (c *Collector) resumeFromStore(ctx context.Context, r *region, known *storedQueues, stored []store.Queue) bool {
	deadLetter := make(map[string]bool)
	for _, sq := range stored {
		if !sq.Gone() && c.selected(r, sq.Name, sq.URL) && sq.DeadLetterTargetARN != "" {
			deadLetter[sq.DeadLetterTargetARN] = true
		}
	}
	var resumable []store.Queue
	for _, sq := range stored {
		if sq.Gone() || (!c.selected(r, sq.Name, sq.URL) && !deadLetter[sq.ARN]) {
			continue
		}
		if !c.isWatched(sq.ARN) {
			resumable = append(resumable, sq)
		}
	}
	slices.SortFunc(resumable, func(a, b store.Queue) int { return strings.Compare(a.Name, b.Name) })
	return c.resumeStored(ctx, r, known, resumable)
}

// isWatched reports whether the queue of that ARN is watched.
func (c *Collector) isWatched(arn string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.queues[arn]
	return ok
}

// resumeQueue returns the queue to watch, with st completed by what an earlier run of the
// collector left in the store about it (stored, and its newest sample when it has one), so that
// a restart neither backfills twice nor peeks before the queue is due.
func (c *Collector) resumeQueue(ctx context.Context, r *region, stored store.Queue, st queueState, sample *store.Sample) *watchedQueue {
	st.backfilled = !stored.BackfilledAt.IsZero()
	st.peekEnabled = stored.PeekEnabled
	st.peekPaused = stored.PeekPaused
	var seen map[string]seenMessage
	if sample != nil {
		st.peekedAt = sample.At
		st.peekedVisible = sample.ApproxVisible
		seen = c.resumeSeen(ctx, stored.Name, *sample)
	}
	return newWatchedQueue(r, stored.ID, stored.Name, stored.URL, stored.ARN, st, seen)
}

// adoptDeadLetterQueues watches the dead-letter queue of every watched queue, even outside the
// selection: a source's health depends on its DLQ. The pairing comes from the redrive policies
// already read (the attribute cycles' and the adoptions'); a dead-letter queue with a policy of
// its own (a tier) names the next, adopted in the next round, until a round finds none new. A
// DLQ in a region the collector does not watch, or that cannot be found, is recorded against its
// source.
func (c *Collector) adoptDeadLetterQueues(ctx context.Context, cy *cycle, known *storedQueues) bool {
	type named struct {
		target string
		from   *watchedQueue
	}
	changed := false
	tried := make(map[string]bool)
	for {
		var round []named
		for _, q := range c.watched() {
			if t := q.state().deadLetterTargetARN; t != "" && !tried[t] && !c.isWatched(t) {
				tried[t] = true
				round = append(round, named{t, q})
			}
		}
		if len(round) == 0 || ctx.Err() != nil {
			return changed
		}
		var mu sync.Mutex
		forEach(ctx, 2*cap(c.budget(cy.kind)), round, func(n named) {
			defer c.recoverQueue(ctx, cy, n.from)
			if c.adoptARN(ctx, cy, n.target, n.from, known) {
				mu.Lock()
				changed = true
				mu.Unlock()
			}
		})
	}
}

// adoptARN watches the queue of ARN target, named by the watched queue from (its dead-letter
// queue, or the dead-letter queue of an EventBridge target that delivers to it), unless it is
// watched already or target is empty. A queue the store holds, and not as gone, is resumed from
// it without an AWS call, as a listed one is; another is found with GetQueueUrl and adopted. A
// queue in a region the collector does not watch is recorded once against from. It reports
// whether the queue is new.
func (c *Collector) adoptARN(ctx context.Context, cy *cycle, target string, from *watchedQueue, known *storedQueues) bool {
	if target == "" || c.isWatched(target) {
		return false
	}
	a, err := arn.ParseQueue(target)
	r := c.regionOf(a.Account, a.Region)
	if err != nil || r == nil {
		if c.claimSkip(skipKey{op: "DeadLetterQueueNotWatched", queue: from}, forever) {
			c.recordError(ctx, cy, opGetQueueURL, from, "DeadLetterQueueNotWatched",
				safetext.Store("dead-letter queue "+target+" is in a region or account the collector does not watch", awscalls.MaxMessage))
		}
		return false
	}
	if sq, ok := c.storedQueue(ctx, known, target); ok && !sq.Gone() {
		return c.resumeStored(ctx, r, known, []store.Queue{sq})
	}
	var out *sqs.GetQueueUrlOutput
	err = c.call(ctx, cy, r, opGetQueueURL, from, func(ctx context.Context) error {
		var err error
		out, err = r.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Name), QueueOwnerAWSAccountId: aws.String(a.Account)})
		return err
	})
	if err != nil || out.QueueUrl == nil {
		return false
	}
	adopted, err := c.adopt(ctx, cy, r, *out.QueueUrl, known)
	return err == nil && adopted
}

// listDeadLetterSources records, for every watched queue, the sources that
// ListDeadLetterSourceQueues names. It catches sources outside the selection, whose redrive
// policies the collector never reads. Endpoints without the operation are asked once. Without a
// selection it asks nothing: every queue of each scope is watched, and SQS keeps a queue's
// sources in its own account and region, so the redrive policies the attribute cycles read name
// every pair; what an earlier run listed is forgotten instead.
func (c *Collector) listDeadLetterSources(ctx context.Context, cy *cycle) {
	if !c.selects() {
		for _, r := range c.regions {
			if err := c.store.ForgetListedSources(ctx, r.Name, r.Account); err != nil {
				c.warn(ctx, "collector: forget listed sources", "region", r.key, "err", err)
			}
		}
		for _, q := range c.watched() {
			q.setListedSources(0)
		}
		return
	}
	c.each(ctx, cy, c.watched(), func(ctx context.Context, q *watchedQueue) {
		k := skipKey{region: q.region.key, op: opListDeadLetterSourceQueues}
		if c.skipping(k) {
			return
		}
		var sources []string
		in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(q.url), MaxResults: aws.Int32(1000)}
		for range maxPages {
			var out *sqs.ListDeadLetterSourceQueuesOutput
			err := c.call(ctx, cy, q.region, opListDeadLetterSourceQueues, q, func(ctx context.Context) error {
				var err error
				out, err = q.region.SQS.ListDeadLetterSourceQueues(ctx, in)
				return err
			}, c.recordOnce(k))
			if err != nil {
				if awscalls.QueueMissing(err) {
					c.markGone(ctx, q)
				}
				return
			}
			for _, u := range out.QueueUrls {
				if arn := sourceARNFromURL(q.arn, u); arn != "" {
					sources = append(sources, arn)
				}
			}
			if out.NextToken == nil || *out.NextToken == "" {
				break
			}
			in.NextToken = out.NextToken
		}
		slices.Sort(sources)
		q.setListedSources(len(sources))
		if err := c.store.SetListedSources(ctx, q.id, sources); err != nil {
			c.warn(ctx, "collector: set listed sources", "queue", q.name, "err", err)
		}
	})
}

// recordOnce returns a call filter for an optional operation that an endpoint may lack or the
// credentials may be denied. The first denial is recorded and the operation (k: a region or one
// queue) skipped for a while (see skipAfter); an endpoint without the operation is backed off by
// the collector's sight and recorded once per region per discovery interval. The failures of
// calls already in flight are not recorded again.
func (c *Collector) recordOnce(k skipKey) func(error) bool {
	return func(err error) bool {
		switch {
		case awscalls.Unsupported(err):
			k.queue = nil
			k.op = "unsupported " + k.op
			return !c.claimSkip(k, c.now().Add(c.opts.DiscoveryInterval))
		case !awscalls.AccessDenied(err):
			return false
		}
		if c.skipping(k) {
			return true
		}
		c.skipAfter(k, err)
		return false
	}
}

// selects reports whether the configuration selects queues (by prefix or name); without, every
// queue of each scope is watched.
func (c *Collector) selects() bool {
	return len(c.opts.QueuePrefixes) > 0 || len(c.opts.Queues) > 0
}

// selected reports whether the configuration selects the queue (name or URL) in region r.
func (c *Collector) selected(r *region, name, u string) bool {
	if !c.selects() {
		return true
	}
	for _, p := range c.opts.QueuePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, named := range c.opts.Queues {
		if named == name || (named == u && c.urlRegion(u) == r) {
			return true
		}
	}
	return false
}

func (c *Collector) byURL(r *region, u string) *watchedQueue {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[urlKey{r.key, u}]
}

// accountID is the account r's credentials reach, as far as the collector knows: the role's,
// else what GetCallerIdentity answered; "" when neither says.
func (c *Collector) accountID(r *region) string {
	if r.AccountID != "" {
		return r.AccountID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.identity.account
}

// regionOf returns the watched region of a queue of account in region name: the one whose
// account is known to be that one, else the only one of that name whose account is not known
// (a dashboard without configured accounts, or one checked by no GetCallerIdentity yet); nil
// when none or several could be.
func (c *Collector) regionOf(account, name string) *region {
	var unknown []*region
	for _, r := range c.regions {
		if r.Name != name {
			continue
		}
		switch id := c.accountID(r); {
		case id == account:
			return r
		case id == "":
			unknown = append(unknown, r)
		}
	}
	if len(unknown) == 1 {
		return unknown[0]
	}
	return nil
}

// urlRegion returns the region a queue URL belongs to: the one named in its host
// (sqs.eu-west-1.amazonaws.com) whose account is the URL path's first part, else the first
// region of that account (a local endpoint), else the first region.
func (c *Collector) urlRegion(u string) *region {
	parsed, err := url.Parse(u)
	if err != nil {
		return c.regions[0]
	}
	account, _, _ := strings.Cut(strings.TrimPrefix(parsed.Path, "/"), "/")
	for _, label := range strings.Split(parsed.Hostname(), ".") {
		if r := c.regionOf(account, label); r != nil {
			return r
		}
	}
	for _, r := range c.regions {
		if account != "" && c.accountID(r) == account {
			return r
		}
	}
	return c.regions[0]
}

// checkIdentity checks, once per Run, which account r's credentials reach (Region.STS): it
// reports whether the scope may be listed. A failed call (a role that cannot be assumed) is in
// the sight as any failed call is; an account other than the role's is recorded as a failure of
// GetCallerIdentity, so that the scope shows blind rather than green.
func (c *Collector) checkIdentity(ctx context.Context, cy *cycle, r *region) bool {
	if r.STS == nil {
		return true
	}
	c.mu.Lock()
	checked := r.identity.checked
	c.mu.Unlock()
	if checked {
		return true
	}
	var got string
	err := c.call(ctx, cy, r, opGetCallerIdentity, nil, func(ctx context.Context) error {
		out, err := r.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return err
		}
		got = aws.ToString(out.Account)
		if r.AccountID != "" && got != r.AccountID {
			// Recorded as a failure of the call, as AWS would word one, so that the sight,
			// the error log and the status page say it the one way they say every failure.
			return &smithy.GenericAPIError{Code: "WrongAccount", Fault: smithy.FaultClient,
				Message: fmt.Sprintf("the credentials of account %s reach account %s, not %s", r.Account, got, r.AccountID)}
		}
		return nil
	})
	if err != nil {
		return false
	}
	c.mu.Lock()
	r.identity.checked, r.identity.account = true, got
	c.mu.Unlock()
	return true
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}
