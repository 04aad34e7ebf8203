package sqsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Lambda speaks REST-JSON under /2015-03-31/, as service/lambda sends it.
// The simulator keeps functions (their configuration; code is never run)
// and SQS event source mappings (their configuration; nothing is polled),
// which is what a dashboard reads to judge a queue's consumers.

// lambdaPathPrefix starts every Lambda request path the simulator serves.
const lambdaPathPrefix = "/2015-03-31/"

// lambdaFunction is a function's configuration as GetFunctionConfiguration
// returns it.
type lambdaFunction struct {
	FunctionName     string
	FunctionArn      string
	Runtime          string `json:",omitempty"`
	Role             string
	Handler          string `json:",omitempty"`
	CodeSize         int64
	CodeSha256       string
	Description      string
	Timeout          int32
	MemorySize       int32
	LastModified     string
	Version          string
	State            string
	LastUpdateStatus string
	PackageType      string
	Architectures    []string
	RevisionId       string
	Environment      *lambdaEnvironment `json:",omitempty"`
}

type lambdaEnvironment struct {
	Variables map[string]string `json:",omitempty"`
}

// eventSourceMapping is an SQS event source mapping as
// GetEventSourceMapping returns it.
type eventSourceMapping struct {
	UUID                           string
	EventSourceMappingArn          string
	EventSourceArn                 string
	FunctionArn                    string
	BatchSize                      int32
	MaximumBatchingWindowInSeconds int32
	FunctionResponseTypes          []string
	ScalingConfig                  *scalingConfig `json:",omitempty"`
	State                          string
	StateTransitionReason          string
	LastModified                   float64
	LastProcessingResult           string
}

type scalingConfig struct {
	MaximumConcurrency *int32 `json:",omitempty"`
}

