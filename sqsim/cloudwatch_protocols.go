package sqsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// CloudWatch serves three protocols, as AWS does: RPC v2 CBOR (aws-sdk-go-v2
// since v1.53), AWS JSON 1.0 (botocore and so boto3 and the aws CLI, the
// JavaScript SDK v3) and the Query protocol (older SDKs and CLIs, Debian's
// python3-boto3 and awscli among them). The handlers read one decoded form
// of the input, cbor.Map values, and return one; this file converts the other
// two protocols to it and back.

// cloudWatchTargetPrefix starts the X-Amz-Target of every AWS JSON 1.0
// CloudWatch request: the service's Smithy shape name.
const cloudWatchTargetPrefix = "GraniteServiceVersion20100801."

// cloudWatchQueryVersion is the Version parameter of CloudWatch's Query
// protocol, and cloudWatchNamespace the XML namespace of its answers.
const (
	cloudWatchQueryVersion = "2010-08-01"
	cloudWatchNamespace    = "http://monitoring.amazonaws.com/doc/2010-08-01/"
)

// serveCloudWatchJSON answers an AWS JSON 1.0 request for the operation its
// X-Amz-Target names.
func (s *Simulator) serveCloudWatchJSON(w http.ResponseWriter, r *http.Request, rc *request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), cloudWatchTargetPrefix)
	defer s.recoverPanic(w, op, writeCloudWatchJSONError)
	if err := checkJSONRequest(r, op, cloudWatchOperations); err != nil {
		writeCloudWatchJSONError(w, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeCloudWatchJSONError(w, err)
		return
	}
	m, err := jsonToCBOR(body)
	if err != nil {
		writeCloudWatchJSONError(w, err)
		return
	}
	out, err := s.runCloudWatch(rc, "json", op, &cborInput{m: m, proto: protoJSON})
	if err != nil {
		writeCloudWatchJSONError(w, err)
		return
	}
	var buf bytes.Buffer
	writeJSONValue(&buf, out)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// checkJSONRequest refuses an AWS JSON 1.0 request that is not a POST of
// application/x-amz-json-1.0 to a known operation.
func checkJSONRequest[Op any](r *http.Request, op string, known map[string]Op) *apiError {
	if r.Method != http.MethodPost {
		return errInvalidAction(r.Method + " " + op)
	}
	if _, ok := known[op]; !ok {
		return errInvalidAction(op)
	}
	if !hasMediaType(r, "application/x-amz-json-1.0") {
		return errUnsupportedMediaType(r.Header.Get("Content-Type"))
	}
	return nil
}

// hasMediaType reports whether the request's body is of the media type
// want. A request without a body may leave its Content-Type out, as the
// SDKs do for operations without input.
func hasMediaType(r *http.Request, want string) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == want
}

func errUnsupportedMediaType(got string) *apiError {
	return newAPIError(http.StatusBadRequest, "UnknownOperationException", "InvalidAction",
		"The content type %q is not the one this protocol uses.", truncate(got, 100))
}

// writeCloudWatchJSONError answers an AWS JSON 1.0 request with CloudWatch's error shape.
func writeCloudWatchJSONError(w http.ResponseWriter, e *apiError) {
	writeJSONError(w, e, "com.amazonaws.cloudwatch#")
}

// jsonToCBOR decodes a JSON object into the values the handlers read.
// Integers become CBOR integers and other numbers floats; null members are
// dropped, as the SDKs mean them.
func jsonToCBOR(body []byte) (cbor.Map, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return cbor.Map{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errMalformedBody(err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errMalformedBody("data after the JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errMalformedBody("the input is not a JSON object")
	}
	return jsonValueToCBOR(m).(cbor.Map), nil
}

func jsonValueToCBOR(v any) cbor.Value {
	switch v := v.(type) {
	case map[string]any:
		m := make(cbor.Map, len(v))
		for k, e := range v {
			if e != nil {
				m[k] = jsonValueToCBOR(e)
			}
		}
		return m
	case []any:
		l := make(cbor.List, 0, len(v))
		for _, e := range v {
			if e != nil {
				l = append(l, jsonValueToCBOR(e))
			}
		}
		return l
	case string:
		return cbor.String(v)
	case bool:
		return cbor.Bool(v)
	case json.Number:
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return cborInt(n)
		}
		f, _ := v.Float64()
		return cbor.Float64(f)
	}
	return &cbor.Nil{}
}

// writeJSONValue writes an output value as AWS JSON 1.0: timestamps (CBOR
// tag 1) as epoch seconds.
func writeJSONValue(buf *bytes.Buffer, v cbor.Value) {
	switch v := v.(type) {
	case cbor.Map:
		buf.WriteByte('{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, k)
			buf.WriteByte(':')
			writeJSONValue(buf, v[k])
		}
		buf.WriteByte('}')
	case cbor.List:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONValue(buf, e)
		}
		buf.WriteByte(']')
	case cbor.String:
		writeJSONString(buf, string(v))
	case cbor.Bool:
		buf.WriteString(strconv.FormatBool(bool(v)))
	case cbor.Uint, cbor.NegInt:
		n, _ := cbor.AsInt64(v)
		buf.WriteString(strconv.FormatInt(n, 10))
	case cbor.Float64:
		buf.WriteString(formatFloat(float64(v)))
	case *cbor.Tag:
		t, _ := cbor.AsTime(v)
		buf.WriteString(formatFloat(float64(t.UnixMilli()) / 1e3))
	default:
		buf.WriteString("null")
	}
}

func writeJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // the encoder's newline
}

// formatFloat writes a float so that every client parses it back exactly,
// without exponents that some parsers refuse.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func sortedKeys(m cbor.Map) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serveCloudWatchQuery answers a Query-protocol request (Action=<op>) for a
// CloudWatch operation, with params already parsed.
func (s *Simulator) serveCloudWatchQuery(w http.ResponseWriter, rc *request, op string, params url.Values) {
	defer s.recoverPanic(w, op, writeCloudWatchQueryError)
	m, err := queryToCBOR(params)
	if err != nil {
		writeCloudWatchQueryError(w, err)
		return
	}
	out, err := s.runCloudWatch(rc, "query", op, &cborInput{m: m, proto: protoQuery})
	if err != nil {
		writeCloudWatchQueryError(w, err)
		return
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<?xml version="1.0"?><%sResponse xmlns="%s">`, op, cloudWatchNamespace)
	if len(out) > 0 {
		buf.WriteString("<" + op + "Result>")
		for _, k := range sortedKeys(out) {
			writeXMLValue(&buf, k, out[k])
		}
		buf.WriteString("</" + op + "Result>")
	}
	fmt.Fprintf(&buf, "<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>", requestIDOf(w), op)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// queryToCBOR turns Query parameters into the structure they flatten:
// "A.B=x" is member B of structure A, "A.member.N" the Nth entry of list A.
// Parameters of the protocol itself (Action, Version) are left out.
func queryToCBOR(params url.Values) (cbor.Map, *apiError) {
	root := &queryNode{}
	for name, values := range params {
		if name == "Action" || name == "Version" {
			continue
		}
		node := root
		parts := strings.Split(name, ".")
		for i := 0; i < len(parts); i++ {
			if parts[i] == "member" && i+1 < len(parts) {
				n, err := strconv.Atoi(parts[i+1])
				if err != nil || n < 1 || n > 10000 {
					return nil, errMalformedQueryString("bad list index in " + name)
				}
				node = node.item(n)
				i++
				continue
			}
			node = node.child(parts[i])
		}
		node.value, node.hasValue = values[0], true
	}
	m, ok := root.toCBOR().(cbor.Map)
	if !ok {
		return cbor.Map{}, nil
	}
	return m, nil
}

// queryNode is one name of a flattened Query structure while it is rebuilt.
type queryNode struct {
	children map[string]*queryNode
	items    map[int]*queryNode
	value    string
	hasValue bool
}

func (n *queryNode) child(name string) *queryNode {
	if n.children == nil {
		n.children = make(map[string]*queryNode)
	}
	c := n.children[name]
	if c == nil {
		c = &queryNode{}
		n.children[name] = c
	}
	return c
}

func (n *queryNode) item(i int) *queryNode {
	if n.items == nil {
		n.items = make(map[int]*queryNode)
	}
	c := n.items[i]
	if c == nil {
		c = &queryNode{}
		n.items[i] = c
	}
	return c
}

func (n *queryNode) toCBOR() cbor.Value {
	switch {
	case len(n.items) > 0:
		idx := make([]int, 0, len(n.items))
		for i := range n.items {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		l := make(cbor.List, 0, len(idx))
		for _, i := range idx {
			l = append(l, n.items[i].toCBOR())
		}
		return l
	case len(n.children) > 0:
		m := make(cbor.Map, len(n.children))
		for k, c := range n.children {
			m[k] = c.toCBOR()
		}
		return m
	case n.hasValue:
		return cbor.String(n.value)
	}
	return cbor.Map{}
}

// parseQueryTime reads a Query timestamp: ISO 8601, as botocore and the
// other SDKs send it, or epoch seconds.
func parseQueryTime(v cbor.Value) (time.Time, error) {
	text, ok := v.(cbor.String)
	if !ok {
		return time.Time{}, errors.New("not text")
	}
	if t, err := time.Parse(time.RFC3339Nano, string(text)); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04:05", string(text)); err == nil {
		return t, nil
	}
	secs, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(secs * 1e3)), nil
}

// writeXMLValue writes an output value as the Query protocol's XML: lists
// as <member> elements, timestamps in ISO 8601.
func writeXMLValue(buf *bytes.Buffer, name string, v cbor.Value) {
	switch v := v.(type) {
	case cbor.Map:
		buf.WriteString("<" + name + ">")
		for _, k := range sortedKeys(v) {
			writeXMLValue(buf, k, v[k])
		}
		buf.WriteString("</" + name + ">")
	case cbor.List:
		buf.WriteString("<" + name + ">")
		for _, e := range v {
			writeXMLValue(buf, "member", e)
		}
		buf.WriteString("</" + name + ">")
	case cbor.String:
		writeElement(buf, name, string(v))
	case cbor.Bool:
		writeElement(buf, name, strconv.FormatBool(bool(v)))
	case cbor.Uint, cbor.NegInt:
		n, _ := cbor.AsInt64(v)
		writeElement(buf, name, strconv.FormatInt(n, 10))
	case cbor.Float64:
		writeElement(buf, name, formatFloat(float64(v)))
	case *cbor.Tag:
		t, _ := cbor.AsTime(v)
		writeElement(buf, name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
}

// writeCloudWatchQueryError answers a Query request with CloudWatch's XML
// error shape: SQS's, in CloudWatch's namespace and without a Detail.
func writeCloudWatchQueryError(w http.ResponseWriter, e *apiError) {
	writeXMLError(w, e, cloudWatchNamespace, "")
}
