package sqsim

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answered to a client in AWS's shape. The same value
// serves both services: the SQS writer renders it as AWS JSON 1.0, the
// CloudWatch writer as RPC v2 CBOR.
type apiError struct {
	status int
	// shape is the Smithy error shape name that the SDK's type registry
	// knows (for example "QueueDoesNotExist"), or a bare code for errors the
	// model does not list (for example "InvalidParameterValue").
	shape string
	// queryCode is the legacy Query-protocol code sent in the
	// x-amzn-query-error header; the SDK reports it as ErrorCode().
	queryCode string
	// server marks faults of the service rather than the caller.
	server  bool
	message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s", e.queryCode, e.message)
}

// queryErrorHeader is the value of x-amzn-query-error.
func (e *apiError) queryErrorHeader() string {
	fault := "Sender"
	if e.server {
		fault = "Receiver"
	}
	return e.queryCode + ";" + fault
}

func newAPIError(status int, shape, queryCode, format string, args ...any) *apiError {
	return &apiError{status: status, shape: shape, queryCode: queryCode, message: fmt.Sprintf(format, args...)}
}

// SQS errors. Shapes and query codes come from the SDK's model
// (service/sqs/schemas): the shape selects the Go error type, the query code
// becomes its ErrorCode().

func errQueueDoesNotExist() *apiError {
	return newAPIError(http.StatusBadRequest, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue",
		"The specified queue does not exist.")
}

// errQueueNameExists names the attribute whose value differs, as SQS does.
func errQueueNameExists(attribute string) *apiError {
	return newAPIError(http.StatusBadRequest, "QueueNameExists", "QueueAlreadyExists",
		"A queue already exists with the same name and a different value for attribute %s", attribute)
}

func errQueueDeletedRecently() *apiError {
	return newAPIError(http.StatusBadRequest, "QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently",
		"You must wait 60 seconds after deleting a queue before you can create another queue with the same name.")
}

func errInvalidAddress(address string) *apiError {
	return newAPIError(http.StatusNotFound, "InvalidAddress", "InvalidAddress",
		"The address %s is not valid for this endpoint.", address)
}

func errInvalidParameterValue(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidParameterValue", "InvalidParameterValue", format, args...)
}

func errMissingParameter(name string) *apiError {
	return newAPIError(http.StatusBadRequest, "MissingParameter", "MissingParameter",
		"The request must contain the parameter %s.", name)
}

func errInvalidAttributeName(name string) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidAttributeName", "InvalidAttributeName",
		"Unknown Attribute %s.", name)
}

func errInvalidAttributeValue(name string, reason string) *apiError {
	if reason != "" {
		return newAPIError(http.StatusBadRequest, "InvalidAttributeValue", "InvalidAttributeValue",
			"Invalid value for the parameter %s. Reason: %s", name, reason)
	}
	return newAPIError(http.StatusBadRequest, "InvalidAttributeValue", "InvalidAttributeValue",
		"Invalid value for the parameter %s.", name)
}

func errInvalidMessageContents(reason string) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidMessageContents", "InvalidMessageContents",
		"Invalid binary character in message body or attributes: %s", reason)
}

func errReceiptHandleIsInvalid(handle string) *apiError {
	return newAPIError(http.StatusNotFound, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
		"The input receipt handle %q is not a valid receipt handle.", truncate(handle, 100))
}

func errMessageNotInflight() *apiError {
	return newAPIError(http.StatusBadRequest, "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight",
		"The message referred to is not in flight.")
}

func errPurgeQueueInProgress(name string) *apiError {
	return newAPIError(http.StatusForbidden, "PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress",
		"Only one PurgeQueue operation on %s is allowed every 60 seconds.", name)
}

func errEmptyBatchRequest(entryName string) *apiError {
	return newAPIError(http.StatusBadRequest, "EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest",
		"There should be at least one %s in the request.", entryName)
}

func errTooManyEntriesInBatchRequest(n int) *apiError {
	return newAPIError(http.StatusBadRequest, "TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
		"Maximum number of entries per request are 10. You have sent %d.", n)
}

func errBatchEntryIdsNotDistinct(id string) *apiError {
	return newAPIError(http.StatusBadRequest, "BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
		"Id %s repeated.", truncate(id, 100))
}

// errInvalidBatchEntryID is AWS's text, which does not quote the id.
func errInvalidBatchEntryID() *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId",
		"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
}

func errBatchRequestTooLong(size, max int) *apiError {
	return newAPIError(http.StatusBadRequest, "BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong",
		"Batch requests cannot be longer than %d bytes. You have sent %d bytes.", max, size)
}

func errResourceNotFound(format string, args ...any) *apiError {
	return newAPIError(http.StatusNotFound, "ResourceNotFoundException", "ResourceNotFoundException", format, args...)
}

func errRequestThrottled() *apiError {
	return newAPIError(http.StatusForbidden, "RequestThrottled", "RequestThrottled",
		"Rate exceeded (injected by the simulator).")
}

func errInternal() *apiError {
	e := newAPIError(http.StatusInternalServerError, "InternalError", "InternalError",
		"We encountered an internal error. Please try again.")
	e.server = true
	return e
}

// Errors of the transport itself, shared by both services.

func errInvalidAction(operation string) *apiError {
	return newAPIError(http.StatusBadRequest, "UnknownOperationException", "InvalidAction",
		"The action or operation %q is not valid for this endpoint.", truncate(operation, 100))
}

func errMalformedBody(reason string) *apiError {
	return newAPIError(http.StatusBadRequest, "SerializationException", "SerializationException",
		"The request body could not be decoded: %s", truncate(reason, 200))
}

func errBodyTooLarge(limit int64) *apiError {
	return newAPIError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "RequestEntityTooLarge",
		"The request body is larger than %d bytes.", limit)
}

// CloudWatch errors, from service/cloudwatch/schemas.

func errCWInvalidParameterValue(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidParameterValueException", "InvalidParameterValue", format, args...)
}

func errCWMissingParameter(name string) *apiError {
	return newAPIError(http.StatusBadRequest, "MissingRequiredParameterException", "MissingParameter",
		"The parameter %s is required.", name)
}

func errCWInvalidParameterCombination(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidParameterCombinationException", "InvalidParameterCombination", format, args...)
}

func errCWInvalidNextToken() *apiError {
	return newAPIError(http.StatusBadRequest, "InvalidNextToken", "InvalidNextToken", "The service couldn't process the NextToken.")
}

func errCWThrottling() *apiError {
	return newAPIError(http.StatusBadRequest, "Throttling", "Throttling", "Rate exceeded (injected by the simulator).")
}

func errCWInternal() *apiError {
	e := newAPIError(http.StatusInternalServerError, "InternalServiceFault", "InternalServiceError",
		"Internal service error (injected by the simulator).")
	e.server = true
	return e
}

// truncate shortens hostile input before it is echoed in an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// errAccessDenied is AWS's answer to a principal whose policy lacks the operation's
// permission (a fault a test injects with Fault.Deny).
func errAccessDenied(op string) *apiError {
	return newAPIError(http.StatusForbidden, "AccessDenied", "AccessDenied",
		"User: arn:aws:iam::000000000000:user/sqsim is not authorized to perform: %s because no identity-based policy allows the action", permissionOf(op))
}

// permissionOf is the IAM action an operation needs, as AWS names it in a denial.
func permissionOf(op string) string {
	if strings.HasPrefix(op, "GetMetricData") || strings.HasSuffix(op, "Alarms") || strings.HasPrefix(op, "PutMetric") {
		return "cloudwatch:" + op
	}
	return "sqs:" + strings.TrimSuffix(op, "Batch")
}