// serveLambda answers a REST-JSON request under lambdaPathPrefix.
func (s *Simulator) serveLambda(w http.ResponseWriter, r *http.Request, rc *request) {
	path := strings.TrimPrefix(r.URL.Path, lambdaPathPrefix)
	parts := strings.Split(strings.TrimSuffix(path, "/"), "/")
	var op string
	var arg string
	switch {
	case len(parts) == 1 && parts[0] == "functions" && r.Method == http.MethodPost:
		op = "CreateFunction"
	case len(parts) == 1 && parts[0] == "functions" && r.Method == http.MethodGet:
		op = "ListFunctions"
	case len(parts) == 2 && parts[0] == "functions" && r.Method == http.MethodGet:
		op, arg = "GetFunction", parts[1]
	case len(parts) == 2 && parts[0] == "functions" && r.Method == http.MethodDelete:
		op, arg = "DeleteFunction", parts[1]
	case len(parts) == 3 && parts[0] == "functions" && parts[2] == "configuration" && r.Method == http.MethodGet:
		op, arg = "GetFunctionConfiguration", parts[1]
	case len(parts) == 1 && parts[0] == "event-source-mappings" && r.Method == http.MethodPost:
		op = "CreateEventSourceMapping"
	case len(parts) == 1 && parts[0] == "event-source-mappings" && r.Method == http.MethodGet:
		op = "ListEventSourceMappings"
	case len(parts) == 2 && parts[0] == "event-source-mappings" && r.Method == http.MethodGet:
		op, arg = "GetEventSourceMapping", parts[1]
	case len(parts) == 2 && parts[0] == "event-source-mappings" && r.Method == http.MethodPut:
		op, arg = "UpdateEventSourceMapping", parts[1]
	case len(parts) == 2 && parts[0] == "event-source-mappings" && r.Method == http.MethodDelete:
		op, arg = "DeleteEventSourceMapping", parts[1]
	}
	defer s.recoverPanic(w, op, writeLambdaError)
	if op == "" {
		writeLambdaError(w, newAPIError(http.StatusNotFound, "UnknownOperationException", "UnknownOperationException",
			"The operation %s %s is not served by this endpoint.", r.Method, truncate(r.URL.Path, 200)))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeLambdaError(w, err)
		return
	}
	if len(body) > 0 && !hasMediaType(r, "application/json") {
		writeLambdaError(w, errLambdaInvalidRequest("The content type %q is not application/json.", truncate(r.Header.Get("Content-Type"), 100)))
		return
	}
	if err := s.serveFaults(rc.ctx, op, errLambdaThrottled, errLambdaService); err != nil {
		writeLambdaError(w, err)
		return
	}
	s.mu.Lock()
	s.tick()
	status, out, err := s.lambdaOperation(op, arg, r.URL.Query(), body)
	s.mu.Unlock()
	s.log.Debug("sqsim: request", "service", "lambda", "operation", op, "error", errorCode(err))
	if err != nil {
		writeLambdaError(w, err)
		return
	}
	if out == nil {
		w.WriteHeader(status)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// lambdaOperation runs op with s.mu held and returns the status and body of
// its answer.
func (s *Simulator) lambdaOperation(op, arg string, query map[string][]string, body []byte) (int, any, *apiError) {
	get := func(k string) string {
		if v := query[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	decode := func(v any) *apiError {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		if err := json.Unmarshal(body, v); err != nil {
			return errLambdaInvalidRequest("The request body could not be decoded: %s", truncate(err.Error(), 200))
		}
		return nil
	}
	switch op {
	case "CreateFunction":
		var in createFunctionInput
		if err := decode(&in); err != nil {
			return 0, nil, err
		}
		f, err := s.createFunction(&in)
		return http.StatusCreated, f, err
	case "ListFunctions":
		out, err := s.listFunctions(get("Marker"), get("MaxItems"))
		return http.StatusOK, out, err
	case "GetFunction":
		f, err := s.function(arg, get("Qualifier"))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, struct {
			Configuration *lambdaFunction
			Code          struct{ RepositoryType, Location string }
		}{Configuration: f, Code: struct{ RepositoryType, Location string }{"S3", ""}}, nil
	case "GetFunctionConfiguration":
		f, err := s.function(arg, get("Qualifier"))
		return http.StatusOK, f, err
	case "DeleteFunction":
		f, err := s.function(arg, get("Qualifier"))
		if err != nil {
			return 0, nil, err
		}
		delete(s.functions, f.FunctionName)
		return http.StatusNoContent, nil, nil
	case "CreateEventSourceMapping":
		var in eventSourceMappingInput
		if err := decode(&in); err != nil {
			return 0, nil, err
		}
		m, err := s.createEventSourceMapping(&in)
		return http.StatusAccepted, m, err
	case "ListEventSourceMappings":
		out, err := s.listEventSourceMappings(get("EventSourceArn"), get("FunctionName"), get("Marker"), get("MaxItems"))
		return http.StatusOK, out, err
	case "GetEventSourceMapping":
		m, err := s.eventSourceMapping(arg)
		if err != nil {
			return 0, nil, err
		}
		out := s.mappingView(m)
		return http.StatusOK, &out, nil
	case "UpdateEventSourceMapping":
		var in eventSourceMappingInput
		if err := decode(&in); err != nil {
			return 0, nil, err
		}
		m, err := s.updateEventSourceMapping(arg, &in)
		return http.StatusAccepted, m, err
	case "DeleteEventSourceMapping":
		m, err := s.eventSourceMapping(arg)
		if err != nil {
			return 0, nil, err
		}
		delete(s.mappings, m.UUID)
		s.mappingOrder = slices.DeleteFunc(s.mappingOrder, func(id string) bool { return id == m.UUID })
		out := s.mappingView(m)
		out.State = "Deleting"
		return http.StatusAccepted, &out, nil
	}
	return 0, nil, errLambdaService()
}

func writeLambdaError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string
		Kind    string `json:"Type"`
	}{e.shape, e.message, map[bool]string{true: "Service", false: "User"}[e.server]})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", e.shape)
	w.WriteHeader(e.status)
	w.Write(body)
}

// Lambda errors, from service/lambda's model.

func errLambdaNotFound(format string, args ...any) *apiError {
	return newAPIError(http.StatusNotFound, "ResourceNotFoundException", "ResourceNotFoundException", format, args...)
}

func errLambdaInvalidParameter(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidParameterValueException", "InvalidParameterValueException", format, args...)
}

func errLambdaInvalidRequest(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidRequestContentException", "InvalidRequestContentException", format, args...)
}

func errLambdaConflict(format string, args ...any) *apiError {
	return newAPIError(http.StatusConflict, "ResourceConflictException", "ResourceConflictException", format, args...)
}

func errLambdaThrottled() *apiError {
	return newAPIError(http.StatusTooManyRequests, "TooManyRequestsException", "TooManyRequestsException", "Rate exceeded (injected by the simulator).")
}

func errLambdaService() *apiError {
	e := newAPIError(http.StatusInternalServerError, "ServiceException", "ServiceException", "Internal error (injected by the simulator).")
	e.server = true
	return e
}

// functionNamePattern is AWS's rule for function names.
var functionNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (s *Simulator) functionARN(name string) string {
	return s.arn("lambda", "function:"+name)
}

// lambdaTime is how Lambda writes a function's LastModified.
func lambdaTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000+0000")
}

