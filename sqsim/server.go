package sqsim

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime/debug"
	"strings"
	"time"
)

// maxRequestBody caps what a request may carry. The largest valid request,
// a batch of 1 MiB of message text, can grow several times over in JSON
// escaping (a '<' may travel as \u003c), so the cap leaves room for that
// and still stops a client from making the simulator buffer anything.
const maxRequestBody = 8 << 20

// request carries what the handlers need from the HTTP request.
type request struct {
	ctx context.Context
	// baseURL is the scheme and host the client called, for queue URLs.
	baseURL string
	// senderID is the SenderId of messages sent in this request: a
	// principal id derived from the access key id of the signature (see
	// senderID).
	senderID string
}

// ServeHTTP answers SQS (AWS JSON 1.0 or Query), CloudWatch (RPC v2
// CBOR, AWS JSON 1.0 or Query), EventBridge (AWS JSON 1.1) and Lambda
// (REST-JSON) requests, each in the region it is signed for. Every request
// first does the time-driven work (Tick) of its region. A request that
// names no operation of these services exactly is refused in its protocol's
// error shape, before anything is read or changed.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setRequestID(w)
	serve, fail := route(r)
	region, err := s.regionFor(r)
	if err != nil {
		fail(w, err)
		return
	}
	rc := &request{ctx: r.Context(), baseURL: baseURL(r), senderID: region.senderID(r)}
	serve(region, w, r, rc)
}

// handler answers one request in a region.
type handler func(s *Simulator, w http.ResponseWriter, r *http.Request, rc *request)

// route tells which service and protocol a request speaks: the handler that
// answers it, and the writer of its errors in that protocol's shape.
func route(r *http.Request) (handler, func(http.ResponseWriter, *apiError)) {
	target := r.Header.Get("X-Amz-Target")
	switch {
	case strings.HasPrefix(r.URL.Path, "/service/"):
		return (*Simulator).serveCloudWatch, writeCBORError
	case strings.HasPrefix(target, sqsTargetPrefix):
		return (*Simulator).serveSQS, writeSQSError
	case strings.HasPrefix(target, cloudWatchTargetPrefix):
		return (*Simulator).serveCloudWatchJSON, writeCloudWatchJSONError
	case strings.HasPrefix(target, eventBridgeTargetPrefix):
		return (*Simulator).serveEventBridge, writeEventBridgeError
	case strings.HasPrefix(r.URL.Path, lambdaPathPrefix):
		return (*Simulator).serveLambda, writeLambdaError
	case r.Header.Get("Smithy-Protocol") == "rpc-v2-cbor" || (r.Header.Get("Content-Type") != "" && hasMediaType(r, "application/cbor")):
		// RPC v2 CBOR names its operation in the path alone: a CBOR request elsewhere (with
		// a junk X-Amz-Target, say) names no operation, and is answered in the CBOR its
		// client reads rather than in a JSON or XML shape it cannot.
		return refuse(writeCBORError, errInvalidAction(cmp.Or(target, r.Method+" "+r.URL.Path))), writeCBORError
	case target != "" || r.Header.Get("Content-Type") == "application/x-amz-json-1.0":
		// A JSON request for no service here (or without its target): in
		// the shape of the protocol the client chose, and no operation
		// guessed from a bare name.
		return refuse(writeSQSError, errInvalidAction(target)), writeSQSError
	case r.Method == http.MethodPost || r.URL.Query().Has("Action"):
		// The Query protocol (Action=... form-encoded or in the URL) of
		// older SDKs and CLIs, Debian's aws CLI 2.9 among them.
		return (*Simulator).serveQuery, writeQueryError
	}
	notFound := func(w http.ResponseWriter, _ *apiError) {
		http.Error(w, "sqsim: SQS (AWS JSON 1.0 or Query) and CloudWatch (RPC v2 CBOR, AWS JSON 1.0 or Query) endpoint", http.StatusNotFound)
	}
	return refuse(notFound, nil), notFound
}

// refuse is a handler that answers every request with err.
func refuse(fail func(http.ResponseWriter, *apiError), err *apiError) handler {
	return func(_ *Simulator, w http.ResponseWriter, _ *http.Request, _ *request) { fail(w, err) }
}

// sqsTargetPrefix starts the X-Amz-Target of every AWS JSON 1.0 SQS
// request.
const sqsTargetPrefix = "AmazonSQS."

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// senderID returns the SenderId of a request's messages. SQS gives the
// caller's principal id (an IAM user's AIDA..., a role's AROA...:session),
// not the access key id; the simulator knows no principals, so it derives a
// stable IAM-user-like id from the access key id of a SigV4 Authorization
// header ("AWS4-HMAC-SHA256 Credential=AKID/date/region/service/..."), and
// uses the account id, the root principal's id, for unsigned requests.
func (s *Simulator) senderID(r *http.Request) string {
	key, _, _ := credentialScope(r)
	if key == "" || len(key) > 128 {
		return s.accountID
	}
	return PrincipalID(key)
}

