package sqsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxPutEventsSize is EventBridge's limit on a PutEvents request's entries
// (256 KB), counted as AWS documents.
const maxPutEventsSize = 256 * 1024

type putEventsEntry struct {
	Source       *string
	DetailType   *string
	Detail       *string
	EventBusName string
	Resources    []string
	Time         *float64
	TraceHeader  string
}

type putEventsResultEntry struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

type putEventsInput struct {
	Entries []putEventsEntry
}

// entrySize is an entry's size as EventBridge counts it: 14 bytes for the
// time, plus the UTF-8 bytes of source, detail type, detail and resources.
func (e *putEventsEntry) entrySize() int {
	n := 14 + len(deref(e.Source)) + len(deref(e.DetailType)) + len(deref(e.Detail))
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

func (s *Simulator) putEvents(in *putEventsInput) (any, *apiError) {
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		return nil, errEBValidation("1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and 10")
	}
	total := 0
	for i := range in.Entries {
		total += in.Entries[i].entrySize()
	}
	if total > maxPutEventsSize {
		return nil, errEBValidation("Total size of the entries in the request is over the limit.")
	}
	out := struct {
		FailedEntryCount int
		Entries          []putEventsResultEntry
	}{Entries: []putEventsResultEntry{}}
	now := s.clock.Now()
	for i := range in.Entries {
		result := s.putEvent(&in.Entries[i], now)
		if result.ErrorCode != "" {
			out.FailedEntryCount++
		}
		out.Entries = append(out.Entries, result)
	}
	return out, nil
}

// putEvent validates one entry, builds the event and routes it to the
// matching rules' targets.
func (s *Simulator) putEvent(e *putEventsEntry, now time.Time) putEventsResultEntry {
	fail := func(code, format string, args ...any) putEventsResultEntry {
		return putEventsResultEntry{ErrorCode: code, ErrorMessage: fmt.Sprintf(format, args...)}
	}
	switch {
	case deref(e.Source) == "":
		return fail("InvalidArgument", "Parameter Source is not valid. Reason: Source is a required argument.")
	case deref(e.DetailType) == "":
		return fail("InvalidArgument", "Parameter DetailType is not valid. Reason: DetailType is a required argument.")
	case e.Detail == nil:
		return fail("InvalidArgument", "Parameter Detail is not valid. Reason: Detail is a required argument.")
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(*e.Detail), &detail); err != nil || detail == nil {
		return fail("MalformedDetail", "Detail is malformed.")
	}
	bus, err := s.eventBus(e.EventBusName)
	if err != nil {
		return fail("ResourceNotFoundException", "%s", err.message)
	}
	at := now
	if e.Time != nil {
		at = time.UnixMilli(int64(*e.Time * 1e3))
	}
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	id := s.newMessageID()
	envelope := struct {
		Version    string          `json:"version"`
		ID         string          `json:"id"`
		DetailType string          `json:"detail-type"`
		Source     string          `json:"source"`
		Account    string          `json:"account"`
		Time       string          `json:"time"`
		Region     string          `json:"region"`
		Resources  []string        `json:"resources"`
		Detail     json.RawMessage `json:"detail"`
	}{"0", id, *e.DetailType, *e.Source, s.accountID, at.UTC().Format("2006-01-02T15:04:05Z"), s.region, resources, compactJSON(*e.Detail)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(envelope)
	event := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	var matchable map[string]any
	json.Unmarshal(event, &matchable)

	names := make([]string, 0, len(bus.rules))
	for name := range bus.rules {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r := bus.rules[name]
		if r.state != "ENABLED" || r.pattern == nil || !matchPattern(r.pattern, matchable) {
			continue
		}
		for _, t := range r.targets {
			s.deliver(r, t, id, event, matchable, now)
		}
	}
	return putEventsResultEntry{EventId: id}
}

func compactJSON(s string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return json.RawMessage(s)
	}
	return buf.Bytes()
}

// eventBridgeSender is the SenderId of the messages EventBridge delivers.
var eventBridgeSender = PrincipalID("events.amazonaws.com")