type createFunctionInput struct {
	FunctionName  string
	Runtime       string
	Role          string
	Handler       string
	Description   string
	Timeout       *int32
	MemorySize    *int32
	PackageType   string
	Architectures []string
	Environment   *lambdaEnvironment
	Code          struct {
		ZipFile  []byte
		ImageUri string
		S3Bucket string
		S3Key    string
	}
}

func (s *Simulator) createFunction(in *createFunctionInput) (*lambdaFunction, *apiError) {
	timeout, memory := int32(3), int32(128)
	if in.Timeout != nil {
		timeout = *in.Timeout
	}
	if in.MemorySize != nil {
		memory = *in.MemorySize
	}
	switch {
	case !functionNamePattern.MatchString(in.FunctionName):
		return nil, errLambdaInvalidParameter("1 validation error detected: Value '%s' at 'functionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9-_]+", truncate(in.FunctionName, 140))
	case in.Role == "":
		return nil, errLambdaInvalidParameter("The role defined for the function cannot be assumed by Lambda.")
	case timeout < 1 || timeout > 900:
		return nil, errLambdaInvalidParameter("1 validation error detected: Value '%d' at 'timeout' failed to satisfy constraint: Member must have value less than or equal to 900", timeout)
	case memory < 128 || memory > 10240:
		return nil, errLambdaInvalidParameter("'MemorySize' value failed to satisfy constraint: Member must have value between 128 and 10240")
	case s.functions[in.FunctionName] != nil:
		return nil, errLambdaConflict("Function already exist: %s", in.FunctionName)
	}
	sum := sha256.Sum256(in.Code.ZipFile)
	packageType := in.PackageType
	if packageType == "" {
		packageType = "Zip"
	}
	arch := in.Architectures
	if len(arch) == 0 {
		arch = []string{"x86_64"}
	}
	f := &lambdaFunction{
		FunctionName: in.FunctionName, FunctionArn: s.functionARN(in.FunctionName),
		Runtime: in.Runtime, Role: in.Role, Handler: in.Handler, Description: in.Description,
		CodeSize: int64(len(in.Code.ZipFile)), CodeSha256: base64.StdEncoding.EncodeToString(sum[:]),
		Timeout: timeout, MemorySize: memory, LastModified: lambdaTime(s.clock.Now()),
		Version: "$LATEST", State: "Active", LastUpdateStatus: "Successful", PackageType: packageType,
		Architectures: arch, RevisionId: s.newMessageID(), Environment: in.Environment,
	}
	s.functions[f.FunctionName] = f
	return f, nil
}

// listFunctions lists the functions in name order, MaxItems (default 50) a
// page; the marker is the last name of the page before.
func (s *Simulator) listFunctions(marker, maxItems string) (any, *apiError) {
	limit, err := lambdaMaxItems(maxItems, 50)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(s.functions))
	if marker != "" {
		i, found := slices.BinarySearch(names, marker)
		if !found {
			return nil, errLambdaInvalidParameter("Invalid marker.")
		}
		names = names[i+1:]
	}
	out := struct {
		Functions  []*lambdaFunction
		NextMarker string `json:",omitempty"`
	}{Functions: []*lambdaFunction{}}
	for _, name := range names {
		if len(out.Functions) == limit {
			out.NextMarker = out.Functions[limit-1].FunctionName
			break
		}
		out.Functions = append(out.Functions, s.functions[name])
	}
	return out, nil
}

// lambdaMaxItems reads a list's MaxItems: 1 to 10000, def when absent.
func lambdaMaxItems(maxItems string, def int) (int, *apiError) {
	if maxItems == "" {
		return def, nil
	}
	n, err := parseIntParam(maxItems)
	if err != nil || n < 1 || n > 10000 {
		return 0, errLambdaInvalidParameter("1 validation error detected: Value '%s' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 10000", truncate(maxItems, 20))
	}
	return n, nil
}

