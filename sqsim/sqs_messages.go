package sqsim

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// message is one message in a queue.
type message struct {
	id         string
	body       string
	md5Body    string
	attributes map[string]messageAttribute
	md5Attrs   string
	// traceHeader is the AWSTraceHeader system attribute, if sent.
	traceHeader *messageAttribute
	size        int

	groupID  string
	dedupID  string
	sequence string // FIFO only
	senderID string

	sentAt time.Time // SentTimestamp; survives moves
	// enqueuedAt starts the retention period. A standard queue keeps it
	// when the message moves to its DLQ; a FIFO queue resets it.
	enqueuedAt time.Time
	// arrivedAt is when the message entered its current queue, which
	// ApproximateAgeOfOldestMessage counts from on a DLQ.
	arrivedAt time.Time
	// visibleAt is the first instant the message can be received. Before
	// it, the message is in flight if inFlight is set, delayed otherwise.
	visibleAt time.Time
	inFlight  bool

	receiveCount int
	// receivesHere counts the receives in the current queue only; the
	// age metric's poison-pill rule looks at these, so that messages a
	// standard DLQ inherits with their receive counts still count there.
	receivesHere    int
	firstReceivedAt time.Time
	// receipt is the most recent receipt handle, the only one that
	// deletes the message.
	receipt      string
	dlqSourceARN string
	// visibilityChanges counts ChangeMessageVisibility calls, so that a
	// receive attempt can tell that its messages were modified.
	visibilityChanges int

	// gone marks a message deleted, expired, purged or moved away, for
	// holders of stale pointers such as move tasks.
	gone bool
}

// receivable reports whether m can be received at now.
func (m *message) receivable(now time.Time) bool {
	return !m.gone && !now.Before(m.visibleAt)
}

// inFlightAt reports whether m is received and neither deleted nor visible
// again at now.
func (m *message) inFlightAt(now time.Time) bool {
	return !m.gone && m.inFlight && now.Before(m.visibleAt)
}

