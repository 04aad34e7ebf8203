package sqsim

import (
	"encoding/base64"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// queue is one SQS queue and everything in it.
type queue struct {
	name       string
	arn        string
	attrs      queueAttributes
	tags       map[string]string
	createdAt  time.Time
	modifiedAt time.Time

	// messages holds the queue's messages in arrival order. Removed
	// messages are marked gone and compacted away in batches.
	messages []*message
	goneN    int
	byID     map[string]*message

	// nextWake is the earliest time a delayed or in-flight message becomes
	// receivable (zero: none); nextExpiry the earliest retention expiry.
	// Lowering either lowers the region's sched.due.
	nextWake   time.Time
	nextExpiry time.Time
	sched      *schedule

	dedup map[string]dedupRecord // FIFO deduplication window
	// attempts remembers FIFO receives by ReceiveRequestAttemptId.
	attempts  map[string]*receiveAttempt
	sequence  uint64 // last FIFO sequence number
	lastPurge time.Time

	metrics queueMetrics
	// moveTasks of this queue as the source, oldest first.
	moveTasks []*moveTask
}

// queueCounts are the three ApproximateNumberOfMessages* gauges.
type queueCounts struct {
	visible, inFlight, delayed int
}

// counts classifies the queue's messages at now.
func (q *queue) counts(now time.Time) queueCounts {
	var c queueCounts
	for _, m := range q.messages {
		switch {
		case m.gone:
		case !now.Before(m.visibleAt):
			c.visible++
		case m.inFlight:
			c.inFlight++
		default:
			c.delayed++
		}
	}
	return c
}

// add appends m to the queue.
func (q *queue) add(m *message) {
	q.messages = append(q.messages, m)
	q.byID[m.id] = m
	if m.visibleAt.After(m.arrivedAt) {
		q.noteInvisibleUntil(m.visibleAt)
	}
	expiry := m.enqueuedAt.Add(time.Duration(q.attrs.messageRetentionPeriod) * time.Second)
	if q.nextExpiry.IsZero() || expiry.Before(q.nextExpiry) {
		q.nextExpiry = expiry
		q.sched.at(expiry)
	}
}

// remove takes m out of the queue for good (deleted, expired or moved).
func (q *queue) remove(m *message) {
	if m.gone {
		return
	}
	m.gone = true
	delete(q.byID, m.id)
	q.goneN++
	if q.compactable() {
		q.sched.compact[q] = true
	}
}

// compact drops removed messages from q.messages once they are many. It must
// not run while q.messages is being iterated, so only tick calls it.
func (q *queue) compact() {
	if q.compactable() {
		q.messages = slices.DeleteFunc(q.messages, func(m *message) bool { return m.gone })
		q.goneN = 0
	}
}

// compactable reports whether enough of q.messages are gone to compact them.
func (q *queue) compactable() bool {
	return q.goneN > 64 && q.goneN > len(q.messages)/2
}

// noteInvisibleUntil records that a message becomes receivable at t, so that
// Tick wakes the long polls then.
func (q *queue) noteInvisibleUntil(t time.Time) {
	if q.nextWake.IsZero() || t.Before(q.nextWake) {
		q.nextWake = t
		q.sched.at(t)
	}
}

// wakeDue reports whether a message became receivable since the last call,
// and finds the next such time.
func (q *queue) wakeDue(now time.Time) bool {
	if q.nextWake.IsZero() || now.Before(q.nextWake) {
		return false
	}
	q.nextWake = time.Time{}
	for _, m := range q.messages {
		if !m.gone && now.Before(m.visibleAt) {
			q.noteInvisibleUntil(m.visibleAt)
		}
	}
	return true
}

// expire drops the messages whose retention period has passed.
func (q *queue) expire(now time.Time) {
	if q.nextExpiry.IsZero() || now.Before(q.nextExpiry) {
		return
	}
	retention := time.Duration(q.attrs.messageRetentionPeriod) * time.Second
	q.nextExpiry = time.Time{}
	for _, m := range q.messages {
		if m.gone {
			continue
		}
		expiry := m.enqueuedAt.Add(retention)
		if !now.Before(expiry) {
			q.remove(m)
			continue
		}
		if q.nextExpiry.IsZero() || expiry.Before(q.nextExpiry) {
			q.nextExpiry = expiry
		}
	}
}

// resetExpiry makes the next expire call rescan, after the retention period
// changed.
func (q *queue) resetExpiry(now time.Time) {
	q.nextExpiry = now
	q.sched.at(now)
}

// queueNamePattern is AWS's rule for queue names, without the .fifo suffix.
var queueNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

func validQueueName(name string, fifo bool) bool {
	if len(name) > 80 {
		return false
	}
	if fifo {
		name = strings.TrimSuffix(name, ".fifo")
	}
	return queueNamePattern.MatchString(name)
}

// queueURL is the URL the client sees for q: the host it called, then the
// account and the name, as AWS lays them out.
func (s *Simulator) queueURL(rc *request, q *queue) string {
	return rc.baseURL + "/" + s.accountID + "/" + q.name
}

// queueByURL resolves a QueueUrl as SQS does: the queue's URL, with the path
// /<account>/<name> and nothing more; or the queue's bare name, which SQS
// takes too. An account other than this one's names a queue this endpoint
// does not have.
func (s *Simulator) queueByURL(raw string) (*queue, *apiError) {
	if raw == "" {
		return nil, errMissingParameter("QueueUrl")
	}
	account, name, err := s.parseQueueURL(raw)
	if err != nil {
		return nil, err
	}
	if account != "" && account != s.accountID {
		return nil, errQueueDoesNotExist()
	}
	return s.queueNamed(name)
}

// parseQueueURL reads a QueueUrl: the account and name of its path, or a bare
// queue name (account ""). The host is not the simulator's business beyond
// the region it names: one simulator is reached as 127.0.0.1 from its machine,
// as a docker service's name from a container and through LocalStack's names,
// and clients such as watermill-aws build AWS's own URL
// (https://sqs.<region>.amazonaws.com/<account>/<name>) themselves, so any
// host is taken but an AWS (or LocalStack) host of another region, whose
// queues this region does not have, as on AWS.
func (s *Simulator) parseQueueURL(raw string) (account, name string, err *apiError) {
	if !strings.Contains(raw, "/") {
		return "", raw, nil
	}
	u, perr := url.Parse(raw)
	// A queue URL is a scheme, a host and the queue's path, nothing more: a query or a
	// fragment could hide another address, and an escaped path spells the name another way.
	if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawPath != "" {
		return "", "", errInvalidAddress(truncate(raw, 200))
	}
	if region, ok := hostRegion(u.Hostname()); ok && region != s.region {
		return "", "", errQueueDoesNotExist()
	}
	// Exactly /<account>/<name>: a trailing slash, an empty segment or a path below the
	// queue is another address, which SQS refuses.
	account, name, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !strings.HasPrefix(u.Path, "/") || !ok || account == "" || name == "" || strings.Contains(name, "/") {
		return "", "", errInvalidAddress(truncate(raw, 200))
	}
	return account, name, nil
}

// sameQueue reports whether two queue URLs (or a URL and a queue name) name one queue of
// this endpoint: the same name, and the same account when both give one.
func (s *Simulator) sameQueue(a, b string) bool {
	account, name, err := s.parseQueueURL(a)
	account2, name2, err2 := s.parseQueueURL(b)
	switch {
	case err != nil || err2 != nil:
		return false
	case account == "" || account2 == "":
		// A bare name names the queue of that name of the endpoint's own account.
		return name == name2
	}
	return account == account2 && name == name2
}

func (s *Simulator) queueNamed(name string) (*queue, *apiError) {
	q := s.queues[name]
	if q == nil {
		return nil, errQueueDoesNotExist()
	}
	return q, nil
}

// queueByARN returns the queue an ARN names in this region and account, or
// nil.
func (s *Simulator) queueByARN(arn string) *queue {
	prefix := s.arn("sqs", "")
	name, ok := strings.CutPrefix(arn, prefix)
	if !ok {
		return nil
	}
	return s.queues[name]
}

// deadLetterSources returns the queues whose RedrivePolicy targets q, by
// name.
func (s *Simulator) deadLetterSources(q *queue) []*queue {
	if s.sources == nil {
		s.sources = make(map[string][]*queue)
		for _, src := range s.queues {
			if src.attrs.redrive != nil {
				t := src.attrs.redrive.DeadLetterTargetArn
				s.sources[t] = append(s.sources[t], src)
			}
		}
		for _, srcs := range s.sources {
			slices.SortFunc(srcs, func(a, b *queue) int { return strings.Compare(a.name, b.name) })
		}
	}
	return s.sources[q.arn]
}

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string `query:"Attribute"`
	Tags       map[string]string `json:"tags" query:"Tag,Key"`
}