// function resolves a FunctionName: a name, a full or partial ARN, each
// with an optional qualifier, which must be $LATEST (the simulator keeps
// no versions or aliases).
func (s *Simulator) function(ref, qualifier string) (*lambdaFunction, *apiError) {
	name := ref
	if i := strings.Index(ref, "function:"); i >= 0 {
		name = ref[i+len("function:"):]
		prefix := ref[:i]
		if prefix != "" && prefix != s.accountID+":" && prefix != s.arn("lambda", "") {
			return nil, errLambdaNotFound("Function not found: %s", truncate(ref, 200))
		}
	}
	if n, q, ok := strings.Cut(name, ":"); ok {
		name = n
		if qualifier == "" {
			qualifier = q
		}
	}
	f := s.functions[name]
	if f == nil || (qualifier != "" && qualifier != "$LATEST") {
		full := s.functionARN(name)
		if qualifier != "" {
			full += ":" + qualifier
		}
		return nil, errLambdaNotFound("Function not found: %s", truncate(full, 200))
	}
	return f, nil
}

type eventSourceMappingInput struct {
	EventSourceArn                 string
	FunctionName                   *string
	BatchSize                      *int32
	MaximumBatchingWindowInSeconds *int32
	FunctionResponseTypes          []string
	ScalingConfig                  *scalingConfig
	Enabled                        *bool
}

// validateMapping checks an SQS mapping's settings as Lambda does.
func validateMapping(m *eventSourceMapping, fifo bool) *apiError {
	switch {
	case m.BatchSize < 1 || m.BatchSize > 10000:
		return errLambdaInvalidParameter("BatchSize must be between 1 and 10000.")
	case fifo && m.BatchSize > 10:
		return errLambdaInvalidParameter("Batch size must be between 1 and 10 for FIFO queues.")
	case m.MaximumBatchingWindowInSeconds < 0 || m.MaximumBatchingWindowInSeconds > 300:
		return errLambdaInvalidParameter("MaximumBatchingWindowInSeconds must be between 0 and 300.")
	case m.BatchSize > 10 && m.MaximumBatchingWindowInSeconds < 1:
		return errLambdaInvalidParameter("Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10")
	case fifo && m.MaximumBatchingWindowInSeconds > 0:
		return errLambdaInvalidParameter("Batching window is not supported for FIFO queues.")
	}
	for _, t := range m.FunctionResponseTypes {
		if t != "ReportBatchItemFailures" {
			return errLambdaInvalidParameter("1 validation error detected: Value '[%s]' at 'functionResponseTypes' failed to satisfy constraint: Member must satisfy enum value set: [ReportBatchItemFailures]", truncate(t, 60))
		}
	}
	if c := m.ScalingConfig; c != nil && c.MaximumConcurrency != nil && (*c.MaximumConcurrency < 2 || *c.MaximumConcurrency > 1000) {
		return errLambdaInvalidParameter("1 validation error detected: Value '%d' at 'scalingConfig.maximumConcurrency' failed to satisfy constraint: Member must have value between 2 and 1000", *c.MaximumConcurrency)
	}
	return nil
}

// apply copies the settings given in in onto m.
func (in *eventSourceMappingInput) apply(m *eventSourceMapping) {
	if in.BatchSize != nil {
		m.BatchSize = *in.BatchSize
	}
	if in.MaximumBatchingWindowInSeconds != nil {
		m.MaximumBatchingWindowInSeconds = *in.MaximumBatchingWindowInSeconds
	}
	if in.FunctionResponseTypes != nil {
		m.FunctionResponseTypes = in.FunctionResponseTypes
	}
	if in.ScalingConfig != nil {
		m.ScalingConfig = in.ScalingConfig
	}
}

func (s *Simulator) createEventSourceMapping(in *eventSourceMappingInput) (*eventSourceMapping, *apiError) {
	if in.FunctionName == nil {
		return nil, errLambdaInvalidParameter("FunctionName is required.")
	}
	f, err := s.function(*in.FunctionName, "")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(in.EventSourceArn, s.servicePrefix("sqs")) {
		return nil, errLambdaInvalidParameter("Unrecognized event source, must be kinesis, dynamodb stream or sqs; the simulator serves sqs only.")
	}
	q := s.queueByARN(in.EventSourceArn)
	if q == nil {
		return nil, errLambdaInvalidParameter("Error occurred while ReceiveMessage. SQS Error Code: AWS.SimpleQueueService.NonExistentQueue. Error Message: The specified queue does not exist or you do not have access to it.")
	}
	for _, id := range s.mappingOrder {
		if o := s.mappings[id]; o.EventSourceArn == q.arn && o.FunctionArn == f.FunctionArn {
			return nil, errLambdaConflict("An event source mapping with SQS arn (\" %s \") and function (\" %s \") already exists. Please update or delete the existing mapping with UUID %s", q.arn, f.FunctionName, o.UUID)
		}
	}
	m := &eventSourceMapping{
		EventSourceArn: q.arn, FunctionArn: f.FunctionArn, BatchSize: 10,
		FunctionResponseTypes: []string{}, StateTransitionReason: "USER_INITIATED",
		LastProcessingResult: "No records processed",
	}
	in.apply(m)
	if err := validateMapping(m, q.attrs.fifo); err != nil {
		return nil, err
	}
	m.UUID = s.newMessageID()
	m.EventSourceMappingArn = s.arn("lambda", "event-source-mapping:"+m.UUID)
	m.LastModified = epochSeconds(s.clock.Now())
	m.State = "Enabled"
	if in.Enabled != nil && !*in.Enabled {
		m.State = "Disabled"
	}
	s.mappings[m.UUID] = m
	s.mappingOrder = append(s.mappingOrder, m.UUID)
	out := s.mappingView(m)
	// Lambda answers a new mapping while it is being created.
	out.State = "Creating"
	return &out, nil
}

