package sqsim

import (
	"crypto/rand"
	"fmt"
	"net/http"
)

// Every answer of every protocol carries a request id of its own, as AWS's
// do: the x-amzn-RequestId header, which the SDKs report (the Go SDK's
// middleware.GetRequestIDMetadata, the JavaScript SDK's $metadata.requestId,
// boto3's ResponseMetadata.RequestId), and in the Query protocol's XML the
// RequestId element too, which is where clients of that protocol read it.
// The simulator keeps no log of requests: the id only tells answers apart.

// requestIDHeader is x-amzn-RequestId, as net/http spells it.
const requestIDHeader = "X-Amzn-Requestid"

// newRequestID returns a random version 4 UUID, the form of AWS's request
// ids.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// setRequestID gives the answer w its request id, unless a handler in front
// (Accounts) already did.
func setRequestID(w http.ResponseWriter) {
	if w.Header().Get(requestIDHeader) == "" {
		w.Header().Set(requestIDHeader, newRequestID())
	}
}

// requestIDOf returns the request id of the answer w, for the XML bodies that
// repeat it.
func requestIDOf(w http.ResponseWriter) string {
	return w.Header().Get(requestIDHeader)
}
