package sqsim

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Options configure a Simulator. Every field is optional.
type Options struct {
	// Region is the home region: of unsigned requests and in their ARNs.
	// Requests signed for another region are served by that region's
	// simulator, created on the first one (see Region). Default
	// "us-east-1".
	Region string
	// AccountID appears in queue URLs and ARNs. Default "000000000000".
	AccountID string
	// Clock is the source of time. Default the real clock.
	Clock Clock
	// Logger receives one debug record per request and the recovered
	// panics. Default discard.
	Logger *slog.Logger
	// Seed, when not zero, makes fault injection and generated ids (message
	// ids, receipt handles, move task handles, event and mapping ids)
	// reproducible, for tests. Zero, the default, draws them from a random
	// source: AWS's ids are unique across accounts and time, and a consumer
	// that remembers the ids it processed would take a fresh simulator's
	// messages for old ones if every run handed out the same.
	Seed int64
	// MaxRealWait bounds a long poll in real time when Clock is not the
	// real clock. Default one second.
	MaxRealWait time.Duration
}

// Simulator is an in-memory SQS and CloudWatch endpoint, with the parts of
// EventBridge and Lambda that describe a queue's producers and consumers. It is safe for
// concurrent use. Create it with New and serve it with an http.Server or
// httptest.NewServer.
type Simulator struct {
	region      string
	partition   string // of region: aws, aws-cn, aws-us-gov, ...
	accountID   string
	clock       Clock
	realTime    bool
	log         *slog.Logger
	maxRealWait time.Duration

	// mu guards everything below it up to stats.
	mu        sync.Mutex
	queues    map[string]*queue    // by name
	deletedAt map[string]time.Time // recently deleted queue names
	tasks     map[string]*moveTask // by task handle
	alarms    map[string]*alarm    // by alarm name
	// customMetrics are the metrics published with PutMetricData, by
	// metricKey.
	customMetrics map[string]*customMetric
	// EventBridge buses by name, Lambda functions by name, event source
	// mappings by UUID (mappingOrder keeps their creation order).
	buses        map[string]*eventBus
	functions    map[string]*lambdaFunction
	mappings     map[string]*eventSourceMapping
	mappingOrder []string
	ids          *rand.Rand // message ids, receipt handles, task handles
	nextID       uint64
	// changed is closed, and replaced, whenever a message may have become
	// receivable, so that waiting long polls look again.
	changed chan struct{}
	// ticked is closed, and replaced, by every call of Tick, so that long
	// polls can see the clock pass their deadline.
	ticked chan struct{}
	// lastGaugeMinute is the last minute whose gauges were sampled.
	lastGaugeMinute int64
	// sched says when tick next has work on the queues.
	sched schedule
	// sources are the queues whose RedrivePolicy names each dead-letter queue, by its ARN, in
	// name order; nil until asked for after a queue was created, deleted or had its attributes
	// set (ListDeadLetterSourceQueues once scanned every queue per call).
	sources map[string][]*queue

	// stats and regions are shared by the account's regions.
	stats   *stats
	regions *regionSet
}

// New returns a Simulator configured by opts: the home region of its
// account, which serves the other regions too.
func New(opts Options) *Simulator {
	st := &stats{}
	st.init(newSource(opts.Seed, 0x6661756c74))
	s := newRegion(opts, st)
	opts.Region, opts.AccountID, opts.Clock, opts.Logger = s.region, s.accountID, s.clock, s.log
	s.regions = &regionSet{opts: opts, stats: st, byName: map[string]*Simulator{s.region: s}}
	return s
}

// newRegion returns the simulator of one region, with the account's stats.
func newRegion(opts Options, st *stats) *Simulator {
	s := &Simulator{
		stats:         st,
		region:        opts.Region,
		accountID:     opts.AccountID,
		clock:         opts.Clock,
		log:           opts.Logger,
		maxRealWait:   opts.MaxRealWait,
		queues:        make(map[string]*queue),
		deletedAt:     make(map[string]time.Time),
		tasks:         make(map[string]*moveTask),
		alarms:        make(map[string]*alarm),
		customMetrics: make(map[string]*customMetric),
		buses:         make(map[string]*eventBus),
		functions:     make(map[string]*lambdaFunction),
		mappings:      make(map[string]*eventSourceMapping),
		ids:           rand.New(newSource(opts.Seed, 0x5157_5349_4d)),
		changed:       make(chan struct{}),
		ticked:        make(chan struct{}),
		sched:         schedule{compact: make(map[*queue]bool), moving: make(map[*moveTask]bool)},
	}
	if s.region == "" {
		s.region = "us-east-1"
	}
	s.partition = partition(s.region)
	if s.accountID == "" {
		s.accountID = "000000000000"
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	_, s.realTime = s.clock.(realClock)
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxRealWait <= 0 {
		s.maxRealWait = time.Second
	}
	s.lastGaugeMinute = minuteOf(s.clock.Now()) - 1
	s.buses[defaultEventBus] = s.newEventBus(defaultEventBus, "", s.clock.Now())
	return s
}

// Run calls Tick every 100 ms until ctx ends. Use it with the real clock so
// that time-driven work happens between requests (visibility timeouts
// waking long polls, move tasks progressing, metric minutes closing).
func (s *Simulator) Run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Tick()
		}
	}
}