// deliver sends an event to one target. Only SQS targets receive anything;
// a failed delivery goes to the target's dead-letter queue, if it has one,
// with EventBridge's failure attributes. The simulator makes no retries:
// the failures it can meet (a missing queue, an event larger than the
// queue's MaximumMessageSize) are those EventBridge does not retry.
func (s *Simulator) deliver(r *eventRule, t eventTarget, eventID string, event []byte, matchable map[string]any, now time.Time) {
	if !strings.HasPrefix(t.Arn, s.servicePrefix("sqs")) {
		return
	}
	body := string(event)
	switch {
	case t.Input != "":
		body = t.Input
	case t.InputPath != "":
		v, ok := jsonPath(matchable, t.InputPath)
		if !ok {
			return
		}
		b, _ := json.Marshal(v)
		body = string(b)
	}
	rc := &request{senderID: eventBridgeSender}
	q := s.queueByARN(t.Arn)
	if q == nil {
		s.deadLetterEvent(r, t, event, "NO_RESOURCE", "The specified queue does not exist.", now)
		return
	}
	entry := &sendEntry{MessageBody: &body}
	if q.attrs.fifo {
		group := ""
		if t.SqsParameters != nil {
			group = t.SqsParameters.MessageGroupId
		}
		entry.MessageGroupId, entry.MessageDeduplicationId = &group, &eventID
	}
	if _, err := s.send(rc, q, entry, now); err != nil {
		s.deadLetterEvent(r, t, event, "SDK_CLIENT_ERROR", err.message, now)
	}
}

// deadLetterEvent sends an event that could not be delivered to t's
// dead-letter queue with the attributes EventBridge sets: RULE_ARN,
// TARGET_ARN, ERROR_CODE, ERROR_MESSAGE and RETRY_ATTEMPTS. Without a DLQ,
// or when that send fails too, the event is dropped, as in EventBridge.
func (s *Simulator) deadLetterEvent(r *eventRule, t eventTarget, event []byte, code, message string, now time.Time) {
	if t.DeadLetterConfig == nil || t.DeadLetterConfig.Arn == "" {
		s.log.Debug("sqsim: event dropped", "rule", r.arn, "target", t.Arn, "error", code)
		return
	}
	dlq := s.queueByARN(t.DeadLetterConfig.Arn)
	if dlq == nil {
		s.log.Debug("sqsim: event dropped, its dead-letter queue does not exist", "rule", r.arn, "dlq", t.DeadLetterConfig.Arn)
		return
	}
	str := func(v string) messageAttribute { return messageAttribute{DataType: "String", StringValue: &v} }
	body := string(event)
	entry := &sendEntry{
		MessageBody: &body,
		MessageAttributes: map[string]messageAttribute{
			"RULE_ARN":       str(r.arn),
			"TARGET_ARN":     str(t.Arn),
			"ERROR_CODE":     str(code),
			"ERROR_MESSAGE":  str(truncate(message, 1000)),
			"RETRY_ATTEMPTS": {DataType: "Number", StringValue: new("0")},
		},
	}
	if _, err := s.send(&request{senderID: eventBridgeSender}, dlq, entry, now); err != nil {
		s.log.Debug("sqsim: event dropped, its dead-letter queue refused it", "rule", r.arn, "dlq", dlq.name, "error", err.queryCode)
	}
}

// jsonPath evaluates the JSONPath subset InputPath uses most: $ and
// $.a.b.
func jsonPath(v map[string]any, path string) (any, bool) {
	rest, ok := strings.CutPrefix(path, "$")
	if !ok {
		return nil, false
	}
	var cur any = v
	for _, part := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		if part == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Event patterns. A pattern is a JSON object whose leaves are arrays of
// allowed values; the simulator matches exact values (strings, numbers,
// booleans, null) and the content filters prefix, suffix,
// equals-ignore-case, anything-but, exists and numeric. An event array
// matches when any of its elements does.

func errInvalidEventPattern(reason string) *apiError {
	return newAPIError(400, "InvalidEventPatternException", "InvalidEventPatternException",
		"Event pattern is not valid. Reason: %s", reason)
}

// parseEventPattern parses and checks an EventPattern.
func parseEventPattern(text string) (map[string]any, *apiError) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var p map[string]any
	if err := dec.Decode(&p); err != nil || p == nil {
		return nil, errInvalidEventPattern("Filter is not an object")
	}
	if !utf8.ValidString(text) {
		return nil, errInvalidEventPattern("Filter is not valid UTF-8")
	}
	if err := checkPattern(p); err != nil {
		return nil, err
	}
	return p, nil
}

func checkPattern(p map[string]any) *apiError {
	for key, v := range p {
		switch v := v.(type) {
		case map[string]any:
			if err := checkPattern(v); err != nil {
				return err
			}
		case []any:
			for _, elem := range v {
				if m, ok := elem.(map[string]any); ok {
					if err := checkFilter(key, m); err != nil {
						return err
					}
				} else if _, nested := elem.([]any); nested {
					return errInvalidEventPattern("Match value must be String, number, true, false, or null")
				}
			}
		default:
			return errInvalidEventPattern(fmt.Sprintf("\"%s\" must be an object or an array", truncate(key, 100)))
		}
	}
	return nil
}