// PrincipalID is the principal id the simulator reports as the SenderId
// of messages sent with the access key id accessKeyID: "AIDA" and 17
// characters of base32 drawn from a SHA-256 of the key, as an IAM user's id
// looks.
func PrincipalID(accessKeyID string) string {
	sum := sha256.Sum256([]byte(accessKeyID))
	return "AIDA" + base32.StdEncoding.EncodeToString(sum[:])[:17]
}

// readBody reads the whole body up to maxRequestBody, gunzipped when the
// client compressed it (Content-Encoding: gzip): the SDKs compress a large
// PutMetricData that way. The limit holds for the body as it arrives and as
// it unpacks, so that a small bomb cannot make the simulator buffer much.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errBodyTooLarge(maxRequestBody)
		}
		return nil, errMalformedBody("reading the body: " + err.Error())
	}
	switch encoding := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); encoding {
	case "", "identity":
		return body, nil
	case "gzip":
		return gunzip(body)
	default:
		return nil, errMalformedBody("the content encoding " + truncate(encoding, 50) + " is not gzip")
	}
}

func gunzip(body []byte) ([]byte, *apiError) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, errMalformedBody("gzip: " + err.Error())
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxRequestBody+1))
	if err != nil {
		return nil, errMalformedBody("gzip: " + err.Error())
	}
	if len(out) > maxRequestBody {
		return nil, errBodyTooLarge(maxRequestBody)
	}
	return out, nil
}

// decoder fills an operation's input struct from the request, in the
// request's protocol: decodeJSON for AWS JSON 1.0, decodeQuery for the
// Query protocol. Both protocols share every handler below.
type decoder func(in any) *apiError

// operation runs one SQS operation on a request's input.
type operation func(s *Simulator, rc *request, decode decoder) (any, *apiError)

// locked makes an operation that decodes its input and runs fn under the
// simulator's lock, after the time-driven work.
func locked[In any](fn func(*Simulator, *request, *In) (any, *apiError)) operation {
	return func(s *Simulator, rc *request, decode decoder) (any, *apiError) {
		var in In
		if err := decode(&in); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tick()
		return fn(s, rc, &in)
	}
}

// unlocked is locked for operations that manage the lock themselves
// (ReceiveMessage releases it while it long-polls).
func unlocked[In any](fn func(*Simulator, *request, *In) (any, *apiError)) operation {
	return func(s *Simulator, rc *request, decode decoder) (any, *apiError) {
		var in In
		if err := decode(&in); err != nil {
			return nil, err
		}
		return fn(s, rc, &in)
	}
}

// sqsOperations maps X-Amz-Target operation names to their handlers.
var sqsOperations = map[string]operation{
	"CreateQueue":                  locked((*Simulator).createQueue),
	"DeleteQueue":                  locked((*Simulator).deleteQueue),
	"GetQueueUrl":                  locked((*Simulator).getQueueURL),
	"ListQueues":                   locked((*Simulator).listQueues),
	"GetQueueAttributes":           locked((*Simulator).getQueueAttributes),
	"SetQueueAttributes":           locked((*Simulator).setQueueAttributes),
	"ListDeadLetterSourceQueues":   locked((*Simulator).listDeadLetterSourceQueues),
	"TagQueue":                     locked((*Simulator).tagQueue),
	"UntagQueue":                   locked((*Simulator).untagQueue),
	"ListQueueTags":                locked((*Simulator).listQueueTags),
	"PurgeQueue":                   locked((*Simulator).purgeQueue),
	"SendMessage":                  locked((*Simulator).sendMessage),
	"SendMessageBatch":             locked((*Simulator).sendMessageBatch),
	"ReceiveMessage":               unlocked((*Simulator).receiveMessage),
	"DeleteMessage":                locked((*Simulator).deleteMessage),
	"DeleteMessageBatch":           locked((*Simulator).deleteMessageBatch),
	"ChangeMessageVisibility":      locked((*Simulator).changeMessageVisibility),
	"ChangeMessageVisibilityBatch": locked((*Simulator).changeMessageVisibilityBatch),
	"StartMessageMoveTask":         locked((*Simulator).startMessageMoveTask),
	"ListMessageMoveTasks":         locked((*Simulator).listMessageMoveTasks),
	"CancelMessageMoveTask":        locked((*Simulator).cancelMessageMoveTask),
	"AddPermission":                locked((*Simulator).addPermission),
	"RemovePermission":             locked((*Simulator).removePermission),
}

