package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The demo's queues. Each shows one situation the dashboard must handle.
const (
	// QueueToolCalls carries ordered session calls: FIFO, MessageGroupId = sessionId.
	QueueToolCalls = "tool-calls.fifo"
	// QueueToolCallsDLQ is the FIFO dead-letter queue of QueueToolCalls.
	QueueToolCallsDLQ = "tool-calls-dlq.fifo"
	// QueueWebSearch is a standard queue of independent calls with a DLQ.
	QueueWebSearch = "web-search"
	// QueueWebSearchDLQ is the dead-letter queue of QueueWebSearch.
	QueueWebSearchDLQ = "web-search-dlq"
	// QueueNotifications has no DLQ: its poison pills circulate until the worker gives up.
	QueueNotifications = "notifications"
	// QueueExports keeps messages 4 days, longer than its DLQ does.
	QueueExports = "exports"
	// QueueExportsDLQ keeps messages one hour only: a misconfiguration that loses them.
	QueueExportsDLQ = "exports-dlq"
	// QueueToolCallAudit receives the ToolCallCompleted events of RuleToolCallCompleted; its
	// MaximumMessageSize (8 KiB) refuses events that carry a large result.
	QueueToolCallAudit = "tool-call-audit"
	// QueueToolCallAuditDLQ is the rule target's dead-letter queue: the events EventBridge could
	// not deliver, with its failure attributes. No RedrivePolicy names it.
	QueueToolCallAuditDLQ = "tool-call-audit-dlq"
)

// Queue is one queue of the demo topology as created.
type Queue struct {
	Name string
	URL  string
	ARN  string
	FIFO bool
	// VisibilityTimeout and Retention are the queue's attributes as set by Setup.
	VisibilityTimeout time.Duration
	Retention         time.Duration
	// DeadLetterQueue is the name of its DLQ, empty when it has none.
	DeadLetterQueue string
	// MaxReceiveCount is the redrive policy's count; zero without a DLQ.
	MaxReceiveCount int
}

// Topology is the set of demo queues, dead-letter queues first.
type Topology struct {
	Queues []Queue
}