type queueURLOutput struct {
	QueueUrl string
}

func (s *Simulator) createQueue(rc *request, in *createQueueInput) (any, *apiError) {
	if in.QueueName == "" {
		return nil, errMissingParameter("QueueName")
	}
	fifoAttr := false
	if v, ok := in.Attributes[attrFifoQueue]; ok {
		b, err := boolAttribute(attrFifoQueue, v)
		if err != nil {
			return nil, err
		}
		fifoAttr = b
	}
	fifoName := strings.HasSuffix(in.QueueName, ".fifo")
	if fifoAttr != fifoName {
		return nil, errInvalidParameterValue("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.")
	}
	if !validQueueName(in.QueueName, fifoName) {
		return nil, errInvalidParameterValue("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	if err := validateTags(in.Tags); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	candidate := &queue{name: in.QueueName, arn: s.queueARN(in.QueueName), attrs: defaultQueueAttributes(fifoName), sched: &s.sched}
	if err := s.setAttributes(&candidate.attrs, in.QueueName, in.Attributes, true); err != nil {
		return nil, err
	}
	if existing := s.queues[in.QueueName]; existing != nil {
		// CreateQueue is idempotent when every given attribute matches;
		// the error names the first that does not, in name order.
		names := slices.Sorted(maps.Keys(in.Attributes))
		for _, name := range names {
			want, _ := candidate.attributeValue(name, now)
			got, _ := existing.attributeValue(name, now)
			if want != got {
				return nil, errQueueNameExists(name)
			}
		}
		return queueURLOutput{QueueUrl: s.queueURL(rc, existing)}, nil
	}
	if deleted, ok := s.deletedAt[in.QueueName]; ok && now.Sub(deleted) < time.Minute {
		return nil, errQueueDeletedRecently()
	}
	delete(s.deletedAt, in.QueueName)
	q := candidate
	q.tags = maps.Clone(in.Tags)
	if q.tags == nil {
		q.tags = make(map[string]string)
	}
	q.createdAt, q.modifiedAt = now, now
	q.byID = make(map[string]*message)
	q.dedup = make(map[string]dedupRecord)
	q.attempts = make(map[string]*receiveAttempt)
	q.metrics.start(now)
	s.queues[q.name] = q
	s.sources = nil
	s.log.Debug("sqsim: queue created", "queue", q.name)
	return queueURLOutput{QueueUrl: s.queueURL(rc, q)}, nil
}

type queueURLInput struct {
	QueueUrl string
}

func (s *Simulator) deleteQueue(rc *request, in *queueURLInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	for _, t := range q.moveTasks {
		if t.active() {
			t.finish(moveTaskFailed, "AWS.SimpleQueueService.NonExistentQueue")
		}
	}
	for _, t := range s.tasks {
		if t.source == q {
			delete(s.tasks, t.handle)
		}
	}
	delete(s.queues, q.name)
	s.sources = nil
	s.deletedAt[q.name] = now
	// Long polls on the queue look again and end empty.
	s.notify()
	return struct{}{}, nil
}

type getQueueURLInput struct {
	QueueName              string
	QueueOwnerAWSAccountId string
}

func (s *Simulator) getQueueURL(rc *request, in *getQueueURLInput) (any, *apiError) {
	if in.QueueName == "" {
		return nil, errMissingParameter("QueueName")
	}
	if in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != s.accountID {
		return nil, errQueueDoesNotExist()
	}
	q := s.queues[in.QueueName]
	if q == nil {
		return nil, errQueueDoesNotExist()
	}
	return queueURLOutput{QueueUrl: s.queueURL(rc, q)}, nil
}

type listQueuesInput struct {
	QueueNamePrefix string
	MaxResults      *int32
	NextToken       string
}

type listQueuesOutput struct {
	QueueUrls []string `json:",omitempty" query:"QueueUrl"`
	NextToken string   `json:",omitempty"`
}

func (s *Simulator) listQueues(rc *request, in *listQueuesInput) (any, *apiError) {
	var names []string
	for name := range s.queues {
		if strings.HasPrefix(name, in.QueueNamePrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	page, next, err := paginate(names, in.MaxResults, in.NextToken, 1000)
	if err != nil {
		return nil, err
	}
	out := listQueuesOutput{NextToken: next}
	for _, name := range page {
		out.QueueUrls = append(out.QueueUrls, s.queueURL(rc, s.queues[name]))
	}
	return out, nil
}

type listDeadLetterSourceQueuesInput struct {
	QueueUrl   string
	MaxResults *int32
	NextToken  string
}

type listDeadLetterSourceQueuesOutput struct {
	QueueUrls []string `json:"queueUrls" query:"QueueUrl"`
	NextToken string   `json:",omitempty"`
}

func (s *Simulator) listDeadLetterSourceQueues(rc *request, in *listDeadLetterSourceQueuesInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, src := range s.deadLetterSources(q) {
		names = append(names, src.name)
	}
	page, next, err := paginate(names, in.MaxResults, in.NextToken, 1000)
	if err != nil {
		return nil, err
	}
	out := listDeadLetterSourceQueuesOutput{QueueUrls: []string{}, NextToken: next}
	for _, name := range page {
		out.QueueUrls = append(out.QueueUrls, s.queueURL(rc, s.queues[name]))
	}
	return out, nil
}

// paginate pages a sorted list of names. Without maxResults it returns up to
// limit names and no token, as ListQueues does; the token is the last name
// returned, so that pages stay right when queues come and go.
func paginate(names []string, maxResults *int32, token string, limit int) (page []string, next string, _ *apiError) {
	if maxResults == nil {
		if token != "" {
			return nil, "", errInvalidParameterValue("MaxResults is a mandatory parameter when you provide a value for NextToken.")
		}
		return names[:min(len(names), limit)], "", nil
	}
	if *maxResults < 1 || int(*maxResults) > limit {
		return nil, "", errInvalidParameterValue("Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and %d.", *maxResults, limit)
	}
	if token != "" {
		after, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", errInvalidParameterValue("Invalid NextToken value.")
		}
		i, _ := slices.BinarySearch(names, string(after))
		if i < len(names) && names[i] == string(after) {
			i++
		}
		names = names[i:]
	}
	n := int(*maxResults)
	if len(names) <= n {
		return names, "", nil
	}
	page = names[:n]
	return page, base64.RawURLEncoding.EncodeToString([]byte(page[n-1])), nil
}

type getQueueAttributesInput struct {
	QueueUrl       string
	AttributeNames []string `query:"AttributeName"`
}

type attributesOutput struct {
	Attributes map[string]string `json:",omitempty" query:"Attribute"`
}

func (s *Simulator) getQueueAttributes(rc *request, in *getQueueAttributesInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range in.AttributeNames {
		if name == attrAll {
			names = readableAttributes
			break
		}
		if !slices.Contains(readableAttributes, name) {
			return nil, errInvalidAttributeName(name)
		}
		names = append(names, name)
	}
	now := s.clock.Now()
	out := attributesOutput{Attributes: make(map[string]string)}
	for _, name := range names {
		if v, ok := q.attributeValue(name, now); ok {
			out.Attributes[name] = v
		}
	}
	return out, nil
}

type setQueueAttributesInput struct {
	QueueUrl   string
	Attributes map[string]string `query:"Attribute"`
}

func (s *Simulator) setQueueAttributes(rc *request, in *setQueueAttributesInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Attributes) == 0 {
		return nil, errMissingParameter("Attributes")
	}
	if err := s.setAttributes(&q.attrs, q.name, in.Attributes, false); err != nil {
		return nil, err
	}
	s.sources = nil
	now := s.clock.Now()
	q.modifiedAt = now
	q.resetExpiry(now)
	return struct{}{}, nil
}

type tagQueueInput struct {
	QueueUrl string
	Tags     map[string]string `query:"Tag,Key"`
}

func (s *Simulator) tagQueue(rc *request, in *tagQueueInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Tags) == 0 {
		return nil, errMissingParameter("Tags")
	}
	merged := maps.Clone(q.tags)
	maps.Copy(merged, in.Tags)
	if err := validateTags(merged); err != nil {
		return nil, err
	}
	q.tags = merged
	return struct{}{}, nil
}

type untagQueueInput struct {
	QueueUrl string
	TagKeys  []string `query:"TagKey"`
}

func (s *Simulator) untagQueue(rc *request, in *untagQueueInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.TagKeys) == 0 {
		return nil, errMissingParameter("TagKeys")
	}
	for _, k := range in.TagKeys {
		delete(q.tags, k)
	}
	return struct{}{}, nil
}

