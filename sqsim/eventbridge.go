package sqsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// EventBridge speaks AWS JSON 1.1 (X-Amz-Target: AWSEvents.<Op>, Content-Type
// application/x-amz-json-1.1), as service/eventbridge sends it. The
// simulator keeps event buses, rules with event patterns and their
// targets, and delivers PutEvents to SQS targets (see doc.go).

// eventBridgeTargetPrefix starts the X-Amz-Target of every EventBridge
// request.
const eventBridgeTargetPrefix = "AWSEvents."

// defaultEventBus is the bus every account has.
const defaultEventBus = "default"

// eventBus is one event bus and its rules.
type eventBus struct {
	name, arn, description string
	createdAt, modifiedAt  time.Time
	rules                  map[string]*eventRule
}

// eventRule is one rule of a bus: an event pattern (or a schedule, which
// the simulator stores but never fires) and up to five targets.
type eventRule struct {
	name, arn, bus string
	eventPattern   string
	pattern        map[string]any // eventPattern, parsed
	schedule       string
	state          string
	description    string
	roleARN        string
	targets        []eventTarget // in Id order
}

// eventTarget is a rule's target as PutTargets gave it; the simulator acts
// on SQS targets and keeps the others as configuration.
type eventTarget struct {
	Id               string
	Arn              string
	RoleArn          string            `json:",omitempty"`
	Input            string            `json:",omitempty"`
	InputPath        string            `json:",omitempty"`
	DeadLetterConfig *deadLetterConfig `json:",omitempty"`
	RetryPolicy      *retryPolicy      `json:",omitempty"`
	SqsParameters    *sqsParameters    `json:",omitempty"`
}

type deadLetterConfig struct {
	Arn string `json:",omitempty"`
}

type retryPolicy struct {
	MaximumRetryAttempts     *int32 `json:",omitempty"`
	MaximumEventAgeInSeconds *int32 `json:",omitempty"`
}

type sqsParameters struct {
	MessageGroupId string `json:",omitempty"`
}

// ebOperation runs one EventBridge operation on a request body, with s.mu
// held.
type ebOperation func(s *Simulator, body []byte) (any, *apiError)

// ebLocked decodes the body into In and runs fn.
func ebLocked[In any](fn func(*Simulator, *In) (any, *apiError)) ebOperation {
	return func(s *Simulator, body []byte) (any, *apiError) {
		var in In
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &in); err != nil {
				return nil, errEBSerialization(err.Error())
			}
		}
		return fn(s, &in)
	}
}

var eventBridgeOperations = map[string]ebOperation{
	"CreateEventBus":    ebLocked((*Simulator).createEventBus),
	"DescribeEventBus":  ebLocked((*Simulator).describeEventBus),
	"DeleteEventBus":    ebLocked((*Simulator).deleteEventBus),
	"ListEventBuses":    ebLocked((*Simulator).listEventBuses),
	"PutRule":           ebLocked((*Simulator).putRule),
	"DescribeRule":      ebLocked((*Simulator).describeRule),
	"DeleteRule":        ebLocked((*Simulator).deleteRule),
	"ListRules":         ebLocked((*Simulator).listRules),
	"PutTargets":        ebLocked((*Simulator).putTargets),
	"RemoveTargets":     ebLocked((*Simulator).removeTargets),
	"ListTargetsByRule": ebLocked((*Simulator).listTargetsByRule),
	"PutEvents":         ebLocked((*Simulator).putEvents),
}

