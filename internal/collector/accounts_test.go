package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// twoAccounts are three simulated accounts on one endpoint: home (the default, reached with
// the ambient credentials), prod (111111111111, through a role with an external id) and
// broken (222222222222, whose role nobody may assume), with the clients of each built the way
// `serve --account` builds them, stock STS and stscreds included.
type twoAccounts struct {
	ctx          context.Context
	clock        *sqsim.ManualClock
	home, prod   *sqsim.Simulator
	homeClients  awsconf.Clients
	prodClients  awsconf.Clients
	brokenClient awsconf.Clients
	store        *store.Store
}

const (
	prodRole   = "arn:aws:iam::111111111111:role/toolq-reader"
	brokenRole = "arn:aws:iam::222222222222:role/toolq-missing"
)

func newTwoAccounts(t testing.TB) *twoAccounts {
	t.Helper()
	ctx := context.Background()
	clock := sqsim.NewManualClock(t0)
	home := sqsim.New(sqsim.Options{Clock: clock, Seed: 7})
	prod := sqsim.New(sqsim.Options{Clock: clock, Seed: 8, AccountID: "111111111111"})
	broken := sqsim.New(sqsim.Options{Clock: clock, Seed: 9, AccountID: "222222222222"})
	accounts := sqsim.NewAccounts(home, prod, broken)
	if err := accounts.AddRole(prodRole, "ext-1"); err != nil {
		t.Fatal(err)
	}
	opts := inMemory(t, accounts, awsconf.Options{Region: "us-east-1", StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond})
	a := &twoAccounts{ctx: ctx, clock: clock, home: home, prod: prod}
	var err error
	if a.homeClients, err = awsconf.Load(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if a.prodClients, err = awsconf.LoadAssumed(ctx, opts, prodRole, "ext-1"); err != nil {
		t.Fatal(err)
	}
	if a.brokenClient, err = awsconf.LoadAssumed(ctx, opts, brokenRole, ""); err != nil {
		t.Fatal(err)
	}
	a.store = storetest.Open(t)
	return a
}

func (a *twoAccounts) create(t testing.TB, client *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := client.CreateQueue(a.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func (a *twoAccounts) region(account, id string, c awsconf.Clients) Region {
	return Region{Name: "us-east-1", Account: account, AccountID: id, SQS: c.SQS, CloudWatch: c.CloudWatch, STS: c.STS}
}

// TestDiscoveryAcrossAccounts: one collector watches two accounts of one region, each through
// its own credentials (one an assumed role), plus a third whose role cannot be assumed. The
// queues of both are stored under their account, a same-named queue once per account and
// resolved only by ARN; a dead-letter queue is adopted in its own account; depths are each
// account's own; the third account's failure is its own, visible, and never the others'.
func TestDiscoveryAcrossAccounts(t *testing.T) {
	t.Parallel()
	a := newTwoAccounts(t)
	a.create(t, a.homeClients.SQS, "tool-calls", nil)
	a.create(t, a.homeClients.SQS, "home-only", nil)
	a.create(t, a.prodClients.SQS, "tool-calls-dlq", nil)
	prodCalls := a.create(t, a.prodClients.SQS, "tool-calls", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:111111111111:tool-calls-dlq","maxReceiveCount":3}`})
	for range 2 {
		if _, err := a.prodClients.SQS.SendMessage(a.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(prodCalls), MessageBody: aws.String(`{"toolName":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{
		Regions: []Region{
			a.region("home", "", a.homeClients),
			a.region("prod", "111111111111", a.prodClients),
			a.region("broken", "222222222222", a.brokenClient),
		},
		Store: a.store, Now: a.clock.Now, Backfill: -1,
		// Only the prod account's tool-calls is a source: the DLQ comes with it.
		QueuePrefixes: []string{"tool-calls", "home-"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(a.ctx); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if err := c.CycleAttributes(a.ctx); err != nil {
		t.Fatalf("CycleAttributes: %v", err)
	}

	queues, err := a.store.ListQueues(a.ctx, store.QueueFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	byKey := map[string]store.Queue{}
	for _, q := range queues {
		k := q.Account + "/" + q.AccountID + "/" + q.Name
		got = append(got, k)
		byKey[k] = q
	}
	slices.Sort(got)
	want := []string{"home/000000000000/home-only", "home/000000000000/tool-calls",
		"prod/111111111111/tool-calls", "prod/111111111111/tool-calls-dlq"}
	if !slices.Equal(got, want) {
		t.Fatalf("stored queues = %v, want %v", got, want)
	}

	// Depths are each account's own.
	depths, err := a.store.LatestAttributeSamples(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := depths[byKey["prod/111111111111/tool-calls"].ID]; d.Visible != 2 {
		t.Errorf("prod tool-calls depth = %+v, want 2 visible", d)
	}
	if d := depths[byKey["home/000000000000/tool-calls"].ID]; d.Visible != 0 {
		t.Errorf("home tool-calls depth = %+v, want 0 visible", d)
	}

	// A name in two accounts is ambiguous; each ARN is one queue.
	if _, err := a.store.ResolveQueue(a.ctx, "tool-calls"); !errors.Is(err, store.ErrAmbiguous) {
		t.Errorf("ResolveQueue(tool-calls) error = %v, want ErrAmbiguous", err)
	}
	for _, k := range []string{"home/000000000000/tool-calls", "prod/111111111111/tool-calls"} {
		q, err := a.store.ResolveQueue(a.ctx, byKey[k].ARN)
		if err != nil || q.ID != byKey[k].ID {
			t.Errorf("ResolveQueue(%s) = %d, %v; want queue %d", byKey[k].ARN, q.ID, err, byKey[k].ID)
		}
	}
	if q, err := a.store.ResolveQueue(a.ctx, "home-only"); err != nil || q.Account != "home" {
		t.Errorf("ResolveQueue(home-only) = %+v, %v", q, err)
	}

	// The sight, per account: the broken one failed to say who it is, and is blind; the others
	// listed and are not.
	ops, err := a.store.OperationStatuses(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	status := map[[2]string]store.OperationStatus{}
	for _, o := range ops {
		status[[2]string{o.Region, o.Operation}] = o
	}
	if o := status[[2]string{"broken/us-east-1", opGetCallerIdentity}]; !o.Failing() || o.FailureCode != "AccessDenied" {
		t.Errorf("broken GetCallerIdentity = %+v, want failing with AccessDenied", o)
	}
	if _, called := status[[2]string{"broken/us-east-1", opListQueues}]; called {
		t.Error("ListQueues called in the account whose identity check failed")
	}
	for _, scope := range []string{"home/us-east-1", "prod/us-east-1"} {
		for _, op := range []string{opGetCallerIdentity, opListQueues} {
			if o, ok := status[[2]string{scope, op}]; !ok || o.Failing() || o.LastSuccessAt.IsZero() {
				t.Errorf("%s %s = %+v, %v; want a success", scope, op, o, ok)
			}
		}
	}
	loops, err := a.store.LoopStatuses(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	discovery := map[string]store.LoopStatus{}
	for _, l := range loops {
		if l.Loop == store.RunDiscovery {
			discovery[l.Region] = l
		}
	}
	if l, ok := discovery["broken/us-east-1"]; !ok || !l.LastSuccessAt.IsZero() {
		t.Errorf("broken discovery = %+v, %v; want covered and never successful", l, ok)
	}
	for _, scope := range []string{"home/us-east-1", "prod/us-east-1"} {
		if l := discovery[scope]; l.LastSuccessAt.IsZero() {
			t.Errorf("%s discovery = %+v, want a success", scope, l)
		}
	}

	// The views show the broken account's region blind, with why, and the others not.
	ov, err := views.New(views.Options{Store: a.store, Now: a.clock.Now}).Overview(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ov.Freshness.Blind, []string{"broken/us-east-1"}) {
		t.Errorf("blind = %v, want the broken account's region alone", ov.Freshness.Blind)
	}
	if len(ov.Sight) == 0 || ov.Sight[0].Region != "broken/us-east-1" || ov.Sight[0].Operation != opGetCallerIdentity || ov.Sight[0].Permission != "sts:AssumeRole" {
		t.Errorf("sight = %+v, want the broken account's failed identity check first", ov.Sight)
	}
	for _, q := range ov.Queues {
		if q.Account == "broken" {
			t.Errorf("queue %s listed under the broken account", q.Name)
		}
	}

	// The cost estimate is split by account.
	cost, err := a.store.GetCostEstimate(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var sum float64
	for _, ac := range cost.Accounts {
		names = append(names, ac.Account)
		sum += ac.TotalUSDPerDay
	}
	if !slices.Equal(names, []string{"home", "prod", "broken"}) {
		t.Errorf("cost accounts = %v", names)
	}
	if diff := sum - cost.TotalUSDPerDay; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("accounts' costs sum to %v, the estimate is %v", sum, cost.TotalUSDPerDay)
	}
}

// TestIdentityOfAnotherAccount: credentials that reach another account than the role's leave
// the scope blind, with a failure that says so, and list nothing under the wrong account.
func TestIdentityOfAnotherAccount(t *testing.T) {
	t.Parallel()
	a := newTwoAccounts(t)
	a.create(t, a.homeClients.SQS, "tool-calls", nil)
	c, err := New(Options{
		// The home account's credentials, configured as prod's.
		Regions: []Region{a.region("prod", "111111111111", a.homeClients)},
		Store:   a.store, Now: a.clock.Now, Backfill: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(a.ctx); err != nil {
		t.Fatal(err)
	}
	queues, err := a.store.ListQueues(a.ctx, store.QueueFilter{})
	if err != nil || len(queues) != 0 {
		t.Errorf("stored queues = %v, %v; want none", queues, err)
	}
	st, failing := c.failing("prod/us-east-1", opGetCallerIdentity)
	if !failing || st.FailureCode != "WrongAccount" {
		t.Errorf("GetCallerIdentity = %+v, %v; want failing with WrongAccount", st, failing)
	}
}

// BenchmarkAttributeCycleTwoAccounts measures one attribute cycle over 1,000 queues split
// between two accounts of one region, the second through an assumed role, with 20 ms per call:
// against BenchmarkAttributeCycle1000Queues, what signing with the role's cached credentials
// and the per-scope bookkeeping add (the cycle's budget, Concurrency, is shared by the scopes).
func BenchmarkAttributeCycleTwoAccounts(b *testing.B) {
	a := newTwoAccounts(b)
	for i := range 500 {
		a.create(b, a.homeClients.SQS, fmt.Sprintf("tool-calls-%04d", i), nil)
		a.create(b, a.prodClients.SQS, fmt.Sprintf("tool-calls-%04d", i), nil)
	}
	c, err := New(Options{
		Regions: []Region{a.region("home", "", a.homeClients), a.region("prod", "111111111111", a.prodClients)},
		Store:   a.store, Now: a.clock.Now, Backfill: -1, Concurrency: DefaultConcurrency,
	})
	must(b, err)
	must(b, c.Discover(a.ctx))
	for _, sim := range []*sqsim.Simulator{a.home, a.prod} {
		sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
		sim.ResetCallCounts()
	}
	b.ReportAllocs()
	for b.Loop() {
		must(b, c.CycleAttributes(a.ctx))
		a.clock.Advance(DefaultAttributesInterval)
	}
	b.ReportMetric(float64(a.home.CallCount("GetQueueAttributes")+a.prod.CallCount("GetQueueAttributes"))/float64(b.N), "GetQueueAttributes/op")
}
