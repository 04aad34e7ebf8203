package views

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// sightFacts is what the collector stored of its own sight: each operation's last outcome and
// each loop's last cycle, per region.
type sightFacts struct {
	ops     map[[2]string]store.OperationStatus // by region, operation
	loops   map[[2]string]store.LoopStatus      // by region, loop
	regions []string                            // every region either names, sorted
}

// readSight reads the collector's sight from the store.
func (s *Service) readSight(ctx context.Context) (sightFacts, error) {
	ops, err := s.store.OperationStatuses(ctx)
	if err != nil {
		return sightFacts{}, err
	}
	loops, err := s.store.LoopStatuses(ctx)
	if err != nil {
		return sightFacts{}, err
	}
	f := sightFacts{ops: map[[2]string]store.OperationStatus{}, loops: map[[2]string]store.LoopStatus{}}
	seen := map[string]bool{}
	for _, o := range ops {
		f.ops[[2]string{o.Region, o.Operation}] = o
		seen[o.Region] = true
	}
	for _, l := range loops {
		f.loops[[2]string{l.Region, l.Loop}] = l
		seen[l.Region] = true
	}
	for r := range seen {
		f.regions = append(f.regions, r)
	}
	slices.Sort(f.regions)
	return f, nil
}

// failing returns the status of an operation whose newest call in region failed.
func (f sightFacts) failing(region, op string) (store.OperationStatus, bool) {
	o, ok := f.ops[[2]string{region, op}]
	return o, ok && o.Failing()
}

// loop returns a loop's last cycle in region.
func (f sightFacts) loop(region, loop string) (store.LoopStatus, bool) {
	l, ok := f.loops[[2]string{region, loop}]
	return l, ok
}

// cloudWatch reports whether the collector reads CloudWatch in region (a metrics cycle covered
// it), and the failure of its newest GetMetricData when that failed.
func (f sightFacts) cloudWatch(region string) (expected bool, failure *store.OperationStatus) {
	if _, ok := f.loop(region, store.RunMetrics); !ok {
		return false, nil
	}
	if o, failing := f.failing(region, "GetMetricData"); failing {
		return true, &o
	}
	return true, nil
}

// read reports whether op's newest call in region succeeded: what it reads is current.
func (f sightFacts) read(region, op string) bool {
	o, ok := f.ops[[2]string{region, op}]
	return ok && !o.LastSuccessAt.IsZero() && !o.Failing()
}

// called reports whether op was ever called in region.
func (f sightFacts) called(region, op string) bool {
	_, ok := f.ops[[2]string{region, op}]
	return ok
}

// topologyReads are the topology loop's sources of facts: the operations each reads with, and
// what the pages say when they fail.
var topologyReads = []struct {
	what  string
	ops   []string
	rules []string
}{
	{"Lambda consumers (event source mappings)", []string{"ListEventSourceMappings", "GetFunctionConfiguration"}, lambdaRules},
	{"EventBridge rules and targets", []string{"ListEventBuses", "ListRules", "ListTargetsByRule"}, eventBridgeRules},
	{"CloudWatch alarms", []string{"DescribeAlarms"}, alarmRules},
}

// topologyProblems lists, for a region the topology loop covers, the sources of facts whose
// newest call failed.
func (f sightFacts) topologyProblems(region string) []SightProblem {
	if _, ok := f.loop(region, store.RunTopology); !ok {
		return nil
	}
	var out []SightProblem
	for _, r := range topologyReads {
		for _, op := range r.ops {
			if _, failing := f.failing(region, op); failing {
				out = append(out, f.problem(region, false, r.what+" cannot be read", r.ops...))
				break
			}
		}
	}
	return out
}

// consumersProblem says why a queue's Lambda consumers may not be what the page shows: the
// listing fails, or it is not read at all. "" when they are current.
func (f sightFacts) consumersProblem(region string) string {
	if _, ok := f.loop(region, store.RunTopology); !ok {
		return "Lambda consumers have not been read yet."
	}
	for _, p := range f.topologyProblems(region) {
		if p.Operation == "ListEventSourceMappings" || p.Operation == "GetFunctionConfiguration" {
			return p.Problem
		}
	}
	if !f.called(region, "ListEventSourceMappings") {
		return "Lambda consumers are not read in " + region + " (--lambda=false, or no Lambda client)."
	}
	return ""
}

