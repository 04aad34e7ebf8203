package sqsim

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"time"
)

// DefaultMoveRate is the rate, in messages per second, of a move task
// started without MaxNumberOfMessagesPerSecond. SQS then picks a rate from
// the backlog; the simulator picks this fixed one so tests can predict it.
const DefaultMoveRate = 100

// maxMoveRate is the highest MaxNumberOfMessagesPerSecond SQS accepts.
const maxMoveRate = 500

// maxMoveTaskDuration is how long SQS lets a move task run.
const maxMoveTaskDuration = 36 * time.Hour

// moveTaskHistory is how many tasks per source queue the simulator keeps.
const moveTaskHistory = 10

// Move task statuses, as ListMessageMoveTasks reports them.
const (
	moveTaskRunning    = "RUNNING"
	moveTaskCompleted  = "COMPLETED"
	moveTaskCancelling = "CANCELLING"
	moveTaskCancelled  = "CANCELLED"
	moveTaskFailed     = "FAILED"
)

// moveTask moves the messages a dead-letter queue held when the task
// started to their destination, at most rate per second of the clock.
type moveTask struct {
	handle         string
	source         *queue
	destinationARN string // empty: each message's DeadLetterQueueSourceArn
	rate           int
	rateGiven      bool
	startedAt      time.Time
	status         string
	failureReason  string
	cancelledAt    time.Time
	toMove         int
	moved          int
	// pending are the messages still to move, in the source's order.
	pending []*message
}

func (t *moveTask) active() bool {
	return t.status == moveTaskRunning || t.status == moveTaskCancelling
}

func (t *moveTask) finish(status, reason string) {
	t.status, t.failureReason, t.pending = status, reason, nil
}

// taskHandle is what a TaskHandle encodes, as in SQS: the task's id and its
// source queue's ARN.
type taskHandle struct {
	TaskID    string `json:"taskId"`
	SourceArn string `json:"sourceArn"`
}

type startMessageMoveTaskInput struct {
	SourceArn                    string
	DestinationArn               string
	MaxNumberOfMessagesPerSecond *int32
}

type startMessageMoveTaskOutput struct {
	TaskHandle string
}