// sendEntry is one message to send: SendMessage's input, or one entry of
// SendMessageBatch.
type sendEntry struct {
	Id                      string
	QueueUrl                string
	MessageBody             *string
	DelaySeconds            *int32
	MessageAttributes       map[string]messageAttribute `query:"MessageAttribute"`
	MessageSystemAttributes map[string]messageAttribute `query:"MessageSystemAttribute"`
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

type sendResult struct {
	Id                           string `json:",omitempty"`
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

// fifoIDPattern is the rule for MessageGroupId and MessageDeduplicationId:
// 1 to 128 alphanumeric or punctuation characters.
var fifoIDPattern = regexp.MustCompile("^[A-Za-z0-9!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~]{1,128}$")

// send validates one entry and enqueues it. A send that deduplication
// drops still succeeds and answers with the original message's id.
func (s *Simulator) send(rc *request, q *queue, e *sendEntry, now time.Time) (sendResult, *apiError) {
	if e.MessageBody == nil || *e.MessageBody == "" {
		return sendResult{}, errMissingParameter("MessageBody")
	}
	body := *e.MessageBody
	if err := validateMessageText(body); err != nil {
		return sendResult{}, err
	}
	attrSize, err := validateMessageAttributes(e.MessageAttributes, false)
	if err != nil {
		return sendResult{}, err
	}
	if _, err := validateMessageAttributes(e.MessageSystemAttributes, true); err != nil {
		return sendResult{}, err
	}
	size := len(body) + attrSize
	if size > q.attrs.maximumMessageSize {
		return sendResult{}, errInvalidParameterValue("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", q.attrs.maximumMessageSize)
	}
	delay := q.attrs.delaySeconds
	if e.DelaySeconds != nil {
		if *e.DelaySeconds < 0 || *e.DelaySeconds > maxDelaySeconds {
			return sendResult{}, errInvalidParameterValue("Value %d for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.", *e.DelaySeconds)
		}
		// A FIFO queue delays whole queues, not messages: SQS refuses a
		// positive per-message delay there, but takes 0, which worker code
		// that always passes a delay (opts.delay ?? 0) sends.
		if q.attrs.fifo && *e.DelaySeconds > 0 {
			return sendResult{}, errInvalidParameterValue("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", *e.DelaySeconds)
		}
		if !q.attrs.fifo {
			delay = int(*e.DelaySeconds)
		}
	}
	groupID, dedupID := deref(e.MessageGroupId), deref(e.MessageDeduplicationId)
	if e.MessageGroupId != nil && !fifoIDPattern.MatchString(groupID) {
		return sendResult{}, errInvalidParameterValue("Value %s for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.", truncate(groupID, 200))
	}
	if e.MessageDeduplicationId != nil && !fifoIDPattern.MatchString(dedupID) {
		return sendResult{}, errInvalidParameterValue("Value %s for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.", truncate(dedupID, 200))
	}
	if !q.attrs.fifo && e.MessageDeduplicationId != nil {
		return sendResult{}, errInvalidParameterValue("Value %s for parameter MessageDeduplicationId is invalid. Reason: The request includes a parameter that is not valid for this queue type.", truncate(dedupID, 200))
	}
	result := sendResult{
		MD5OfMessageBody:             md5Hex(body),
		MD5OfMessageAttributes:       md5OfAttributes(e.MessageAttributes),
		MD5OfMessageSystemAttributes: md5OfAttributes(e.MessageSystemAttributes),
	}
	if q.attrs.fifo {
		if groupID == "" {
			return sendResult{}, errMissingParameter("MessageGroupId")
		}
		if dedupID == "" {
			if !q.attrs.contentBasedDeduplication {
				return sendResult{}, errInvalidParameterValue("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
			}
			dedupID = contentDeduplicationID(body)
		}
		if original, ok := q.deduplicated(groupID, dedupID, now); ok {
			q.metrics.at(now).deduplicated++
			result.MessageId, result.SequenceNumber = original.messageID, original.sequence
			return result, nil
		}
	}
	m := &message{
		id:          s.newMessageID(),
		body:        body,
		md5Body:     result.MD5OfMessageBody,
		attributes:  e.MessageAttributes,
		md5Attrs:    result.MD5OfMessageAttributes,
		size:        size,
		groupID:     groupID,
		dedupID:     dedupID,
		senderID:    rc.senderID,
		sentAt:      now,
		enqueuedAt:  now,
		arrivedAt:   now,
		visibleAt:   now.Add(time.Duration(delay) * time.Second),
		traceHeader: traceHeader(e.MessageSystemAttributes),
	}
	if q.attrs.fifo {
		m.sequence = q.nextSequence()
		q.remember(groupID, dedupID, m, now)
	}
	q.add(m)
	mm := q.metrics.at(now)
	mm.sent++
	mm.sentBytes.add(float64(size))
	result.MessageId, result.SequenceNumber = m.id, m.sequence
	if delay == 0 {
		s.notify()
	}
	return result, nil
}

func traceHeader(system map[string]messageAttribute) *messageAttribute {
	if a, ok := system["AWSTraceHeader"]; ok {
		return &a
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Simulator) sendMessage(rc *request, in *sendEntry) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	result, err := s.send(rc, q, in, s.clock.Now())
	if err != nil {
		return nil, err
	}
	return result, nil
}

type sendMessageBatchInput struct {
	QueueUrl string
	Entries  []sendEntry `query:"SendMessageBatchRequestEntry"`
}

// batchResultError is one failed entry of a batch request.
type batchResultError struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

type sendMessageBatchOutput struct {
	Successful []sendResult       `query:"SendMessageBatchResultEntry"`
	Failed     []batchResultError `query:"BatchResultErrorEntry"`
}

func (s *Simulator) sendMessageBatch(rc *request, in *sendMessageBatchInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := validateBatch("SendMessageBatchRequestEntry", in.Entries, func(e *sendEntry) string { return e.Id }); err != nil {
		return nil, err
	}
	total := 0
	for _, e := range in.Entries {
		total += len(deref(e.MessageBody))
		for name, a := range e.MessageAttributes {
			total += len(name) + len(a.DataType) + len(deref(a.StringValue)) + len(a.BinaryValue)
		}
	}
	if total > q.attrs.maximumMessageSize {
		return nil, errBatchRequestTooLong(total, q.attrs.maximumMessageSize)
	}
	now := s.clock.Now()
	ok, failed := applyBatch(in.Entries, func(e *sendEntry) (string, sendResult, *apiError) {
		result, err := s.send(rc, q, e, now)
		result.Id = e.Id
		return e.Id, result, err
	})
	return sendMessageBatchOutput{Successful: ok, Failed: failed}, nil
}

// batchEntryIDPattern is the rule for batch entry ids.
var batchEntryIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// validateBatch applies the rules every batch request shares: 1 to 10
// entries with distinct, well-formed ids. A batch that breaks them fails as a
// whole, before any entry is acted on. entryName is the entries' shape name,
// which SQS's messages use.
func validateBatch[E any](entryName string, entries []E, id func(*E) string) *apiError {
	if len(entries) == 0 {
		return errEmptyBatchRequest(entryName)
	}
	if len(entries) > 10 {
		return errTooManyEntriesInBatchRequest(len(entries))
	}
	seen := make(map[string]bool, len(entries))
	for i := range entries {
		id := id(&entries[i])
		if !batchEntryIDPattern.MatchString(id) {
			return errInvalidBatchEntryID()
		}
		if seen[id] {
			return errBatchEntryIdsNotDistinct(id)
		}
		seen[id] = true
	}
	return nil
}

// applyBatch runs do on every entry of a validated batch. As in SQS, an entry
// that fails is reported under its id and the others go on. Both lists are
// non-nil, so that an empty one is encoded as a list.
func applyBatch[E, R any](entries []E, do func(*E) (string, R, *apiError)) (ok []R, failed []batchResultError) {
	ok, failed = []R{}, []batchResultError{}
	for i := range entries {
		id, result, err := do(&entries[i])
		if err != nil {
			failed = append(failed, batchResultError{Id: id, SenderFault: !err.server, Code: err.queryCode, Message: err.message})
			continue
		}
		ok = append(ok, result)
	}
	return ok, failed
}

// newReceipt returns a fresh receipt handle for m in q. The handle names the
// queue and the message, so that a handle of another queue or a garbled one
// is told apart from the handle of a message already deleted.
func (s *Simulator) newReceipt(q *queue, m *message) string {
	s.nextID++
	raw := q.name + "\x00" + m.id + "\x00" + strconv.FormatUint(s.nextID, 36) + "\x00" + strconv.FormatUint(s.ids.Uint64(), 36)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// parseReceipt returns the message id a receipt handle of q names.
func parseReceipt(q *queue, handle string) (string, *apiError) {
	raw, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil {
		return "", errReceiptHandleIsInvalid(handle)
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 4 || parts[0] != q.name {
		return "", errReceiptHandleIsInvalid(handle)
	}
	return parts[1], nil
}

type deleteMessageInput struct {
	Id            string
	QueueUrl      string
	ReceiptHandle string
}

// deleteByReceipt deletes the message a receipt handle names. As in SQS, a
// handle of a message already gone succeeds, and a handle superseded by a
// later receive succeeds without deleting.
func (s *Simulator) deleteByReceipt(q *queue, handle string, now time.Time) *apiError {
	if handle == "" {
		return errMissingParameter("ReceiptHandle")
	}
	id, err := parseReceipt(q, handle)
	if err != nil {
		return err
	}
	m := q.byID[id]
	if m == nil || m.receipt != handle {
		return nil
	}
	q.remove(m)
	q.metrics.at(now).deleted++
	return nil
}

func (s *Simulator) deleteMessage(rc *request, in *deleteMessageInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := s.deleteByReceipt(q, in.ReceiptHandle, s.clock.Now()); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

type deleteMessageBatchInput struct {
	QueueUrl string
	Entries  []deleteMessageInput `query:"DeleteMessageBatchRequestEntry"`
}

type batchResultEntry struct {
	Id string
}

// deleteMessageBatchOutput and changeVisibilityBatchOutput differ only in
// their Query element names.
type deleteMessageBatchOutput struct {
	Successful []batchResultEntry `query:"DeleteMessageBatchResultEntry"`
	Failed     []batchResultError `query:"BatchResultErrorEntry"`
}

type changeVisibilityBatchOutput struct {
	Successful []batchResultEntry `query:"ChangeMessageVisibilityBatchResultEntry"`
	Failed     []batchResultError `query:"BatchResultErrorEntry"`
}

func (s *Simulator) deleteMessageBatch(rc *request, in *deleteMessageBatchInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := validateBatch("DeleteMessageBatchRequestEntry", in.Entries, func(e *deleteMessageInput) string { return e.Id }); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	ok, failed := applyBatch(in.Entries, func(e *deleteMessageInput) (string, batchResultEntry, *apiError) {
		return e.Id, batchResultEntry{Id: e.Id}, s.deleteByReceipt(q, e.ReceiptHandle, now)
	})
	return deleteMessageBatchOutput{Successful: ok, Failed: failed}, nil
}

type changeVisibilityInput struct {
	Id                string
	QueueUrl          string
	ReceiptHandle     string
	VisibilityTimeout *int32
}

// changeVisibility sets a new visibility timeout, counted from now, on the
// in-flight message a receipt handle names; zero makes it visible at once.
func (s *Simulator) changeVisibility(q *queue, handle string, timeout *int32, now time.Time) *apiError {
	if handle == "" {
		return errMissingParameter("ReceiptHandle")
	}
	if timeout == nil {
		return errMissingParameter("VisibilityTimeout")
	}
	if *timeout < 0 || *timeout > maxVisibilityTimeout {
		return errInvalidParameterValue("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.", *timeout)
	}
	id, err := parseReceipt(q, handle)
	if err != nil {
		return err
	}
	m := q.byID[id]
	if m == nil || m.receipt != handle {
		return errInvalidParameterValue("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", truncate(handle, 100))
	}
	if !m.inFlightAt(now) {
		return errMessageNotInflight()
	}
	m.visibleAt = now.Add(time.Duration(*timeout) * time.Second)
	m.visibilityChanges++
	if *timeout == 0 {
		s.notify()
	} else {
		q.noteInvisibleUntil(m.visibleAt)
	}
	return nil
}

func (s *Simulator) changeMessageVisibility(rc *request, in *changeVisibilityInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := s.changeVisibility(q, in.ReceiptHandle, in.VisibilityTimeout, s.clock.Now()); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

type changeVisibilityBatchInput struct {
	QueueUrl string
	Entries  []changeVisibilityInput `query:"ChangeMessageVisibilityBatchRequestEntry"`
}

func (s *Simulator) changeMessageVisibilityBatch(rc *request, in *changeVisibilityBatchInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := validateBatch("ChangeMessageVisibilityBatchRequestEntry", in.Entries, func(e *changeVisibilityInput) string { return e.Id }); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	ok, failed := applyBatch(in.Entries, func(e *changeVisibilityInput) (string, batchResultEntry, *apiError) {
		return e.Id, batchResultEntry{Id: e.Id}, s.changeVisibility(q, e.ReceiptHandle, e.VisibilityTimeout, now)
	})
	return changeVisibilityBatchOutput{Successful: ok, Failed: failed}, nil
}