// adviceGaps lists the rules that cannot be checked in each region, and why.
func (f sightFacts) adviceGaps() []AdviceGap {
	out := []AdviceGap{}
	for _, region := range f.regions {
		if _, ok := f.loop(region, store.RunTopology); !ok {
			continue
		}
		for _, r := range topologyReads {
			var reason string
			for _, op := range r.ops {
				if o, failing := f.failing(region, op); failing {
					reason = fmt.Sprintf("%s cannot be read: %s fails with %s", r.what, op, safetext.Line(o.FailureCode, 64))
					break
				}
			}
			if reason == "" && !f.read(region, r.ops[0]) {
				reason = r.what + " are not read (turned off, or not read yet)"
			}
			if reason != "" {
				out = append(out, AdviceGap{Region: region, Rules: r.rules, Reason: reason})
			}
		}
	}
	return out
}

// problems lists what the last cycles could not read, blind regions first.
func (f sightFacts) problems() []SightProblem {
	out := []SightProblem{}
	for _, region := range f.regions {
		if l, ok := f.loop(region, store.RunDiscovery); ok && !succeeded(l) {
			p := f.problem(region, true, "cannot list its queues", "GetCallerIdentity", "ListQueues", "GetQueueUrl")
			out = append(out, p)
		}
		if l, ok := f.loop(region, store.RunAttributes); ok && l.FailedQueues > 0 {
			blind := l.FailedQueues >= l.Queues
			what := fmt.Sprintf("%d of %d queues could not be read in the last cycle", l.FailedQueues, l.Queues)
			if blind {
				what = "no queue could be read in the last cycle"
			}
			out = append(out, f.problem(region, blind, what, "GetQueueAttributes"))
		}
		if expected, failure := f.cloudWatch(region); expected && failure != nil {
			out = append(out, f.problem(region, false,
				"CloudWatch metrics are missing (oldest-message ages, sends, receives)", "GetMetricData"))
		}
		if l, ok := f.loop(region, store.RunPeek); ok && l.FailedQueues > 0 {
			out = append(out, f.problem(region, false,
				fmt.Sprintf("%d of %d message samples failed in the last pass", l.FailedQueues, l.Queues), "ReceiveMessage", "GetQueueAttributes"))
		}
		if l, ok := f.loop(region, store.RunMoveTasks); ok && l.FailedQueues > 0 {
			out = append(out, f.problem(region, false,
				fmt.Sprintf("the redrives of %d of %d dead-letter queues could not be followed", l.FailedQueues, l.Queues), "ListMessageMoveTasks"))
		}
		out = append(out, f.topologyProblems(region)...)
	}
	slices.SortStableFunc(out, func(a, b SightProblem) int {
		return cmp.Compare(btoi(b.Blind), btoi(a.Blind))
	})
	return out
}

// problem describes what a region's loop could not read, naming the first of ops whose newest
// call failed: its code, its message and the permission it needs.
func (f sightFacts) problem(region string, blind bool, what string, ops ...string) SightProblem {
	p := SightProblem{Region: region, Blind: blind, Problem: region + ": " + what}
	for _, op := range ops {
		o, failing := f.failing(region, op)
		if !failing {
			continue
		}
		p.Operation, p.Code, p.Permission = op, o.FailureCode, awscalls.Permission(op)
		p.Since = timePtr(o.LastSuccessAt)
		p.Problem += fmt.Sprintf(": %s failed with %s", op, safetext.Line(o.FailureCode, 64))
		if p.Permission != "" && awscalls.AccessDeniedCode(o.FailureCode) {
			p.Problem += " (needs " + p.Permission + ")"
		}
		if o.FailureMessage != "" && o.FailureMessage != o.FailureCode {
			p.Problem += ": " + safetext.Line(o.FailureMessage, 200)
		}
		break
	}
	return p
}