// Queue returns the queue called name.
func (t Topology) Queue(name string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// queueSpec is what Setup creates for one queue and how the demo's workers consume it.
type queueSpec struct {
	name              string
	fifo              bool
	visibilityTimeout time.Duration
	retention         time.Duration
	deadLetter        string
	maxReceiveCount   int

	// workers is the number of consumer loops; zero for a DLQ, which nobody consumes.
	workers int
	// batch is how many calls one worker runs at once, and so its MaxNumberOfMessages at
	// most. FIFO workers take one message at a time so that a failing head blocks only its
	// group and the messages behind it keep their receive counts.
	batch int
	// extendVisibility makes workers of slow tools keep their messages invisible with
	// ChangeMessageVisibility while they run, as the seeds advise.
	extendVisibility bool
	// giveUpAfter makes workers of a queue without DLQ delete a call after that many
	// deliveries, the common (and lossy) stand-in for a DLQ.
	giveUpAfter int
	// maximumMessageSize is the queue's MaximumMessageSize in bytes; 0 leaves SQS's default.
	maximumMessageSize int
	// pollEvery makes the workers poll on a schedule instead of long-polling all the time: about
	// every pollEvery (two thirds to four thirds of it, drawn from the seed, the same for every
	// worker of the queue, so that they poll together) they receive until the queue answers
	// empty, then sleep until the next poll, as a batch or cron-style consumer does. A failed head then waits visible between its retries,
	// which is when a sample can see it and the session it blocks (a long-polling pool takes it
	// back the instant it shows, so no sample ever would).
	pollEvery time.Duration
	// auditLog makes the workers an audit logger: they record each event and delete it.
	auditLog bool
	// eventTargetDLQ marks an EventBridge target's dead-letter queue: a DLQ no RedrivePolicy names.
	eventTargetDLQ bool
	// recordFailures makes workers write why a tool rejected a call into the call (see
	// worker.recordFailure). Only on standard queues: sending a FIFO call again would put it
	// behind the rest of its session.
	recordFailures bool
}

const day = 24 * time.Hour

// fifoPollEvery is the mean spacing of tool-calls.fifo's polls (see queueSpec.pollEvery).
const fifoPollEvery = 15 * time.Second

// redelivery is how long a failed message of spec waits before a worker receives it again:
// its visibility timeout, rounded up to the workers' next poll when they poll on a schedule.
func (spec queueSpec) redelivery() time.Duration {
	if spec.pollEvery <= 0 {
		return spec.visibilityTimeout
	}
	ticks := (spec.visibilityTimeout + spec.pollEvery - 1) / spec.pollEvery
	return max(ticks, 1) * spec.pollEvery
}

// demoQueues returns the specs of the demo topology, DLQs first because their ARNs go into
// the sources' redrive policies. A non-zero visibility overrides every source queue's timeout
// and the schedule of the workers that poll on one.
func demoQueues(visibility time.Duration) []queueSpec {
	vt := func(d time.Duration) time.Duration {
		if visibility > 0 {
			return visibility
		}
		return d
	}
	return []queueSpec{
		{name: QueueToolCallsDLQ, fifo: true, retention: 14 * day},
		{name: QueueWebSearchDLQ, retention: 14 * day},
		{name: QueueExportsDLQ, retention: time.Hour},
		{name: QueueToolCallAuditDLQ, retention: 14 * day, eventTargetDLQ: true},
		// Short visibility (kept up by heartbeats while a call runs) and scheduled polls leave a
		// failed head visible most of the time between its retries, for a sample to see; five
		// receives give the dashboard's samples room under their own limit (maxReceiveCount − 2).
		{name: QueueToolCalls, fifo: true, visibilityTimeout: vt(2 * time.Second), retention: 4 * day,
			deadLetter: QueueToolCallsDLQ, maxReceiveCount: 5, workers: 3, batch: 1, pollEvery: vt(fifoPollEvery),
			extendVisibility: true},
		{name: QueueWebSearch, visibilityTimeout: vt(6 * time.Second), retention: 4 * day,
			deadLetter: QueueWebSearchDLQ, maxReceiveCount: 3, workers: 2, batch: 10, recordFailures: true},
		{name: QueueNotifications, visibilityTimeout: vt(5 * time.Second), retention: day,
			workers: 1, batch: 10, giveUpAfter: 8},
		{name: QueueExports, visibilityTimeout: vt(10 * time.Second), retention: 4 * day,
			deadLetter: QueueExportsDLQ, maxReceiveCount: 3, workers: 1, batch: 5, extendVisibility: true, recordFailures: true},
		{name: QueueToolCallAudit, visibilityTimeout: vt(30 * time.Second), retention: day,
			maximumMessageSize: auditMaxMessageSize, workers: 1, batch: 10, auditLog: true},
	}
}

// Setup creates the demo topology with its default visibility timeouts and returns it. It is
// idempotent: existing queues get their attributes set again.
func Setup(ctx context.Context, client *sqs.Client) (Topology, error) {
	return setup(ctx, client, demoQueues(0), "")
}

// SetupPrefixed is Setup with every queue's name in SQS prefixed (Options.QueuePrefix); the
// topology still names them as Setup does.
func SetupPrefixed(ctx context.Context, client *sqs.Client, prefix string) (Topology, error) {
	return setup(ctx, client, demoQueues(0), prefix)
}

func setup(ctx context.Context, client *sqs.Client, specs []queueSpec, prefix string) (Topology, error) {
	var topo Topology
	for _, spec := range specs {
		attrs := map[string]string{
			string(types.QueueAttributeNameMessageRetentionPeriod):        seconds(spec.retention),
			string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds): "20",
		}
		if spec.visibilityTimeout > 0 {
			attrs[string(types.QueueAttributeNameVisibilityTimeout)] = seconds(spec.visibilityTimeout)
		}
		if spec.maximumMessageSize > 0 {
			attrs[string(types.QueueAttributeNameMaximumMessageSize)] = strconv.Itoa(spec.maximumMessageSize)
		}
		if spec.fifo {
			attrs[string(types.QueueAttributeNameContentBasedDeduplication)] = "false"
		}
		if spec.deadLetter != "" {
			dlq, ok := topo.Queue(spec.deadLetter)
			if !ok {
				return Topology{}, fmt.Errorf("traffic: setup %s: dead-letter queue %s must come first", spec.name, spec.deadLetter)
			}
			policy, err := json.Marshal(map[string]any{"deadLetterTargetArn": dlq.ARN, "maxReceiveCount": spec.maxReceiveCount})
			if err != nil {
				return Topology{}, fmt.Errorf("traffic: setup %s: %w", spec.name, err)
			}
			attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
		}
		url, err := ensureQueue(ctx, client, prefix+spec.name, spec.fifo, attrs)
		if err != nil {
			return Topology{}, err
		}
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			return Topology{}, fmt.Errorf("traffic: setup %s: get arn: %w", spec.name, err)
		}
		topo.Queues = append(topo.Queues, Queue{
			Name:              spec.name,
			URL:               url,
			ARN:               out.Attributes[string(types.QueueAttributeNameQueueArn)],
			FIFO:              spec.fifo,
			VisibilityTimeout: spec.visibilityTimeout,
			Retention:         spec.retention,
			DeadLetterQueue:   spec.deadLetter,
			MaxReceiveCount:   spec.maxReceiveCount,
		})
	}
	return topo, nil
}

// ensureQueue creates the queue, or, when it exists with other attributes, sets them.
// CreateQueue alone answers QueueNameExists when attributes differ from the existing queue's.
func ensureQueue(ctx context.Context, client *sqs.Client, name string, fifo bool, attrs map[string]string) (string, error) {
	create := map[string]string{}
	for k, v := range attrs {
		create[k] = v
	}
	if fifo {
		create[string(types.QueueAttributeNameFifoQueue)] = "true"
	}
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: create})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	if _, ok := errors.AsType[*types.QueueNameExists](err); !ok {
		return "", fmt.Errorf("traffic: create queue %s: %w", name, err)
	}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("traffic: get url of %s: %w", name, err)
	}
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs}); err != nil {
		return "", fmt.Errorf("traffic: set attributes of %s: %w", name, err)
	}
	return aws.ToString(got.QueueUrl), nil
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// SourceQueueNames returns the names of the demo's source queues (those no queue uses as its
// dead-letter queue, and no EventBridge target), which the demo opts in to message sampling.
func SourceQueueNames() []string {
	specs := demoQueues(0)
	dlqs := make(map[string]bool)
	for _, q := range specs {
		if q.deadLetter != "" {
			dlqs[q.deadLetter] = true
		}
		if q.eventTargetDLQ {
			dlqs[q.name] = true
		}
	}
	var names []string
	for _, q := range specs {
		if !dlqs[q.name] {
			names = append(names, q.name)
		}
	}
	return names
}
