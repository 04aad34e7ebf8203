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
// are watched too; and ListDeadLetterSourceQueues checks the pairing where the endpoint has it.
func (c *Collector) Discover(ctx context.Context) error {
	cy := c.startCycle(ctx, store.RunDiscovery)
	defer c.finish(ctx, cy)
	changed := false
	for _, r := range c.regions {
		if c.discoverRegion(ctx, cy, r) {
			changed = true
		}
	}
	for _, q := range c.watched() {
		cy.cover(q.region.key, 1)
	}
	if c.adoptDeadLetterQueues(ctx, cy) {
		changed = true
	}
	c.listDeadLetterSources(ctx, cy)
	cy.queues.Store(int64(len(c.watched())))
	c.updateCost(ctx)
	if changed {
		c.pub.Publish(events.Event{Kind: events.QueuesChanged, At: c.now()})
	}
	return ctx.Err()
}

// discoverRegion lists the region's selected queues, adopts new ones and marks vanished ones
// gone. It reports whether the set of watched queues changed.
func (c *Collector) discoverRegion(ctx context.Context, cy *cycle, r *region) bool {
	cy.cover(r.key, 0)
	if !c.checkIdentity(ctx, cy, r) {
		// Listing with credentials that reach no account, or another one, would file what it
		// finds under the wrong account: the scope is blind until the check passes.
		cy.markBlind(r.key)
		return c.resumeFromStore(ctx, r)
	}
	listed, complete := c.listRegion(ctx, cy, r)
	if ctx.Err() != nil {
		return false
	}
	if !complete {
		cy.markBlind(r.key)
	}
	stored, err := c.store.ListQueues(ctx, store.QueueFilter{Region: r.Name, Account: r.Account, IncludeGone: true})
	if err != nil {
		c.warn(ctx, "collector: list stored queues", "region", r.key, "err", err)
	}
	changed := c.adoptListed(ctx, cy, r, listed, stored)
	// A failed listing says nothing about the queues it did not return.
	if !complete {
		return c.resumeFromStore(ctx, r) || changed
	}
	if err != nil {
		return changed
	}
	listedSet := make(map[string]bool, len(listed))
	for _, u := range listed {
		listedSet[u] = true
	}
	for _, sq := range stored {
		if sq.Gone() || listedSet[sq.URL] || !c.selected(r, sq.Name, sq.URL) {
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
func (c *Collector) adoptListed(ctx context.Context, cy *cycle, r *region, listed []string, stored []store.Queue) bool {
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
		changed = c.resumeStored(ctx, r, resumable) || changed
	}
	if err := c.store.TouchQueues(ctx, seen, c.now()); err != nil {
		c.warn(ctx, "collector: record queues seen", "region", r.key, "err", err)
	}
	var mu sync.Mutex
	forEach(ctx, 2*cap(c.budget(cy.kind)), fresh, func(u string) {
		defer c.recoverURL(ctx, cy, u)
		if adopted, err := c.adopt(ctx, cy, r, u); err == nil && adopted {
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
func (c *Collector) resumeStored(ctx context.Context, r *region, stored []store.Queue) bool {
	latest, err := c.store.LatestAttributeSamples(ctx)
	if err != nil {
		c.warn(ctx, "collector: load newest depths", "region", r.key, "err", err)
	}
	samples, err := c.store.LatestSamples(ctx)
	if err != nil {
		c.warn(ctx, "collector: load newest samples", "region", r.key, "err", err)
	}
	changed := false
	for _, sq := range stored {
		st := storedState(sq, latest[sq.ID])
		var sample *store.Sample
		if s, ok := samples[sq.ID]; ok {
			sample = &s
		}
		q := c.resumeQueue(ctx, r, sq, st, sample)
		c.mu.Lock()
		if _, known := c.queues[sq.ARN]; !known {
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
func (c *Collector) adopt(ctx context.Context, cy *cycle, r *region, u string) (bool, error) {
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
	var q *watchedQueue
	if stored, err := c.store.GetQueue(ctx, id); err == nil {
		var sample *store.Sample
		if s, err := c.store.LatestSample(ctx, id); err == nil {
			sample = &s
		} else if !errors.Is(err, store.ErrNotFound) {
			c.warn(ctx, "collector: load latest sample", "queue", name, "err", err)
		}
		q = c.resumeQueue(ctx, r, stored, queueState{fifo: fifo}, sample)
	} else {
		c.warn(ctx, "collector: load queue", "queue", name, "err", err)
		q = newWatchedQueue(r, id, name, u, arn, queueState{fifo: fifo}, nil)
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
// that are selected (and their dead-letter queues), without an AWS call. A restart while AWS is
// unreachable then keeps trying the queues it knew, recording an error against each and
// letting their data age visibly, rather than watching nothing until a discovery succeeds.
// A queue that vanished meanwhile is marked gone by the next complete listing.
func (c *Collector) resumeFromStore(ctx context.Context, r *region) bool {
	stored, err := c.store.ListQueues(ctx, store.QueueFilter{Region: r.Name, Account: r.Account})
	if err != nil {
		c.warn(ctx, "collector: list stored queues", "region", r.key, "err", err)
		return false
	}
	deadLetter := make(map[string]bool)
	for _, sq := range stored {
		if c.selected(r, sq.Name, sq.URL) && sq.DeadLetterTargetARN != "" {
			deadLetter[sq.DeadLetterTargetARN] = true
		}
	}
	var resumable []store.Queue
	for _, sq := range stored {
		if !c.selected(r, sq.Name, sq.URL) && !deadLetter[sq.ARN] {
			continue
		}
		c.mu.Lock()
		_, known := c.queues[sq.ARN]
		c.mu.Unlock()
		if !known {
			resumable = append(resumable, sq)
		}
	}
	return c.resumeStored(ctx, r, resumable)
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
// selection: a source's health depends on its DLQ. A DLQ in a region the collector does not
// watch, or that cannot be found, is recorded against its source.
func (c *Collector) adoptDeadLetterQueues(ctx context.Context, cy *cycle) bool {
	changed := false
	for _, q := range c.watched() {
		if c.adoptARN(ctx, cy, q.state().deadLetterTargetARN, q) {
			changed = true
		}
	}
	return changed
}

// adoptARN watches the queue of ARN target, named by the watched queue from (its dead-letter
// queue, or the dead-letter queue of an EventBridge target that delivers to it), unless it is
// watched already or target is empty. A queue in a region the collector does not watch is
// recorded once against from. It reports whether the queue is new.
func (c *Collector) adoptARN(ctx context.Context, cy *cycle, target string, from *watchedQueue) bool {
	c.mu.Lock()
	_, watched := c.queues[target]
	c.mu.Unlock()
	if target == "" || watched {
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
	var out *sqs.GetQueueUrlOutput
	err = c.call(ctx, cy, r, opGetQueueURL, from, func(ctx context.Context) error {
		var err error
		out, err = r.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Name), QueueOwnerAWSAccountId: aws.String(a.Account)})
		return err
	})
	if err != nil || out.QueueUrl == nil {
		return false
	}
	adopted, err := c.adopt(ctx, cy, r, *out.QueueUrl)
	return err == nil && adopted
}

// listDeadLetterSources records, for every watched queue, the sources that
// ListDeadLetterSourceQueues names. It catches sources outside the selection, whose redrive
// policies the collector never reads. Endpoints without the operation are asked once.
func (c *Collector) listDeadLetterSources(ctx context.Context, cy *cycle) {
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

// selected reports whether the configuration selects the queue (name or URL) in region r.
func (c *Collector) selected(r *region, name, u string) bool {
	if len(c.opts.QueuePrefixes) == 0 && len(c.opts.Queues) == 0 {
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

// regionByKey returns the watched region of a scope (store.Scope), nil when none is.
func (c *Collector) regionByKey(key string) *region {
	for _, r := range c.regions {
		if r.key == key {
			return r
		}
	}
	return nil
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
