package sqsim

import (
	"slices"
	"strconv"
	"time"
)

type receiveMessageInput struct {
	QueueUrl                    string
	AttributeNames              []string `query:"AttributeName"`
	MessageSystemAttributeNames []string `query:"MessageSystemAttributeName"`
	MessageAttributeNames       []string `query:"MessageAttributeName"`
	MaxNumberOfMessages         *int32
	VisibilityTimeout           *int32
	WaitTimeSeconds             *int32
	ReceiveRequestAttemptId     string
}

type receivedMessage struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string           `json:",omitempty" query:"Attribute"`
	MD5OfMessageAttributes string                      `json:",omitempty"`
	MessageAttributes      map[string]messageAttribute `json:",omitempty" query:"MessageAttribute"`
}

type receiveMessageOutput struct {
	Messages []receivedMessage `json:",omitempty" query:"Message"`
}

// Message system attribute names.
const (
	sysApproximateReceiveCount          = "ApproximateReceiveCount"
	sysApproximateFirstReceiveTimestamp = "ApproximateFirstReceiveTimestamp"
	sysSentTimestamp                    = "SentTimestamp"
	sysSenderID                         = "SenderId"
	sysMessageGroupID                   = "MessageGroupId"
	sysMessageDeduplicationID           = "MessageDeduplicationId"
	sysSequenceNumber                   = "SequenceNumber"
	sysDeadLetterQueueSourceArn         = "DeadLetterQueueSourceArn"
	sysAWSTraceHeader                   = "AWSTraceHeader"
)

var systemAttributeNames = []string{
	sysApproximateReceiveCount, sysApproximateFirstReceiveTimestamp, sysSentTimestamp, sysSenderID,
	sysMessageGroupID, sysMessageDeduplicationID, sysSequenceNumber, sysDeadLetterQueueSourceArn, sysAWSTraceHeader,
}

// receiveRequest is a validated ReceiveMessage.
type receiveRequest struct {
	max        int
	visibility *time.Duration // nil: the queue's VisibilityTimeout
	wait       time.Duration
	system     []string // system attributes to return
	attributes []string // MessageAttributeNames
	// attemptID is the ReceiveRequestAttemptId of a FIFO receive.
	attemptID string
}

