// Package tracelink reads the trace context a tool call carries, a W3C traceparent message
// attribute or the AWSTraceHeader SQS keeps for X-Ray, and turns it into a link to the tracing
// system the operator names (--trace-url). Both formats are hostile text: they are parsed
// strictly, and a link is built from the parsed ids alone, never from the text as it came.
package tracelink

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The headers a trace comes from, as a message names them.
const (
	// Traceparent is the W3C Trace Context header, carried as a message attribute.
	Traceparent = "traceparent"
	// AWSTraceHeader is SQS's system attribute for X-Ray's trace header.
	AWSTraceHeader = "AWSTraceHeader"
)

// Placeholder is what a --trace-url template must contain: the trace id goes there.
const Placeholder = "{traceId}"

// Trace is a trace id read from a header.
type Trace struct {
	// Header is where it came from: Traceparent or AWSTraceHeader.
	Header string
	// ID is the trace id as its header writes it: 32 lowercase hex digits for W3C,
	// 1-xxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx for X-Ray, as the X-Ray console takes it.
	ID string
}

// ErrMalformed is returned for a header value that is not of its format.
var ErrMalformed = errors.New("tracelink: malformed trace header")

// ParseTraceparent reads a W3C traceparent (www.w3.org/TR/trace-context/#traceparent-header):
// version-traceid-parentid-flags, lowercase hex, neither id all zeros. Version 00 has exactly
// these four fields; a later version may add fields after a "-" (the spec's forward
// compatibility), and version ff is invalid.
func ParseTraceparent(s string) (Trace, error) {
	if len(s) < 55 || (len(s) > 55 && s[55] != '-') {
		return Trace{}, ErrMalformed
	}
	version, traceID, parentID, flags := s[0:2], s[3:35], s[36:52], s[53:55]
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return Trace{}, ErrMalformed
	}
	if !lowerHex(version) || version == "ff" || (version == "00" && len(s) != 55) {
		return Trace{}, ErrMalformed
	}
	if !lowerHex(traceID) || allZeros(traceID) || !lowerHex(parentID) || allZeros(parentID) || !lowerHex(flags) {
		return Trace{}, ErrMalformed
	}
	return Trace{Header: Traceparent, ID: traceID}, nil
}

// ParseAWSTraceHeader reads X-Ray's trace header as SQS carries it:
// Root=1-xxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx;Parent=…;Sampled=… (fields separated by ";", the
// Root required, once). The root is version 1, 8 hex digits of epoch seconds and 24 of a random
// id; X-Ray writes them lowercase, and a field it did not write is refused.
func ParseAWSTraceHeader(s string) (Trace, error) {
	var root string
	for field := range strings.SplitSeq(s, ";") {
		key, value, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			return Trace{}, ErrMalformed
		}
		switch key {
		case "Root":
			if root != "" {
				return Trace{}, ErrMalformed
			}
			root = value
		case "Parent", "Sampled", "Lineage", "Self":
		default:
			return Trace{}, ErrMalformed
		}
	}
	if len(root) != 35 || root[:2] != "1-" || root[10] != '-' || !lowerHex(root[2:10]) || !lowerHex(root[11:]) || allZeros(root[11:]) {
		return Trace{}, ErrMalformed
	}
	return Trace{Header: AWSTraceHeader, ID: root}, nil
}

// Parse reads a header's value by its name; an unknown header is malformed.
func Parse(header, value string) (Trace, error) {
	switch header {
	case Traceparent:
		return ParseTraceparent(value)
	case AWSTraceHeader:
		return ParseAWSTraceHeader(value)
	}
	return Trace{}, fmt.Errorf("%w: unknown header %q", ErrMalformed, header)
}

func lowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

func allZeros(s string) bool { return strings.Trim(s, "0") == "" }

// Template is a --trace-url: an http(s) URL with {traceId} where the trace id goes. The zero
// Template makes no links.
type Template struct{ raw string }

// ParseTemplate checks a --trace-url; "" is the zero Template. The template must be an http(s)
// URL with a host, no credentials, and {traceId} at least once.
func ParseTemplate(s string) (Template, error) {
	if s == "" {
		return Template{}, nil
	}
	if !strings.Contains(s, Placeholder) {
		return Template{}, fmt.Errorf("tracelink: the trace URL must contain %s where the trace id goes (https://grafana.example/explore?traceId=%s)", Placeholder, Placeholder)
	}
	u, err := url.Parse(strings.ReplaceAll(s, Placeholder, "0"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || strings.ContainsAny(s, " \t\r\n\"<>") {
		return Template{}, errors.New("tracelink: the trace URL must be http(s)://host/… with no credentials, spaces or quotes")
	}
	return Template{raw: s}, nil
}

// Enabled reports whether the template makes links.
func (t Template) Enabled() bool { return t.raw != "" }

// String returns the template as given.
func (t Template) String() string { return t.raw }

// Link returns the trace's link, "" for the zero Template or a Trace without an id. The id is
// escaped for a URL's query or fragment, though a parsed id is hex digits and dashes only.
func (t Template) Link(tr Trace) string {
	if t.raw == "" || tr.ID == "" {
		return ""
	}
	return strings.ReplaceAll(t.raw, Placeholder, url.QueryEscape(tr.ID))
}
