package collector

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/sqsim"
)

func TestSeveralRegionsInOneCollector(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // us-east-1
	e.createQueue("web-search", nil)

	tokyo := sqsim.New(sqsim.Options{Region: "ap-northeast-1", Clock: e.clock, Seed: 8})
	clients, err := awsconf.Load(context.Background(), inMemory(t, tokyo, awsconf.Options{Region: "ap-northeast-1", StaticCredentials: true, MaxBackoff: time.Millisecond}))
	must(t, err)
	sq, cw := clients.SQS, clients.CloudWatch
	// The same name in another region is another queue.
	_, err = sq.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("web-search")})
	must(t, err)

	c := e.collector(func(o *Options) {
		o.Regions = append(o.Regions, Region{Name: "ap-northeast-1", SQS: sq, CloudWatch: cw})
	})
	must(t, c.Discover(e.ctx))
	must(t, c.CycleAttributes(e.ctx))
	must(t, c.CycleMetrics(e.ctx))
	qs, err := e.store.GetQueuesByName(e.ctx, "web-search")
	must(t, err)
	regions := map[string]bool{}
	for _, q := range qs {
		regions[q.Region] = true
	}
	if len(qs) != 2 || !regions["us-east-1"] || !regions["ap-northeast-1"] {
		t.Errorf("queues = %+v, want web-search in both regions", qs)
	}
	if e.sim.CallCount("GetMetricData") != 1 || tokyo.CallCount("GetMetricData") != 1 {
		t.Errorf("each region's CloudWatch should be asked about its own queues once")
	}
	cost, err := e.store.GetCostEstimate(e.ctx)
	must(t, err)
	want := EstimateCost(CostConfig{Regions: 2, ListingsPerRegion: 1, Cadences: defaultCadences, CloudWatch: true},
		make([]CostQueue, 2), e.clock.Now())
	if !near(cost.TotalUSDPerDay, want.TotalUSDPerDay) {
		t.Errorf("one estimate for both regions = %+v, want %+v", cost, want)
	}
}