// succeeded reports whether a loop's last cycle read what it was for (the collector stamps its
// last success with the cycle's end then).
func succeeded(l store.LoopStatus) bool { return !l.LastSuccessAt.Before(l.FinishedAt) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// blindRegions returns the regions of problems toolq cannot see at all, sorted, never nil.
func blindRegions(problems []SightProblem) []string {
	out := []string{}
	for _, p := range problems {
		if p.Blind && !slices.Contains(out, p.Region) {
			out = append(out, p.Region)
		}
	}
	slices.Sort(out)
	return out
}

// Status is the status page and GET /api/v1/status: per region, every AWS operation toolq uses
// with its last success and last failure, and each collector loop's last cycle.
type Status struct {
	GeneratedAt time.Time      `json:"generatedAt"`
	Database    DatabaseStatus `json:"database"`
	Regions     []RegionStatus `json:"regions"` // never nil
	Sight       []SightProblem `json:"sight"`   // never nil
	// Replicas are the dashboards on this database heard from within the last hour, the
	// leader (the one that runs the collector) first. Never nil.
	Replicas []ReplicaStatus `json:"replicas"`
	// Archive is the archive's size and oldest entry; null when it cannot be read.
	Archive *ArchiveStats `json:"archive"`
}

// ReplicaStatus is one dashboard process on the database.
type ReplicaStatus struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Version     string    `json:"version"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
	// Alive: its last heartbeat is recent (younger than ReplicaAliveWithin).
	Alive bool `json:"alive"`
	// Leader: it holds the collector's lead now, since LeaderSince. On PostgreSQL the lead is
	// the advisory lock, and the leader the replica whose session the database says holds it
	// (not what a heartbeat said), so that a leader that dies stops being one the moment the
	// server frees its lock and at most one replica ever leads; a leader whose heartbeats
	// stopped while its session holds on (a hung process) is shown leading and not alive. On
	// SQLite the one dashboard leads while it is alive.
	Leader      bool       `json:"leader"`
	LeaderSince *time.Time `json:"leaderSince"`
}

// ReplicaAliveWithin is how recent a replica's heartbeat must be for it to count as alive: two of
// replicas.DefaultCheck's 5-s heartbeats, so that a replica that stops is shown gone within 10 s.
const ReplicaAliveWithin = 10 * time.Second

// DatabaseStatus says whether toolq's own database is sound: its file still the one opened, no
// table or column gone. Problem is safe to show, "" when OK.
type DatabaseStatus struct {
	// Engine is "sqlite" (one dashboard) or "postgres" (replicas).
	Engine  string `json:"engine"`
	OK      bool   `json:"ok"`
	Problem string `json:"problem,omitempty"`
}

// databaseStatus checks the store; a problem is told in fixed words, never the store's text.
// DatabaseAnswers reports whether the database answers, as the one toolq opened with its tables:
// the server tells a store outage (503) from a failure of its own (500) by it.
func (s *Service) DatabaseAnswers(ctx context.Context) bool { return s.databaseStatus(ctx).OK }

func (s *Service) databaseStatus(ctx context.Context) DatabaseStatus {
	out := DatabaseStatus{Engine: s.store.Dialect()}
	switch err := s.store.Ping(ctx); {
	case err == nil:
		out.OK = true
	case errors.Is(err, store.ErrGone):
		out.Problem = "the database file was deleted or replaced while toolq ran: what toolq writes now is lost when it stops; restore the file and restart toolq"
	case errors.Is(err, store.ErrSchema):
		out.Problem = "a table or column of the database went missing while toolq ran: actions are refused; restore the database from a backup and restart toolq"
	default:
		out.Problem = "the database does not answer"
	}
	return out
}

// RegionStatus is one region of the status page.
type RegionStatus struct {
	Region     string            `json:"region"`
	Blind      bool              `json:"blind"`
	Operations []OperationStatus `json:"operations"` // every operation toolq uses, in awscalls' order
	Loops      []LoopStatus      `json:"loops"`
}

// OperationStatus is one AWS operation in one region.
type OperationStatus struct {
	Operation  string `json:"operation"`
	Permission string `json:"permission"`
	Purpose    string `json:"purpose"`
	// Action: only an operator's redrive calls it, so it is listed for its permission alone
	// (the actions' calls are counted in toolq_aws_calls_total).
	Action            bool       `json:"action"`
	Called            bool       `json:"called"`
	Failing           bool       `json:"failing"`
	LastSuccessAt     *time.Time `json:"lastSuccessAt"`
	LastFailureAt     *time.Time `json:"lastFailureAt"`
	FailureCode       string     `json:"failureCode,omitempty"`
	FailureMessage    string     `json:"failureMessage,omitempty"`
	FailureHTTPStatus int        `json:"failureHttpStatus,omitempty"`
	FailuresInRow     int        `json:"failuresInRow"`
	BackoffUntil      *time.Time `json:"backoffUntil"` // not called before then
}

// LoopStatus is one collector loop's last cycle in one region.
type LoopStatus struct {
	Loop          string     `json:"loop"`
	FinishedAt    time.Time  `json:"finishedAt"`
	LastSuccessAt *time.Time `json:"lastSuccessAt"`
	OK            bool       `json:"ok"`
	Queues        int        `json:"queues"`
	FailedQueues  int        `json:"failedQueues"`
	Calls         int        `json:"calls"`
	Failures      int        `json:"failures"`
}

// loopOrder is the order of the loops on the status page.
var loopOrder = []string{store.RunDiscovery, store.RunAttributes, store.RunMetrics, store.RunPeek, store.RunMoveTasks, store.RunTopology}

// Status returns what toolq can and cannot see, region by region, as the current snapshot has
// it, with the database and the replicas as they are now.
// A database that is not sound is what the status page must say above all: then what cannot be
// read is left empty rather than failing the page.
func (s *Service) Status(ctx context.Context) (Status, error) {
	now := s.clock()
	out := Status{GeneratedAt: now, Database: s.databaseStatus(ctx), Regions: []RegionStatus{}, Sight: []SightProblem{}, Replicas: []ReplicaStatus{}}
	snap, err := s.Snapshot(ctx)
	if err == nil {
		out.Regions, out.Sight = snap.Regions(now), snap.Overview.Sight
		out.Replicas, err = s.replicas(ctx, now)
	}
	if st, aerr := s.ArchiveStats(ctx); aerr == nil {
		out.Archive = &st
	}
	if err != nil && out.Database.OK {
		return Status{}, err
	}
	return out, nil
}

// Regions returns, for each region, every AWS operation toolq uses with its last success and
// failure (a backoff while it lasts at now), and each collector loop's last cycle, as the
// snapshot read them.
func (snap *Snapshot) Regions(now time.Time) []RegionStatus {
	f := snap.readings.sight
	out := []RegionStatus{}
	blind := snap.Overview.Freshness.Blind
	for _, region := range f.regions {
		rs := RegionStatus{Region: region, Blind: slices.Contains(blind, region), Operations: []OperationStatus{}, Loops: []LoopStatus{}}
		for _, op := range awscalls.Operations {
			v := OperationStatus{Operation: op.Name, Permission: op.Permission, Purpose: op.Purpose, Action: op.Action}
			if o, ok := f.ops[[2]string{region, op.Name}]; ok {
				v.Called = true
				v.Failing = o.Failing()
				v.LastSuccessAt, v.LastFailureAt = timePtr(o.LastSuccessAt), timePtr(o.LastFailureAt)
				v.FailureCode, v.FailureMessage, v.FailureHTTPStatus = o.FailureCode, o.FailureMessage, o.FailureStatus
				v.FailuresInRow = o.FailuresInRow
				if o.BackoffUntil.After(now) {
					v.BackoffUntil = timePtr(o.BackoffUntil)
				}
			}
			rs.Operations = append(rs.Operations, v)
		}
		for _, name := range loopOrder {
			if l, ok := f.loop(region, name); ok {
				rs.Loops = append(rs.Loops, LoopStatus{
					Loop: name, FinishedAt: l.FinishedAt.UTC(), LastSuccessAt: timePtr(l.LastSuccessAt), OK: succeeded(l),
					Queues: l.Queues, FailedQueues: l.FailedQueues, Calls: l.Calls, Failures: l.Failures,
				})
			}
		}
		out = append(out, rs)
	}
	return out
}

// replicas lists the dashboards heard from within the last hour.
func (s *Service) replicas(ctx context.Context, now time.Time) ([]ReplicaStatus, error) {
	rs, err := s.store.Replicas(ctx, now.Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	byLock := s.store.Dialect() == "postgres"
	out := make([]ReplicaStatus, 0, len(rs))
	for _, r := range rs {
		alive := now.Sub(r.HeartbeatAt) < ReplicaAliveWithin
		// On SQLite the rows are all there is, and a row left by a killed process says it led.
		leader := r.Leader && (byLock || alive)
		v := ReplicaStatus{ID: r.ID, Host: r.Host, Version: r.Version, StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt,
			Alive: alive, Leader: leader}
		if leader {
			v.LeaderSince = timePtr(r.LeaderSince)
		}
		out = append(out, v)
	}
	return out, nil
}

// NotReadyError is returned by Ready while the dashboard cannot serve what it should; Reason is
// safe to show.
type NotReadyError struct{ Reason string }

func (e *NotReadyError) Error() string { return "views: not ready: " + e.Reason }

// Ready reports whether the dashboard can serve its pages: the store answers (its file still the
// one opened, none of its tables gone) and a first discovery has ended, whatever AWS answered it.
// AWS trouble is shown on the pages, not hidden by taking the dashboard out of service. The
// error is a *NotReadyError.
func (s *Service) Ready(ctx context.Context) error {
	if db := s.databaseStatus(ctx); !db.OK {
		return &NotReadyError{Reason: db.Problem}
	}
	_, err := s.store.LatestFinishedRun(ctx, store.RunDiscovery)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &NotReadyError{Reason: "the first discovery has not ended yet"}
	case err != nil:
		return &NotReadyError{Reason: "the database does not answer"}
	}
	return nil
}
