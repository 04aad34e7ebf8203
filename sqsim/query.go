package sqsim

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Query protocol is how SQS spoke before AWS JSON 1.0 (botocore and the
// aws CLI switched in late 2023; Debian 12's aws CLI 2.9 and the SDKs of
// that age still send it): a form-encoded POST, or a GET, with
// Action=<Operation> and the input flattened into parameters such as
// Attribute.1.Name=VisibilityTimeout, answered in XML.
//
// The operations are those of the JSON protocol: decodeQuery fills the same
// input structs and encodeQueryXML renders the same outputs. Where a member's
// Query name differs from its JSON name, the struct field says so in a
// `query` tag taken from the service model's locationName: the name, then,
// for a map, the name of its key element when that is not "Name"
// (`query:"Tag,Key"`). Lists and maps are flattened, as SQS's are.

// queryNamespace is the XML namespace of SQS's Query responses.
const queryNamespace = "http://queue.amazonaws.com/doc/2012-11-05/"

// sqsQueryVersion is the Version parameter of SQS's Query protocol.
const sqsQueryVersion = "2012-11-05"

// serveQuery answers one Query-protocol request, SQS's or CloudWatch's: the
// Version parameter names the service, or else the Action does (no
// operation name is shared). Parameters may travel in a form-encoded body,
// in the URL, or both, but an Action or Version in both must agree.
func (s *Simulator) serveQuery(w http.ResponseWriter, r *http.Request, rc *request) {
	body, err := readBody(w, r)
	if err != nil {
		writeQueryError(w, err)
		return
	}
	if len(body) > 0 && !hasMediaType(r, "application/x-www-form-urlencoded") {
		writeQueryError(w, errUnsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	params, perr := url.ParseQuery(string(body))
	if perr != nil {
		writeQueryError(w, errMalformedQueryString(perr.Error()))
		return
	}
	urlParams, perr := url.ParseQuery(r.URL.RawQuery)
	if perr != nil {
		writeQueryError(w, errMalformedQueryString(perr.Error()))
		return
	}
	for k, v := range urlParams {
		if _, ok := params[k]; !ok {
			params[k] = v
			continue
		}
		if !slices.Equal(params[k], v) {
			// Two values of one parameter: acting on either could be acting on the wrong queue.
			if k == "Action" || k == "Version" {
				writeQueryError(w, errInvalidAction(fmt.Sprintf("%s given twice: %s and %s", k, strings.Join(params[k], ","), strings.Join(v, ","))))
			} else {
				writeQueryError(w, errMalformedQueryString(truncate(k, 100)+" given in the URL and in the body with other values"))
			}
			return
		}
	}
	if len(params["Action"]) > 1 || len(params["Version"]) > 1 {
		writeQueryError(w, errInvalidAction("Action or Version given more than once"))
		return
	}
	for k, v := range params {
		// Every parameter of the protocol is one value (lists are flattened into names of their
		// own: Attribute.1.Name, ...).
		if len(v) > 1 {
			writeQueryError(w, errMalformedQueryString(truncate(k, 100)+" given more than once"))
			return
		}
	}
	op, version := params.Get("Action"), params.Get("Version")
	_, isSQS := sqsOperations[op]
	_, isCloudWatch := cloudWatchOperations[op]
	switch {
	case isSQS && (version == "" || version == sqsQueryVersion):
		s.serveSQSQuery(w, r, rc, op, params)
	case isCloudWatch && (version == "" || version == cloudWatchQueryVersion):
		s.serveCloudWatchQuery(w, rc, op, params)
	case isCloudWatch:
		writeCloudWatchQueryError(w, errInvalidAction(op+" in version "+version))
	case version != "":
		writeQueryError(w, errInvalidAction(op+" in version "+version))
	default:
		writeQueryError(w, errInvalidAction(op))
	}
}

// serveSQSQuery answers one SQS Query-protocol request for the known
// operation op.
func (s *Simulator) serveSQSQuery(w http.ResponseWriter, r *http.Request, rc *request, op string, params url.Values) {
	defer s.recoverPanic(w, op, writeQueryError)
	handler := sqsOperations[op]
	// Clients of the original API post to the queue's own URL instead of
	// naming it in a parameter. Any other path is no address of SQS's, and a
	// path and a parameter must name the same queue: either could be the
	// wrong one.
	if r.URL.Path != "/" {
		own := rc.baseURL + r.URL.EscapedPath()
		if _, _, err := s.parseQueueURL(own); err != nil {
			writeQueryError(w, err)
			return
		}
		if params.Has("QueueUrl") && !s.sameQueue(params.Get("QueueUrl"), own) {
			writeQueryError(w, errInvalidAddress(truncate(params.Get("QueueUrl"), 200)+" posted to "+truncate(r.URL.Path, 200)))
			return
		}
		params.Set("QueueUrl", own)
	}
	if err := s.serveFaults(rc.ctx, op, errRequestThrottled, errInternal); err != nil {
		writeQueryError(w, err)
		return
	}
	start := time.Now()
	out, err := handler(s, rc, func(in any) *apiError {
		if params.Has("QueueUrl") && !takesQueueURL(in) {
			return errInvalidAddress(truncate(params.Get("QueueUrl"), 200) + ", for an operation that names no queue by it")
		}
		return decodeQuery(params, in)
	})
	s.log.Debug("sqsim: request", "service", "sqs", "protocol", "query", "operation", op, "error", errorCode(err), "duration", time.Since(start))
	if err != nil {
		writeQueryError(w, err)
		return
	}
	writeQuery(w, op, out)
}

func errMalformedQueryString(reason string) *apiError {
	return newAPIError(http.StatusBadRequest, "MalformedQueryString", "MalformedQueryString",
		"The query string could not be parsed: %s", truncate(reason, 200))
}

// queryName returns the Query name of a struct field and, for a map, the
// name of its key element.
func queryName(f reflect.StructField) (name, key string) {
	name, key = f.Name, "Name"
	if tag, ok := f.Tag.Lookup("query"); ok {
		n, k, hasKey := strings.Cut(tag, ",")
		name = n
		if hasKey {
			key = k
		}
	}
	return name, key
}

// queryParams indexes a request's parameters so that a flattened list can
// tell in one lookup whether its next entry exists.
type queryParams struct {
	values url.Values
	// prefixes holds every dotted prefix of every parameter name:
	// "Attribute.1.Name" gives "Attribute" and "Attribute.1".
	prefixes map[string]bool
}

// decodeQuery fills the input struct in from Query parameters. Parameters
// the input does not know (Action, Version, signatures) are ignored, as
// unknown JSON members are.
func decodeQuery(values url.Values, in any) *apiError {
	p := queryParams{values: values, prefixes: make(map[string]bool)}
	for name := range values {
		for i := range len(name) {
			if name[i] == '.' {
				p.prefixes[name[:i]] = true
			}
		}
	}
	return p.decodeStruct("", reflect.ValueOf(in).Elem())
}

func (p *queryParams) decodeStruct(prefix string, v reflect.Value) *apiError {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, key := queryName(f)
		if err := p.decode(prefix+name, key, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// decode fills v from the parameters named name (a scalar) or starting
// with name (a list, map or structure).
func (p *queryParams) decode(name, mapKey string, v reflect.Value) *apiError {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		raw, ok := p.values[name]
		if !ok {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(raw[0])
		if err != nil {
			return errInvalidParameterValue("Value for parameter %s is invalid. Reason: not base64.", truncate(name, 100))
		}
		v.SetBytes(b)
	case t.Kind() == reflect.Slice:
		// A flattened list: name.1, name.2, ... (or name.1.Member for
		// structures), up to the first index missing.
		for i := 1; ; i++ {
			item := name + "." + strconv.Itoa(i)
			if !p.values.Has(item) && !p.prefixes[item] {
				break
			}
			elem := reflect.New(t.Elem()).Elem()
			if err := p.decode(item, "Name", elem); err != nil {
				return err
			}
			v.Set(reflect.Append(v, elem))
		}
	case t.Kind() == reflect.Map:
		// A flattened map: name.N.<key> and name.N.Value.
		for i := 1; ; i++ {
			entry := name + "." + strconv.Itoa(i)
			if !p.prefixes[entry] {
				break
			}
			elem := reflect.New(t.Elem()).Elem()
			if err := p.decode(entry+".Value", "Name", elem); err != nil {
				return err
			}
			if v.IsNil() {
				v.Set(reflect.MakeMap(t))
			}
			v.SetMapIndex(reflect.ValueOf(p.values.Get(entry+"."+mapKey)), elem)
		}
	case t.Kind() == reflect.Struct:
		return p.decodeStruct(name+".", v)
	default:
		raw, ok := p.values[name]
		if !ok {
			return nil
		}
		return setScalar(name, raw[0], v)
	}
	return nil
}

// setScalar parses one parameter into a string, an integer or a boolean,
// or a pointer to one.
func setScalar(name, raw string, v reflect.Value) *apiError {
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, v.Type().Bits())
		if err != nil {
			return errInvalidParameterValue("Value %s for parameter %s is invalid. Reason: must be an integer.", truncate(raw, 50), truncate(name, 100))
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errInvalidParameterValue("Value %s for parameter %s is invalid. Reason: must be true or false.", truncate(raw, 50), truncate(name, 100))
		}
		v.SetBool(b)
	default:
		return errInternal()
	}
	return nil
}

// writeQuery answers a successful Query request: the output inside
// <OpResult>, and the request id, inside <OpResponse>.
func writeQuery(w http.ResponseWriter, op string, out any) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<?xml version="1.0"?><%sResponse xmlns="%s">`, op, queryNamespace)
	if v := reflect.ValueOf(out); v.Kind() == reflect.Struct && v.NumField() > 0 {
		buf.WriteString("<" + op + "Result>")
		encodeQueryFields(&buf, v)
		buf.WriteString("</" + op + "Result>")
	}
	fmt.Fprintf(&buf, "<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>", requestIDOf(w), op)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func encodeQueryFields(buf *bytes.Buffer, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, key := queryName(f)
		encodeQueryValue(buf, name, key, v.Field(i))
	}
}

// encodeQueryValue writes v as the element name; absent members (nil, empty
// strings, lists and maps) are left out, as SQS leaves them out. Lists and
// maps are flattened: one element name per entry.
func encodeQueryValue(buf *bytes.Buffer, name, mapKey string, v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			writeElement(buf, name, v.String())
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		writeElement(buf, name, strconv.FormatInt(v.Int(), 10))
	case reflect.Bool:
		writeElement(buf, name, strconv.FormatBool(v.Bool()))
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 {
				writeElement(buf, name, base64.StdEncoding.EncodeToString(v.Bytes()))
			}
			return
		}
		for i := range v.Len() {
			encodeQueryValue(buf, name, "Name", v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			buf.WriteString("<" + name + ">")
			writeElement(buf, mapKey, k.String())
			encodeQueryValue(buf, "Value", "Name", v.MapIndex(k))
			buf.WriteString("</" + name + ">")
		}
	case reflect.Struct:
		buf.WriteString("<" + name + ">")
		encodeQueryFields(buf, v)
		buf.WriteString("</" + name + ">")
	}
}

// writeElement writes <name>text</name>, escaped. Carriage returns and tabs
// travel as character references, so that an XML parser gives back the
// exact body whose MD5 the client checks.
func writeElement(buf *bytes.Buffer, name, text string) {
	buf.WriteString("<" + name + ">")
	xml.EscapeText(buf, []byte(text))
	buf.WriteString("</" + name + ">")
}

// writeQueryError answers a Query request with SQS's XML error shape, whose
// Code is the legacy code the SDKs of that protocol map to their errors.
func writeQueryError(w http.ResponseWriter, e *apiError) {
	writeXMLError(w, e, queryNamespace, "<Detail/>")
}

// writeXMLError writes the Query protocol's ErrorResponse in a service's
// namespace, with what that service puts after the Message (detail).
func writeXMLError(w http.ResponseWriter, e *apiError, namespace, detail string) {
	fault := "Sender"
	if e.server {
		fault = "Receiver"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<?xml version="1.0"?><ErrorResponse xmlns="%s"><Error>`, namespace)
	writeElement(&buf, "Type", fault)
	writeElement(&buf, "Code", e.queryCode)
	writeElement(&buf, "Message", e.message)
	fmt.Fprintf(&buf, "%s</Error><RequestId>%s</RequestId></ErrorResponse>", detail, requestIDOf(w))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	w.Write(buf.Bytes())
}