// serveEventBridge answers an AWS JSON 1.1 request for the operation its
// X-Amz-Target names.
func (s *Simulator) serveEventBridge(w http.ResponseWriter, r *http.Request, rc *request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), eventBridgeTargetPrefix)
	defer s.recoverPanic(w, op, writeEventBridgeError)
	handler, ok := eventBridgeOperations[op]
	switch {
	case r.Method != http.MethodPost:
		writeEventBridgeError(w, errEBUnknownOperation(r.Method+" "+op))
		return
	case !ok:
		writeEventBridgeError(w, errEBUnknownOperation(op))
		return
	case !hasMediaType(r, "application/x-amz-json-1.1"):
		writeEventBridgeError(w, errEBUnknownOperation("content type "+r.Header.Get("Content-Type")))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeEventBridgeError(w, err)
		return
	}
	if err := s.serveFaults(rc.ctx, op, errEBThrottling, errEBInternal); err != nil {
		writeEventBridgeError(w, err)
		return
	}
	s.mu.Lock()
	s.tick()
	out, err := handler(s, body)
	s.mu.Unlock()
	s.log.Debug("sqsim: request", "service", "eventbridge", "operation", op, "error", errorCode(err))
	if err != nil {
		writeEventBridgeError(w, err)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		writeEventBridgeError(w, errEBInternal())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func writeEventBridgeError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.shape, e.message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(e.status)
	w.Write(body)
}

// EventBridge errors, from service/eventbridge's model.

func errEBUnknownOperation(op string) *apiError {
	return newAPIError(http.StatusBadRequest, "UnknownOperationException", "UnknownOperationException",
		"The operation %q is not valid for this endpoint.", truncate(op, 100))
}

func errEBSerialization(reason string) *apiError {
	return newAPIError(http.StatusBadRequest, "SerializationException", "SerializationException",
		"The request body could not be decoded: %s", truncate(reason, 200))
}

func errEBValidation(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "ValidationException", "ValidationException", format, args...)
}

func errEBNotFound(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "ResourceNotFoundException", "ResourceNotFoundException", format, args...)
}

func errEBAlreadyExists(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "ResourceAlreadyExistsException", "ResourceAlreadyExistsException", format, args...)
}

func errEBThrottling() *apiError {
	return newAPIError(http.StatusBadRequest, "ThrottlingException", "ThrottlingException", "Rate exceeded (injected by the simulator).")
}

func errEBInternal() *apiError {
	e := newAPIError(http.StatusInternalServerError, "InternalException", "InternalException", "Internal error (injected by the simulator).")
	e.server = true
	return e
}

// eventBusNamePattern is AWS's rule for the names of custom buses.
var eventBusNamePattern = regexp.MustCompile(`^[/\.\-_A-Za-z0-9]{1,256}$`)

// ruleNamePattern and targetIDPattern are AWS's rules for rule names and
// target ids.
var (
	ruleNamePattern = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
	targetIDPattern = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
)

func (s *Simulator) eventBusARN(name string) string {
	return s.arn("events", "event-bus/"+name)
}

// newEventBus returns an empty bus called name.
func (s *Simulator) newEventBus(name, description string, now time.Time) *eventBus {
	return &eventBus{name: name, arn: s.eventBusARN(name), description: description, createdAt: now, modifiedAt: now, rules: make(map[string]*eventRule)}
}

// eventBus resolves an EventBusName (a name or an ARN; empty is the
// default bus).
func (s *Simulator) eventBus(nameOrARN string) (*eventBus, *apiError) {
	name := nameOrARN
	if name == "" {
		name = defaultEventBus
	}
	if rest, ok := strings.CutPrefix(name, s.arn("events", "event-bus/")); ok {
		name = rest
	}
	b := s.buses[name]
	if b == nil {
		return nil, errEBNotFound("Event bus %s does not exist.", truncate(nameOrARN, 256))
	}
	return b, nil
}

type createEventBusInput struct {
	Name        string
	Description string
}

func (s *Simulator) createEventBus(in *createEventBusInput) (any, *apiError) {
	switch {
	case in.Name == "":
		return nil, errEBValidation("1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null")
	case !eventBusNamePattern.MatchString(in.Name) || strings.HasPrefix(in.Name, "aws."):
		return nil, errEBValidation("Event bus name %s is not valid.", truncate(in.Name, 256))
	case s.buses[in.Name] != nil:
		return nil, errEBAlreadyExists("Event bus %s already exists.", in.Name)
	}
	b := s.newEventBus(in.Name, in.Description, s.clock.Now())
	s.buses[b.name] = b
	return struct{ EventBusArn string }{b.arn}, nil
}