func (s *Simulator) startMessageMoveTask(rc *request, in *startMessageMoveTaskInput) (any, *apiError) {
	if in.SourceArn == "" {
		return nil, errMissingParameter("SourceArn")
	}
	source := s.queueByARN(in.SourceArn)
	if source == nil {
		return nil, errResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	if len(s.deadLetterSources(source)) == 0 {
		return nil, errInvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
	}
	if in.DestinationArn != "" {
		dest := s.queueByARN(in.DestinationArn)
		if dest == nil {
			return nil, errResourceNotFound("The resource that you specified for the DestinationArn parameter doesn't exist.")
		}
		if dest == source {
			return nil, errInvalidParameterValue("The destination queue must differ from the source queue.")
		}
		if dest.attrs.fifo != source.attrs.fifo {
			return nil, errInvalidParameterValue("The source and destination queues must be of the same type.")
		}
	}
	t := &moveTask{
		source:         source,
		destinationARN: in.DestinationArn,
		rate:           DefaultMoveRate,
		startedAt:      s.clock.Now(),
		status:         moveTaskRunning,
	}
	if r := in.MaxNumberOfMessagesPerSecond; r != nil {
		if *r < 1 || *r > maxMoveRate {
			return nil, errInvalidParameterValue("Value %d for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be between 1 and %d.", *r, maxMoveRate)
		}
		t.rate, t.rateGiven = int(*r), true
	}
	if n := len(source.moveTasks); n > 0 && source.moveTasks[n-1].active() {
		return nil, errInvalidParameterValue("There is already a task running. Only one active task is allowed for a source queue arn at a given time.")
	}
	for _, m := range source.messages {
		if !m.gone {
			t.pending = append(t.pending, m)
		}
	}
	t.toMove = len(t.pending)
	handle, _ := json.Marshal(taskHandle{TaskID: s.newMessageID(), SourceArn: source.arn})
	t.handle = base64.StdEncoding.EncodeToString(handle)
	source.moveTasks = append(source.moveTasks, t)
	if len(source.moveTasks) > moveTaskHistory {
		delete(s.tasks, source.moveTasks[0].handle)
		source.moveTasks = source.moveTasks[1:]
	}
	s.tasks[t.handle] = t
	s.sched.moving[t] = true
	s.progressMoveTask(t, t.startedAt)
	return startMessageMoveTaskOutput{TaskHandle: t.handle}, nil
}

// progressMoveTasks advances every active task to now.
func (s *Simulator) progressMoveTasks(now time.Time) {
	for t := range s.sched.moving {
		if t.active() && s.queues[t.source.name] == t.source {
			s.progressMoveTask(t, now)
		}
		if !t.active() || s.queues[t.source.name] != t.source {
			delete(s.sched.moving, t)
		}
	}
}

// progressMoveTask moves as many of t's messages as its rate allows by now:
// rate × elapsed seconds in all. In-flight and delayed messages wait until
// they are visible; messages deleted or expired meanwhile drop out without
// counting as moved. The task completes when none is left.
func (s *Simulator) progressMoveTask(t *moveTask, now time.Time) {
	if t.status == moveTaskCancelling {
		// Cancellation takes effect once the clock has moved on, so that
		// CANCELLING can be seen at the instant of the cancel.
		if now.After(t.cancelledAt) {
			t.finish(moveTaskCancelled, "")
		}
		return
	}
	elapsed := now.Sub(t.startedAt)
	if elapsed > maxMoveTaskDuration {
		t.finish(moveTaskFailed, "The task exceeded the maximum duration of 36 hours.")
		return
	}
	budget := int(math.Floor(float64(t.rate)*elapsed.Seconds())) - t.moved
	kept := t.pending[:0]
	for _, m := range t.pending {
		if m.gone {
			continue
		}
		if budget <= 0 || !m.receivable(now) {
			kept = append(kept, m)
			continue
		}
		dest := t.destinationARN
		if dest == "" {
			dest = m.dlqSourceARN
		}
		if dest == "" {
			t.finish(moveTaskFailed, "CouldNotDetermineMessageSource")
			return
		}
		dq := s.queueByARN(dest)
		if dq == nil {
			t.finish(moveTaskFailed, "AWS.SimpleQueueService.NonExistentQueue")
			return
		}
		if dq.attrs.fifo != t.source.attrs.fifo {
			t.finish(moveTaskFailed, "The source and destination queues must be of the same type.")
			return
		}
		t.source.remove(m)
		dq.add(s.redriven(m, dq, now))
		t.moved++
		budget--
		s.notify()
	}
	clear(t.pending[len(kept):])
	t.pending = kept
	if len(t.pending) == 0 {
		t.finish(moveTaskCompleted, "")
	}
}

// redriven returns the copy of m that a move task puts in dq. SQS documents
// that "all redriven messages are considered new messages and are assigned a
// new messageID and enqueueTime": a new id and SentTimestamp, a retention
// period starting afresh, no receives and no DeadLetterQueueSourceArn. The
// body, the attributes and a FIFO message's group and deduplication ids stay.
func (s *Simulator) redriven(m *message, dq *queue, now time.Time) *message {
	moved := m.relocated(now)
	moved.id = s.newMessageID()
	moved.sentAt, moved.enqueuedAt = now, now
	moved.receiveCount = 0
	moved.firstReceivedAt = time.Time{}
	moved.dlqSourceARN = ""
	if dq.attrs.fifo {
		moved.sequence = dq.nextSequence()
	}
	return moved
}

type listMessageMoveTasksInput struct {
	SourceArn  string
	MaxResults *int32
}

type moveTaskEntry struct {
	TaskHandle                        string `json:",omitempty"`
	Status                            string
	SourceArn                         string
	DestinationArn                    string `json:",omitempty"`
	MaxNumberOfMessagesPerSecond      *int   `json:",omitempty"`
	ApproximateNumberOfMessagesMoved  int
	ApproximateNumberOfMessagesToMove int
	FailureReason                     string `json:",omitempty"`
	StartedTimestamp                  int64
}

type listMessageMoveTasksOutput struct {
	Results []moveTaskEntry `query:"ListMessageMoveTasksResultEntry"`
}

func (s *Simulator) listMessageMoveTasks(rc *request, in *listMessageMoveTasksInput) (any, *apiError) {
	if in.SourceArn == "" {
		return nil, errMissingParameter("SourceArn")
	}
	source := s.queueByARN(in.SourceArn)
	if source == nil {
		return nil, errResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	limit := 1
	if r := in.MaxResults; r != nil {
		if *r < 1 || *r > moveTaskHistory {
			return nil, errInvalidParameterValue("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 10.", *r)
		}
		limit = int(*r)
	}
	out := listMessageMoveTasksOutput{Results: []moveTaskEntry{}}
	for i := len(source.moveTasks) - 1; i >= 0 && len(out.Results) < limit; i-- {
		t := source.moveTasks[i]
		e := moveTaskEntry{
			Status:                            t.status,
			SourceArn:                         t.source.arn,
			DestinationArn:                    t.destinationARN,
			ApproximateNumberOfMessagesMoved:  t.moved,
			ApproximateNumberOfMessagesToMove: t.toMove,
			FailureReason:                     t.failureReason,
			StartedTimestamp:                  t.startedAt.UnixMilli(),
		}
		if t.status == moveTaskRunning {
			e.TaskHandle = t.handle
		}
		if t.rateGiven {
			e.MaxNumberOfMessagesPerSecond = &t.rate
		}
		out.Results = append(out.Results, e)
	}
	return out, nil
}

type cancelMessageMoveTaskInput struct {
	TaskHandle string
}

type cancelMessageMoveTaskOutput struct {
	ApproximateNumberOfMessagesMoved int
}

func (s *Simulator) cancelMessageMoveTask(rc *request, in *cancelMessageMoveTaskInput) (any, *apiError) {
	if in.TaskHandle == "" {
		return nil, errMissingParameter("TaskHandle")
	}
	raw, err := base64.StdEncoding.DecodeString(in.TaskHandle)
	var h taskHandle
	if err != nil || json.Unmarshal(raw, &h) != nil || h.TaskID == "" || h.SourceArn == "" {
		return nil, errInvalidParameterValue("Value for parameter TaskHandle is invalid.")
	}
	if s.queueByARN(h.SourceArn) == nil {
		return nil, errResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	t := s.tasks[in.TaskHandle]
	if t == nil || t.status != moveTaskRunning {
		return nil, errResourceNotFound("Task does not exist.")
	}
	t.status = moveTaskCancelling
	t.cancelledAt = s.clock.Now()
	t.pending = nil
	return cancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: t.moved}, nil
}