func decodeJSON(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkMembers(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	if !takesQueueURL(v) {
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) == nil && members["QueueUrl"] != nil {
			return errInvalidAddress("QueueUrl, for an operation that names no queue by it")
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errMalformedBody(err.Error())
	}
	return nil
}

// takesQueueURL reports whether the input in names its queue with a QueueUrl member. A request
// of another operation that carries a queue's address (a QueueUrl, or in the Query protocol
// the queue's URL as its path) was meant for that queue, not for what the operation acts on.
func takesQueueURL(in any) bool {
	t := reflect.TypeOf(in)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, ok := t.FieldByName("QueueUrl")
	return ok
}

// checkMembers refuses what encoding/json would read other than SQS does: a member named twice
// in one object (json keeps the last, so {"QueueUrl":a,"QueueUrl":b} would act on b), and a
// member of the input in another case than the service model's ("queueUrl": json matches names
// without regard to case, SQS does not). t is the type the body decodes into.
func checkMembers(body []byte, t reflect.Type) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := checkValue(dec, t); err != nil {
		return errMalformedBody(err.Error())
	}
	return nil
}

// checkValue reads one JSON value from dec, checking the members of its objects against t.
func checkValue(dec *json.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := make(map[string]bool)
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := key.(string)
			if seen[name] {
				return fmt.Errorf("member %q given twice", truncate(name, 100))
			}
			seen[name] = true
			member, err := memberType(t, name)
			if err != nil {
				return err
			}
			if err := checkValue(dec, member); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkValue(dec, elem); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

// memberType returns the type of the member name of an object read into t: a struct's field of
// that exact name (nil, to be ignored as encoding/json does, for a name no field has in any
// case), a map's values; an error for a field's name in another case.
func memberType(t reflect.Type, name string) (reflect.Type, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind() == reflect.Map:
		return t.Elem(), nil
	case t.Kind() != reflect.Struct:
		return nil, nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		field := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			if n, _, _ := strings.Cut(tag, ","); n == "-" {
				continue
			} else if n != "" {
				field = n
			}
		}
		switch {
		case field == name:
			return f.Type, nil
		case strings.EqualFold(field, name):
			return nil, fmt.Errorf("member %q is spelt %q", truncate(name, 100), field)
		}
	}
	return nil, nil
}

// serveSQS answers an AWS JSON 1.0 request whose X-Amz-Target names
// serveSQS answers an AWS JSON 1.0 request for the operation its
// X-Amz-Target names.
func (s *Simulator) serveSQS(w http.ResponseWriter, r *http.Request, rc *request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), sqsTargetPrefix)
	defer s.recoverPanic(w, op, writeSQSError)
	if err := checkJSONRequest(r, op, sqsOperations); err != nil {
		writeSQSError(w, err)
		return
	}
	if r.URL.Path != "/" {
		// AWS JSON 1.0 goes to the endpoint's root and names its queue in the body: a request
		// posted to a queue's URL (or anywhere else) is addressed twice, perhaps to two queues.
		writeSQSError(w, errInvalidAddress(truncate(r.URL.Path, 200)))
		return
	}
	handler := sqsOperations[op]
	body, err := readBody(w, r)
	if err != nil {
		writeSQSError(w, err)
		return
	}
	if err := s.serveFaults(rc.ctx, op, errRequestThrottled, errInternal); err != nil {
		writeSQSError(w, err)
		return
	}
	start := time.Now()
	out, err := handler(s, rc, func(in any) *apiError { return decodeJSON(body, in) })
	s.log.Debug("sqsim: request", "service", "sqs", "operation", op, "error", errorCode(err), "duration", time.Since(start))
	if err != nil {
		writeSQSError(w, err)
		return
	}
	writeSQS(w, out)
}

// serveFaults counts the call and applies the injected faults: latency
// first, then a throttling or internal error drawn from the rates.
func (s *Simulator) serveFaults(ctx context.Context, op string, throttle, internal func() *apiError) *apiError {
	s.stats.count(op)
	f, roll := s.stats.fault(op)
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	switch {
	case f.Deny:
		return errAccessDenied(op)
	case roll < f.ThrottleRate:
		return throttle()
	case roll < f.ThrottleRate+f.ErrorRate:
		return internal()
	}
	return nil
}

func errorCode(err *apiError) string {
	if err == nil {
		return ""
	}
	return err.queryCode
}

// recoverPanic turns a panic in a handler into an internal error for the
// client and a log record, so that one bad request never stops the server.
func (s *Simulator) recoverPanic(w http.ResponseWriter, op string, write func(http.ResponseWriter, *apiError)) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("sqsim: panic serving request", "operation", op, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		write(w, errInternal())
	}
}

func writeSQS(w http.ResponseWriter, out any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		writeSQSError(w, errInternal())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// writeSQSError answers an AWS JSON 1.0 request with SQS's error shape.
func writeSQSError(w http.ResponseWriter, e *apiError) {
	writeJSONError(w, e, "com.amazonaws.sqs#")
}

// writeJSONError writes AWS JSON 1.0's error shape, its __type in a service's namespace, with the
// query-compatible code the SDKs map to their typed errors.
func writeJSONError(w http.ResponseWriter, e *apiError, namespace string) {
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{namespace + e.shape, e.message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", e.queryErrorHeader())
	w.WriteHeader(e.status)
	w.Write(body)
}