type eventBusNameInput struct {
	Name string
}

// eventBusOutput is a bus as DescribeEventBus and ListEventBuses show it.
type eventBusOutput struct {
	Name             string
	Arn              string
	Description      string `json:",omitempty"`
	CreationTime     float64
	LastModifiedTime float64
}

func (b *eventBus) output() eventBusOutput {
	return eventBusOutput{Name: b.name, Arn: b.arn, Description: b.description,
		CreationTime: epochSeconds(b.createdAt), LastModifiedTime: epochSeconds(b.modifiedAt)}
}

// epochSeconds is a timestamp as AWS JSON sends it.
func epochSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1e3
}

func (s *Simulator) describeEventBus(in *eventBusNameInput) (any, *apiError) {
	b, err := s.eventBus(in.Name)
	if err != nil {
		return nil, err
	}
	return b.output(), nil
}

func (s *Simulator) deleteEventBus(in *eventBusNameInput) (any, *apiError) {
	if in.Name == defaultEventBus {
		return nil, errEBValidation("Cannot delete event bus default.")
	}
	// Deleting a bus that does not exist succeeds, as in EventBridge.
	delete(s.buses, in.Name)
	return struct{}{}, nil
}

type listInput struct {
	NamePrefix string
	NextToken  string
	Limit      *int32
}