func (s *Simulator) parseReceive(q *queue, in *receiveMessageInput) (receiveRequest, *apiError) {
	r := receiveRequest{max: 1, attributes: in.MessageAttributeNames}
	if n := in.MaxNumberOfMessages; n != nil {
		if *n < 1 || *n > 10 {
			return r, errInvalidParameterValue("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *n)
		}
		r.max = int(*n)
	}
	if v := in.VisibilityTimeout; v != nil {
		if *v < 0 || *v > maxVisibilityTimeout {
			return r, errInvalidParameterValue("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", *v)
		}
		d := time.Duration(*v) * time.Second
		r.visibility = &d
	}
	r.wait = time.Duration(q.attrs.receiveMessageWaitTimeSeconds) * time.Second
	if w := in.WaitTimeSeconds; w != nil {
		if *w < 0 || *w > maxReceiveWaitTimeSeconds {
			return r, errInvalidParameterValue("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *w)
		}
		r.wait = time.Duration(*w) * time.Second
	}
	if id := in.ReceiveRequestAttemptId; id != "" {
		if !fifoIDPattern.MatchString(id) {
			return r, errInvalidParameterValue("Value %s for parameter ReceiveRequestAttemptId is invalid. Reason: ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length.", truncate(id, 200))
		}
		// Standard queues ignore it, as SQS does.
		if q.attrs.fifo {
			r.attemptID = id
		}
	}
	// AttributeNames is the deprecated spelling; both are honoured.
	for _, name := range slices.Concat(in.AttributeNames, in.MessageSystemAttributeNames) {
		if name == attrAll {
			r.system = systemAttributeNames
			break
		}
		if slices.Contains(systemAttributeNames, name) && !slices.Contains(r.system, name) {
			r.system = append(r.system, name)
		}
	}
	return r, nil
}

// receiveMessage answers at once when messages are receivable or no wait
// was asked for, and otherwise long-polls: it looks again whenever a message
// may have become receivable or Tick runs, until the wait's deadline on the
// clock passes, a real-time bound passes, or the request is cancelled.
func (s *Simulator) receiveMessage(rc *request, in *receiveMessageInput) (any, *apiError) {
	s.mu.Lock()
	s.tick()
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	req, err := s.parseReceive(q, in)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if got := q.retryAttempt(&req, s.clock.Now()); got != nil {
		out := s.renderReceived(q, got, &req)
		s.mu.Unlock()
		return out, nil
	}
	deadline := s.clock.Now().Add(req.wait)
	realWait := req.wait
	if !s.realTime {
		realWait = min(realWait, s.maxRealWait)
	}
	var timeout <-chan time.Time
	if req.wait > 0 {
		t := time.NewTimer(realWait)
		defer t.Stop()
		timeout = t.C
	}
	for final := false; ; {
		now := s.clock.Now()
		// The queue may have been deleted while this request waited.
		if s.queues[q.name] != q {
			s.mu.Unlock()
			return receiveMessageOutput{}, nil
		}
		got := s.receive(q, &req, now)
		q.rememberAttempt(&req, got, now)
		if len(got) > 0 || final || req.wait == 0 || !now.Before(deadline) {
			out := s.renderReceived(q, got, &req)
			if len(got) == 0 {
				q.metrics.at(now).emptyReceives++
			}
			s.mu.Unlock()
			return out, nil
		}
		changed, ticked := s.changed, s.ticked
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ticked:
		case <-timeout:
			final = true
		case <-rc.ctx.Done():
			// The client has gone; nobody reads the answer.
			return receiveMessageOutput{}, nil
		}
		s.mu.Lock()
		s.tick()
	}
}

// receive takes up to req.max receivable messages from q, moving to the
// dead-letter queue, instead of returning, those whose receive count would
// pass the redrive policy's maxReceiveCount.
func (s *Simulator) receive(q *queue, req *receiveRequest, now time.Time) []*message {
	var candidates []*message
	if q.attrs.fifo {
		candidates = fifoCandidates(q, now)
	} else {
		for _, m := range q.messages {
			if m.receivable(now) {
				candidates = append(candidates, m)
			}
		}
	}
	visibility := time.Duration(q.attrs.visibilityTimeout) * time.Second
	if req.visibility != nil {
		visibility = *req.visibility
	}
	var got []*message
	for _, m := range candidates {
		if len(got) == req.max {
			break
		}
		if s.deadLetter(q, m, now) {
			continue
		}
		m.receiveCount++
		m.receivesHere++
		if m.firstReceivedAt.IsZero() {
			m.firstReceivedAt = now
		}
		m.inFlight = true
		m.visibleAt = now.Add(visibility)
		m.receipt = s.newReceipt(q, m)
		if visibility > 0 {
			q.noteInvisibleUntil(m.visibleAt)
		}
		got = append(got, m)
	}
	q.metrics.at(now).received += len(got)
	return got
}

// deadLetter moves m from src to src's dead-letter queue if this receive
// would take its receive count past maxReceiveCount. The message keeps its
// id, body, attributes, group and deduplication ids and receive count, and
// gains DeadLetterQueueSourceArn. A standard message keeps its enqueue time
// for retention; a FIFO one starts afresh, as SQS documents. If the DLQ no
// longer exists the message stays, as in SQS.
func (s *Simulator) deadLetter(src *queue, m *message, now time.Time) bool {
	p := src.attrs.redrive
	if p == nil || m.receiveCount < p.MaxReceiveCount {
		return false
	}
	dlq := s.queueByARN(p.DeadLetterTargetArn)
	if dlq == nil {
		return false
	}
	src.remove(m)
	moved := m.relocated(now)
	moved.dlqSourceARN = src.arn
	if dlq.attrs.fifo {
		moved.enqueuedAt = now
		moved.sequence = dlq.nextSequence()
	}
	dlq.add(moved)
	s.notify()
	return true
}

// relocated returns a copy of m for another queue, receivable at now.
func (m *message) relocated(now time.Time) *message {
	c := *m
	c.gone = false
	c.inFlight = false
	c.receipt = ""
	c.receivesHere = 0
	c.arrivedAt = now
	c.visibleAt = now
	return &c
}

func (s *Simulator) renderReceived(q *queue, got []*message, req *receiveRequest) receiveMessageOutput {
	var out receiveMessageOutput
	for _, m := range got {
		r := receivedMessage{
			MessageId:     m.id,
			ReceiptHandle: m.receipt,
			MD5OfBody:     m.md5Body,
			Body:          m.body,
		}
		if attrs := selectAttributes(m.attributes, req.attributes); attrs != nil {
			r.MessageAttributes = attrs
			r.MD5OfMessageAttributes = md5OfAttributes(attrs)
		}
		for _, name := range req.system {
			if v, ok := m.systemAttribute(name, q.attrs.fifo); ok {
				if r.Attributes == nil {
					r.Attributes = make(map[string]string)
				}
				r.Attributes[name] = v
			}
		}
		out.Messages = append(out.Messages, r)
	}
	return out
}

// systemAttribute returns a message system attribute as ReceiveMessage
// shows it, and whether the message has it.
func (m *message) systemAttribute(name string, fifo bool) (string, bool) {
	switch name {
	case sysApproximateReceiveCount:
		return strconv.Itoa(m.receiveCount), true
	case sysApproximateFirstReceiveTimestamp:
		return strconv.FormatInt(m.firstReceivedAt.UnixMilli(), 10), !m.firstReceivedAt.IsZero()
	case sysSentTimestamp:
		return strconv.FormatInt(m.sentAt.UnixMilli(), 10), true
	case sysSenderID:
		return m.senderID, m.senderID != ""
	case sysMessageGroupID:
		return m.groupID, m.groupID != ""
	case sysMessageDeduplicationID:
		return m.dedupID, fifo && m.dedupID != ""
	case sysSequenceNumber:
		return m.sequence, m.sequence != ""
	case sysDeadLetterQueueSourceArn:
		return m.dlqSourceARN, m.dlqSourceARN != ""
	case sysAWSTraceHeader:
		if m.traceHeader == nil || m.traceHeader.StringValue == nil {
			return "", false
		}
		return *m.traceHeader.StringValue, true
	}
	return "", false
}

// receiveAttempt is what a FIFO receive with a ReceiveRequestAttemptId
// returned, so that a retry with the same id gets the same messages and
// receipt handles.
type receiveAttempt struct {
	messages []*message
	receipts []string
	// visibilityChanges of each message when it was received.
	visibilityChanges []int
	expires           time.Time
}

// attemptWindow is how long SQS honours a ReceiveRequestAttemptId.
const attemptWindow = 5 * time.Minute

// retryAttempt answers a retried FIFO receive: within five minutes of a
// receive with the same attempt id, and while none of its messages was
// deleted, received again or had its visibility changed, the same messages
// with the same receipt handles, their visibility timeout started afresh.
// It returns nil when the receive is not such a retry.
func (q *queue) retryAttempt(req *receiveRequest, now time.Time) []*message {
	if req.attemptID == "" {
		return nil
	}
	a, ok := q.attempts[req.attemptID]
	if !ok {
		return nil
	}
	valid := now.Before(a.expires)
	for i, m := range a.messages {
		if m.gone || m.receipt != a.receipts[i] || m.visibilityChanges != a.visibilityChanges[i] {
			valid = false
		}
	}
	if !valid {
		delete(q.attempts, req.attemptID)
		return nil
	}
	visibility := time.Duration(q.attrs.visibilityTimeout) * time.Second
	if req.visibility != nil {
		visibility = *req.visibility
	}
	for _, m := range a.messages {
		m.inFlight = true
		m.visibleAt = now.Add(visibility)
		if visibility > 0 {
			q.noteInvisibleUntil(m.visibleAt)
		}
	}
	return a.messages
}

// rememberAttempt records a FIFO receive that returned messages under its
// attempt id, dropping expired records now and then so that the table
// stays as small as five minutes of receives.
func (q *queue) rememberAttempt(req *receiveRequest, got []*message, now time.Time) {
	if req.attemptID == "" || len(got) == 0 {
		return
	}
	if len(q.attempts) >= 256 && len(q.attempts)%256 == 0 {
		for id, a := range q.attempts {
			if !now.Before(a.expires) {
				delete(q.attempts, id)
			}
		}
	}
	a := &receiveAttempt{messages: got, expires: now.Add(attemptWindow)}
	for _, m := range got {
		a.receipts = append(a.receipts, m.receipt)
		a.visibilityChanges = append(a.visibilityChanges, m.visibilityChanges)
	}
	q.attempts[req.attemptID] = a
}