func (s *Simulator) eventSourceMapping(uuid string) (*eventSourceMapping, *apiError) {
	m := s.mappings[uuid]
	if m == nil {
		return nil, errLambdaNotFound("The resource you requested does not exist.")
	}
	return m, nil
}

// mappingView is a mapping as the API shows it: a mapping whose queue or
// function has gone reports the problem in LastProcessingResult, as Lambda
// does once its pollers fail.
func (s *Simulator) mappingView(m *eventSourceMapping) eventSourceMapping {
	out := *m
	out.FunctionResponseTypes = slices.Clone(m.FunctionResponseTypes)
	switch {
	case s.queueByARN(m.EventSourceArn) == nil:
		out.LastProcessingResult = "PROBLEM: Error occurred while ReceiveMessage. SQS Error Code: AWS.SimpleQueueService.NonExistentQueue. Error Message: The specified queue does not exist or you do not have access to it."
	case s.functions[m.FunctionArn[strings.LastIndex(m.FunctionArn, ":")+1:]] == nil:
		out.LastProcessingResult = "PROBLEM: Function not found: " + m.FunctionArn
	}
	return out
}

func (s *Simulator) updateEventSourceMapping(uuid string, in *eventSourceMappingInput) (*eventSourceMapping, *apiError) {
	m, err := s.eventSourceMapping(uuid)
	if err != nil {
		return nil, err
	}
	next := *m
	if in.FunctionName != nil {
		f, err := s.function(*in.FunctionName, "")
		if err != nil {
			return nil, err
		}
		next.FunctionArn = f.FunctionArn
	}
	in.apply(&next)
	q := s.queueByARN(m.EventSourceArn)
	if err := validateMapping(&next, q != nil && q.attrs.fifo); err != nil {
		return nil, err
	}
	answer := ""
	if in.Enabled != nil {
		switch {
		case *in.Enabled && next.State != "Enabled":
			next.State, answer = "Enabled", "Enabling"
		case !*in.Enabled && next.State != "Disabled":
			next.State, answer = "Disabled", "Disabling"
		}
	}
	next.LastModified = epochSeconds(s.clock.Now())
	*m = next
	out := s.mappingView(m)
	if answer == "" {
		answer = "Updating"
	}
	out.State = answer
	return &out, nil
}

func (s *Simulator) listEventSourceMappings(sourceARN, functionName, marker, maxItems string) (any, *apiError) {
	limit, err := lambdaMaxItems(maxItems, 100)
	if err != nil {
		return nil, err
	}
	var functionARN string
	if functionName != "" {
		f, err := s.function(functionName, "")
		if err != nil {
			return nil, err
		}
		functionARN = f.FunctionArn
	}
	start := 0
	if marker != "" {
		i := slices.Index(s.mappingOrder, marker)
		if i < 0 {
			return nil, errLambdaInvalidParameter("Invalid marker.")
		}
		start = i + 1
	}
	out := struct {
		EventSourceMappings []eventSourceMapping
		NextMarker          string `json:",omitempty"`
	}{EventSourceMappings: []eventSourceMapping{}}
	for _, id := range s.mappingOrder[start:] {
		m := s.mappings[id]
		if (sourceARN != "" && m.EventSourceArn != sourceARN) || (functionARN != "" && m.FunctionArn != functionARN) {
			continue
		}
		if len(out.EventSourceMappings) == limit {
			out.NextMarker = out.EventSourceMappings[limit-1].UUID
			break
		}
		out.EventSourceMappings = append(out.EventSourceMappings, s.mappingView(m))
	}
	return out, nil
}

func parseIntParam(s string) (int, error) {
	var n int
	err := json.Unmarshal([]byte(s), &n)
	return n, err
}