// Tick does all time-driven work up to Clock.Now(), in every region:
// messages whose delay or visibility timeout ended become receivable (and
// waiting long polls look again), expired messages are dropped, move tasks
// progress and the per-minute gauges are sampled and alarms evaluated. Every
// request does it first in its own region.
func (s *Simulator) Tick() {
	for _, r := range s.regions.all() {
		r.tickRegion()
	}
}

// tickRegion is Tick for s's region alone.
func (s *Simulator) tickRegion() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	close(s.ticked)
	s.ticked = make(chan struct{})
}

// tick is Tick with s.mu held.
func (s *Simulator) tick() {
	now := s.clock.Now()
	newMinute := minuteOf(now) > s.lastGaugeMinute
	s.sampleGauges(now)
	if newMinute {
		s.ageCustomMetrics(now)
	}
	wake := false
	if s.sched.dueAt(now) {
		s.sched.due = time.Time{}
		for _, q := range s.queues {
			q.expire(now)
			// Whether a message is receivable is computed from its visibleAt,
			// so delays and visibility timeouts need no work here beyond waking
			// the long polls that wait for them.
			if q.wakeDue(now) {
				wake = true
			}
			s.sched.at(q.nextWake)
			s.sched.at(q.nextExpiry)
		}
	}
	for q := range s.sched.compact {
		q.compact()
		delete(s.sched.compact, q)
	}
	s.progressMoveTasks(now)
	s.evaluateAlarms(now)
	if wake {
		s.notify()
	}
}

// schedule is what a region's tick has to do besides the per-minute work:
// when a queue next has a message to wake or expire, which queues have
// enough removed messages to compact, and which move tasks are active. Every
// request ticks first; scanning every queue each time made a region of
// 10,000 queues spend most of its time under its lock in tick.
type schedule struct {
	// due is the earliest nextWake or nextExpiry of any queue (zero: none).
	// It may be earlier than any queue's, never later.
	due     time.Time
	compact map[*queue]bool
	moving  map[*moveTask]bool
}

// at records that a queue has work at t (zero: none).
func (sc *schedule) at(t time.Time) {
	if !t.IsZero() && (sc.due.IsZero() || t.Before(sc.due)) {
		sc.due = t
	}
}

// dueAt reports whether some queue's work is due at now.
func (sc *schedule) dueAt(now time.Time) bool {
	return !sc.due.IsZero() && !now.Before(sc.due)
}

// notify wakes every waiting long poll. Call with s.mu held.
func (s *Simulator) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newMessageID returns a fresh id in the UUID form SQS uses.
func (s *Simulator) newMessageID() string {
	hi, lo := s.ids.Uint64(), s.ids.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
		hi>>32, (hi>>16)&0xffff, hi&0x0fff, 0x8000|(lo>>48)&0x3fff, lo&0xffffffffffff)
}

// newSource returns the random source of a seed: PCG on the seed and stream
// when the seed is not zero, reproducible; ChaCha8 on a random key otherwise.
func newSource(seed int64, stream uint64) rand.Source {
	if seed != 0 {
		return rand.NewPCG(uint64(seed), stream)
	}
	var key [32]byte
	crand.Read(key[:])
	return rand.NewChaCha8(key)
}

// arn returns the ARN of a resource of service in this region and account.
func (s *Simulator) arn(service, resource string) string {
	return s.servicePrefix(service) + s.region + ":" + s.accountID + ":" + resource
}

// servicePrefix starts the ARN of every resource of service in this
// region's partition: arn:aws:sqs:, arn:aws-cn:sqs:.
func (s *Simulator) servicePrefix(service string) string {
	return "arn:" + s.partition + ":" + service + ":"
}

// queueARN returns the ARN of the queue called name in this account.
func (s *Simulator) queueARN(name string) string {
	return s.arn("sqs", name)
}