type listQueueTagsOutput struct {
	Tags map[string]string `json:",omitempty" query:"Tag,Key"`
}

func (s *Simulator) listQueueTags(rc *request, in *queueURLInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	return listQueueTagsOutput{Tags: maps.Clone(q.tags)}, nil
}

// validateTags applies SQS's tag quotas: at most 50 tags, keys of 1 to 128
// and values of up to 256 characters.
func validateTags(tags map[string]string) *apiError {
	if len(tags) > 50 {
		return errInvalidParameterValue("Too many tags added for queue. The maximum is 50.")
	}
	for k, v := range tags {
		if k == "" || len([]rune(k)) > 128 {
			return errInvalidParameterValue("Tag keys must be between 1 and 128 characters in length.")
		}
		if len([]rune(v)) > 256 {
			return errInvalidParameterValue("Tag values may only be up to 256 characters in length.")
		}
	}
	return nil
}

func (s *Simulator) purgeQueue(rc *request, in *queueURLInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if !q.lastPurge.IsZero() && now.Sub(q.lastPurge) < time.Minute {
		return nil, errPurgeQueueInProgress(q.name)
	}
	q.lastPurge = now
	for _, m := range q.messages {
		q.remove(m)
	}
	q.messages, q.goneN = nil, 0
	return struct{}{}, nil
}