var contentFilters = []string{"prefix", "suffix", "equals-ignore-case", "anything-but", "exists", "numeric"}

func checkFilter(key string, f map[string]any) *apiError {
	if len(f) != 1 {
		return errInvalidEventPattern("a content filter has exactly one key, in " + truncate(key, 100))
	}
	for op, arg := range f {
		if !slices.Contains(contentFilters, op) {
			return errInvalidEventPattern("Unrecognized match type " + truncate(op, 50))
		}
		switch op {
		case "prefix", "suffix", "equals-ignore-case":
			if _, ok := arg.(string); !ok {
				return errInvalidEventPattern(op + " match pattern must be a string")
			}
		case "exists":
			if _, ok := arg.(bool); !ok {
				return errInvalidEventPattern("exists match pattern must be either true or false.")
			}
		case "numeric":
			l, ok := arg.([]any)
			if !ok || len(l) == 0 || len(l)%2 != 0 || len(l) > 4 {
				return errInvalidEventPattern("Value of numeric must be an array of one or two comparisons.")
			}
			for i := 0; i < len(l); i += 2 {
				op, _ := l[i].(string)
				if _, isNum := l[i+1].(json.Number); !isNum || !slices.Contains([]string{"<", "<=", "=", ">=", ">"}, op) {
					return errInvalidEventPattern("Unrecognized numeric range operator or value.")
				}
			}
		}
	}
	return nil
}

// matchPattern reports whether event matches every field of pattern.
func matchPattern(pattern, event map[string]any) bool {
	for key, want := range pattern {
		got, present := event[key]
		switch want := want.(type) {
		case map[string]any:
			m, ok := got.(map[string]any)
			if !ok || !matchPattern(want, m) {
				return false
			}
		case []any:
			if !matchAny(want, got, present) {
				return false
			}
		}
	}
	return true
}

// matchAny reports whether any of the allowed values matches the event's
// value (any element of it, for an array).
func matchAny(allowed []any, got any, present bool) bool {
	values := []any{got}
	if l, ok := got.([]any); ok {
		values = l
	}
	for _, a := range allowed {
		if f, ok := a.(map[string]any); ok {
			if exists, ok := f["exists"].(bool); ok {
				if exists == present {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, v := range values {
			if matchValue(a, v) {
				return true
			}
		}
	}
	return false
}

// matchValue matches one allowed value or content filter against one event
// value.
func matchValue(allowed, v any) bool {
	f, isFilter := allowed.(map[string]any)
	if !isFilter {
		return equalJSON(allowed, v)
	}
	str, isStr := v.(string)
	for op, arg := range f {
		switch op {
		case "prefix":
			return isStr && strings.HasPrefix(str, arg.(string))
		case "suffix":
			return isStr && strings.HasSuffix(str, arg.(string))
		case "equals-ignore-case":
			return isStr && strings.EqualFold(str, arg.(string))
		case "anything-but":
			switch arg := arg.(type) {
			case []any:
				return !slices.ContainsFunc(arg, func(x any) bool { return equalJSON(x, v) })
			case map[string]any:
				if p, ok := arg["prefix"].(string); ok {
					return isStr && !strings.HasPrefix(str, p)
				}
				return false
			default:
				return !equalJSON(arg, v)
			}
		case "numeric":
			n, ok := v.(float64)
			if !ok {
				return false
			}
			l := arg.([]any)
			for i := 0; i < len(l); i += 2 {
				bound, _ := l[i+1].(json.Number).Float64()
				if !compareNumber(l[i].(string), n, bound) {
					return false
				}
			}
			return true
		}
	}
	return false
}

func compareNumber(op string, n, bound float64) bool {
	switch op {
	case "<":
		return n < bound
	case "<=":
		return n <= bound
	case "=":
		return n == bound
	case ">=":
		return n >= bound
	case ">":
		return n > bound
	}
	return false
}

// equalJSON compares a pattern value (numbers as json.Number) with an
// event value (numbers as float64).
func equalJSON(pattern, v any) bool {
	if n, ok := pattern.(json.Number); ok {
		f, err := n.Float64()
		g, isNum := v.(float64)
		return err == nil && isNum && f == g
	}
	return pattern == v
}