func (s *Simulator) listEventBuses(in *listInput) (any, *apiError) {
	page, next, err := pageByName(namesWithPrefix(s.buses, in.NamePrefix), in.Limit, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := struct {
		EventBuses []eventBusOutput
		NextToken  string `json:",omitempty"`
	}{EventBuses: []eventBusOutput{}, NextToken: next}
	for _, name := range page {
		out.EventBuses = append(out.EventBuses, s.buses[name].output())
	}
	return out, nil
}

// namesWithPrefix returns the keys of m that start with prefix, sorted: what the EventBridge
// list operations page through.
func namesWithPrefix[V any](m map[string]V, prefix string) []string {
	var names []string
	for name := range m {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// pageByName pages sorted names for the EventBridge list operations: up to
// limit (1 to 100, default 100) after the token, which is the last name of
// the previous page.
func pageByName(names []string, limit *int32, token string) ([]string, string, *apiError) {
	n := 100
	if limit != nil {
		if *limit < 1 || *limit > 100 {
			return nil, "", errEBValidation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", *limit)
		}
		n = int(*limit)
	}
	if token != "" {
		i, _ := slices.BinarySearch(names, token)
		if i < len(names) && names[i] == token {
			i++
		}
		names = names[i:]
	}
	if len(names) <= n {
		return names, "", nil
	}
	return names[:n], names[n-1], nil
}

func (s *Simulator) ruleARN(bus, name string) string {
	if bus == defaultEventBus {
		return s.arn("events", "rule/"+name)
	}
	return s.arn("events", "rule/"+bus+"/"+name)
}

type putRuleInput struct {
	Name               string
	EventBusName       string
	EventPattern       string
	ScheduleExpression string
	State              string
	Description        string
	RoleArn            string
}

func (s *Simulator) putRule(in *putRuleInput) (any, *apiError) {
	b, err := s.eventBus(in.EventBusName)
	if err != nil {
		return nil, err
	}
	switch {
	case !ruleNamePattern.MatchString(in.Name):
		return nil, errEBValidation("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", truncate(in.Name, 64))
	case in.EventPattern == "" && in.ScheduleExpression == "":
		return nil, errEBValidation("Parameter(s) EventPattern or ScheduleExpression must be specified.")
	case in.ScheduleExpression != "" && b.name != defaultEventBus:
		return nil, errEBValidation("ScheduleExpression is supported only on the default event bus.")
	case in.State != "" && in.State != "ENABLED" && in.State != "DISABLED":
		return nil, errEBValidation("1 validation error detected: Value '%s' at 'state' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED]", truncate(in.State, 50))
	}
	var pattern map[string]any
	if in.EventPattern != "" {
		var perr *apiError
		if pattern, perr = parseEventPattern(in.EventPattern); perr != nil {
			return nil, perr
		}
	}
	state := in.State
	if state == "" {
		state = "ENABLED"
	}
	r := b.rules[in.Name]
	if r == nil {
		r = &eventRule{name: in.Name, bus: b.name, arn: s.ruleARN(b.name, in.Name)}
		b.rules[in.Name] = r
	}
	r.eventPattern, r.pattern, r.schedule, r.state, r.description, r.roleARN =
		in.EventPattern, pattern, in.ScheduleExpression, state, in.Description, in.RoleArn
	return struct{ RuleArn string }{r.arn}, nil
}

// ruleOutput is a rule as DescribeRule and ListRules show it.
type ruleOutput struct {
	Name               string
	Arn                string
	EventBusName       string
	EventPattern       string `json:",omitempty"`
	ScheduleExpression string `json:",omitempty"`
	State              string
	Description        string `json:",omitempty"`
	RoleArn            string `json:",omitempty"`
}

func (r *eventRule) output() ruleOutput {
	return ruleOutput{Name: r.name, Arn: r.arn, EventBusName: r.bus, EventPattern: r.eventPattern,
		ScheduleExpression: r.schedule, State: r.state, Description: r.description, RoleArn: r.roleARN}
}

type ruleNameInput struct {
	Name         string
	EventBusName string
	Force        bool
}

// rule resolves a rule by bus and name.
func (s *Simulator) rule(busName, name string) (*eventRule, *apiError) {
	b, err := s.eventBus(busName)
	if err != nil {
		return nil, err
	}
	r := b.rules[name]
	if r == nil {
		return nil, errEBNotFound("Rule %s does not exist on EventBus %s.", truncate(name, 64), b.name)
	}
	return r, nil
}

func (s *Simulator) describeRule(in *ruleNameInput) (any, *apiError) {
	r, err := s.rule(in.EventBusName, in.Name)
	if err != nil {
		return nil, err
	}
	return r.output(), nil
}

func (s *Simulator) deleteRule(in *ruleNameInput) (any, *apiError) {
	b, err := s.eventBus(in.EventBusName)
	if err != nil {
		return nil, err
	}
	r := b.rules[in.Name]
	if r == nil {
		return struct{}{}, nil
	}
	if len(r.targets) > 0 {
		return nil, errEBValidation("Rule can't be deleted since it has targets.")
	}
	delete(b.rules, in.Name)
	return struct{}{}, nil
}

type listRulesInput struct {
	EventBusName string
	NamePrefix   string
	NextToken    string
	Limit        *int32
}

func (s *Simulator) listRules(in *listRulesInput) (any, *apiError) {
	b, err := s.eventBus(in.EventBusName)
	if err != nil {
		return nil, err
	}
	page, next, err := pageByName(namesWithPrefix(b.rules, in.NamePrefix), in.Limit, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := struct {
		Rules     []ruleOutput
		NextToken string `json:",omitempty"`
	}{Rules: []ruleOutput{}, NextToken: next}
	for _, name := range page {
		out.Rules = append(out.Rules, b.rules[name].output())
	}
	return out, nil
}

type putTargetsInput struct {
	Rule         string
	EventBusName string
	Targets      []eventTarget
}

// maxTargetsPerRule is EventBridge's quota.
const maxTargetsPerRule = 5

func (s *Simulator) putTargets(in *putTargetsInput) (any, *apiError) {
	r, err := s.rule(in.EventBusName, in.Rule)
	if err != nil {
		return nil, err
	}
	if len(in.Targets) == 0 || len(in.Targets) > 10 {
		return nil, errEBValidation("1 validation error detected: Value at 'targets' failed to satisfy constraint: Member must have length between 1 and 10")
	}
	for _, t := range in.Targets {
		if err := s.validateTarget(t); err != nil {
			return nil, err
		}
	}
	merged := slices.Clone(r.targets)
	for _, t := range in.Targets {
		if i := slices.IndexFunc(merged, func(o eventTarget) bool { return o.Id == t.Id }); i >= 0 {
			merged[i] = t
		} else {
			merged = append(merged, t)
		}
	}
	if len(merged) > maxTargetsPerRule {
		return nil, newAPIError(http.StatusBadRequest, "LimitExceededException", "LimitExceededException",
			"The requested resource exceeds the maximum number allowed.")
	}
	slices.SortFunc(merged, func(a, b eventTarget) int { return strings.Compare(a.Id, b.Id) })
	r.targets = merged
	return struct {
		FailedEntryCount int
		FailedEntries    []struct{}
	}{0, []struct{}{}}, nil
}

// validateTarget applies PutTargets' checks to one target. An SQS target
// or DLQ need not exist yet, as in EventBridge: delivery finds out.
func (s *Simulator) validateTarget(t eventTarget) *apiError {
	switch {
	case !targetIDPattern.MatchString(t.Id):
		return errEBValidation("1 validation error detected: Value '%s' at 'targets.1.member.id' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", truncate(t.Id, 64))
	case !strings.HasPrefix(t.Arn, "arn:"):
		return errEBValidation("Parameter %s is not valid for target %s.", truncate(t.Arn, 200), t.Id)
	case t.Input != "" && t.InputPath != "":
		return errEBValidation("Only one of Input, InputPath, or InputTransformer must be provided for target %s.", t.Id)
	case t.Input != "" && !json.Valid([]byte(t.Input)):
		return errEBValidation("Input for target %s is not valid JSON.", t.Id)
	}
	if strings.HasPrefix(t.Arn, s.servicePrefix("sqs")) && strings.HasSuffix(t.Arn, ".fifo") && (t.SqsParameters == nil || t.SqsParameters.MessageGroupId == "") {
		return errEBValidation("Parameter(s) SqsParameters must be specified for target: %s.", t.Id)
	}
	if d := t.DeadLetterConfig; d != nil && d.Arn != "" {
		if !strings.HasPrefix(d.Arn, s.servicePrefix("sqs")) || strings.HasSuffix(d.Arn, ".fifo") {
			return errEBValidation("The dead-letter queue of target %s must be a standard SQS queue: %s.", t.Id, truncate(d.Arn, 200))
		}
	}
	if p := t.RetryPolicy; p != nil {
		if n := p.MaximumRetryAttempts; n != nil && (*n < 0 || *n > 185) {
			return errEBValidation("MaximumRetryAttempts must be between 0 and 185 for target %s.", t.Id)
		}
		if n := p.MaximumEventAgeInSeconds; n != nil && (*n < 60 || *n > 86400) {
			return errEBValidation("MaximumEventAgeInSeconds must be between 60 and 86400 for target %s.", t.Id)
		}
	}
	return nil
}

type removeTargetsInput struct {
	Rule         string
	EventBusName string
	Ids          []string
}

func (s *Simulator) removeTargets(in *removeTargetsInput) (any, *apiError) {
	r, err := s.rule(in.EventBusName, in.Rule)
	if err != nil {
		return nil, err
	}
	r.targets = slices.DeleteFunc(r.targets, func(t eventTarget) bool { return slices.Contains(in.Ids, t.Id) })
	return struct {
		FailedEntryCount int
		FailedEntries    []struct{}
	}{0, []struct{}{}}, nil
}

type listTargetsInput struct {
	Rule         string
	EventBusName string
	NextToken    string
	Limit        *int32
}

func (s *Simulator) listTargetsByRule(in *listTargetsInput) (any, *apiError) {
	r, err := s.rule(in.EventBusName, in.Rule)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(r.targets))
	for i, t := range r.targets {
		ids[i] = t.Id
	}
	page, next, err := pageByName(ids, in.Limit, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := struct {
		Targets   []eventTarget
		NextToken string `json:",omitempty"`
	}{Targets: []eventTarget{}, NextToken: next}
	for _, t := range r.targets {
		if slices.Contains(page, t.Id) {
			out.Targets = append(out.Targets, t)
		}
	}
	return out, nil
}
