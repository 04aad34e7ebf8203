package awscalls

import (
	"errors"
	"fmt"
	"regexp"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/internal/safetext"
)

// MaxMessage bounds what is kept of an error message.
const MaxMessage = 500

// Failure is a failed AWS call as toolq stores and shows it.
type Failure struct {
	Code       string // AWS's error code, or "HTTP500", "transport", "timeout", "canceled"
	Message    string // safe to show: credentials removed, valid UTF-8, bounded
	HTTPStatus int    // the endpoint's HTTP status; 0 when it never answered
	Outcome    string // as in Classify
}

// Describe turns a failed call into what the status page and the errors sections show: AWS's
// code and message when the endpoint answered with one, "HTTP 500 from the endpoint" when it
// answered with something else, and the transport failure when it did not answer. Account ids
// and ARNs stay (they say which policy to fix); access key ids and signatures never do.
func Describe(err error) Failure {
	code, outcome := Classify(err)
	f := Failure{Code: code, Outcome: outcome}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		f.HTTPStatus = re.HTTPStatusCode()
	}
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		msg := apiErr.ErrorMessage()
		if msg == "" || msg == apiErr.ErrorCode() {
			msg = apiErr.ErrorCode()
			if f.HTTPStatus != 0 {
				msg = fmt.Sprintf("%s (HTTP %d from the endpoint)", msg, f.HTTPStatus)
			}
		}
		f.Message = msg
	case f.HTTPStatus != 0:
		f.Message = fmt.Sprintf("HTTP %d from the endpoint, with a body that is not an AWS error", f.HTTPStatus)
	case err != nil:
		f.Message = err.Error()
	}
	f.Message = redact(safetext.Store(f.Message, 4*MaxMessage))
	f.Message = safetext.Truncate(f.Message, MaxMessage)
	f.Code = safetext.Line(f.Code, 64)
	return f
}

// credentialPatterns match what must never be stored or shown: access key ids (AKIA… long-term,
// ASIA… temporary), and the signature, credential scope and session token of a signed request
// that some endpoints echo in their errors.
var credentialPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b`),
	regexp.MustCompile(`(?i)(Signature|X-Amz-Signature|X-Amz-Security-Token|X-Amz-Credential|Credential|SecretAccessKey|SessionToken)(["']?\s*[=:]\s*["']?)[^\s,;"'&]+`),
}

// redact replaces credentials in s by "[redacted]".
func redact(s string) string {
	s = credentialPatterns[0].ReplaceAllString(s, "[redacted]")
	return credentialPatterns[1].ReplaceAllString(s, "$1$2[redacted]")
}

// Unsupported reports whether err says the endpoint does not implement the operation (kumo, an
// older emulator, a partition without the feature).
func Unsupported(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "InvalidAction", "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation",
		"UnknownOperationException", "UnknownOperation", "NotImplemented":
		return true
	}
	return false
}

// AccessDenied reports whether err says the credentials may not call the operation.
func AccessDenied(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "AccessDenied", "AccessDeniedException", "AuthorizationError", "UnauthorizedOperation",
		"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "ExpiredToken",
		"InvalidSignatureException", "MissingAuthenticationToken":
		return true
	}
	return false
}

// AccessDeniedCode reports whether an error code says the credentials may not call the
// operation (see AccessDenied), for codes read back from the store.
func AccessDeniedCode(code string) bool {
	return AccessDenied(&smithy.GenericAPIError{Code: code})
}
