package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/views"
)

// queueParam returns the {queue} path parameter: a queue name or an ARN, which clients may
// URL-escape (echo hands it over still escaped when the path had escapes). Anything else —
// escaped slashes, "..", control characters — is refused before it reaches the views.
func queueParam(c echo.Context) (string, error) {
	ref, err := url.PathUnescape(c.Param("queue"))
	if err != nil {
		return "", errInvalidQueue()
	}
	return validQueueRef(ref)
}

// errInvalidQueue refuses a queue reference no queue can have.
func errInvalidQueue() *apiError {
	return newError(http.StatusBadRequest, "invalid_queue", "the queue must be a queue name or an SQS queue ARN")
}

// validQueueRef returns ref when it can name a queue (a name or an SQS ARN, at most 256 bytes).
func validQueueRef(ref string) (string, error) {
	if len(ref) > 256 || !arn.ValidQueueRef(ref) {
		return "", errInvalidQueue()
	}
	return ref, nil
}

// queueOf resolves the {queue} path parameter once, at the edge: the handler hands the key's id
// down to the views (404 queue_not_found, 409 ambiguous_queue through the error handler).
func (s *Server) queueOf(c echo.Context) (views.QueueKey, error) {
	ref, err := queueParam(c)
	if err != nil {
		return views.QueueKey{}, err
	}
	return s.opts.Views.ResolveQueue(c.Request().Context(), ref)
}

// maxMessageID bounds a message id: SQS's are UUIDs, other endpoints' are short too.
const maxMessageID = 128

// messageIDParam returns the {messageId} path parameter, for the API and the pages alike: up to
// 128 bytes, no control characters and no slash.
func messageIDParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("messageId"))
	if err != nil || id == "" || len(id) > maxMessageID || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || r == '/' }) {
		return "", newError(http.StatusBadRequest, "invalid_message_id", "not a message id")
	}
	return id, nil
}

// textParam returns a query parameter that is free text (a tool name, a cursor), bounded and
// without control characters.
func textParam(c echo.Context, name string, max int) (string, error) {
	v := c.QueryParam(name)
	if len(v) > max || strings.ContainsFunc(v, unicode.IsControl) {
		return "", newError(http.StatusBadRequest, "invalid_parameter", name+" is too long or holds control characters")
	}
	return v, nil
}

// maxToolParam bounds a tool-name filter. It is above what the collector stores of a tool name
// (256 bytes), so that every name a page offers as a filter is taken.
const maxToolParam = 1024

// toolParam returns a tool-name filter, for the API and the pages alike: any name the collector
// may have stored, which keeps newlines and tabs (safetext.Store), but no other control
// character and nothing longer than maxToolParam.
func toolParam(c echo.Context, name string) (string, error) {
	v := c.QueryParam(name)
	if len(v) > maxToolParam || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
		return "", newError(http.StatusBadRequest, "invalid_parameter", name+" is too long or holds control characters")
	}
	return v, nil
}

// intParam returns an integer query parameter within [min, max], or def when it is absent.
func intParam(c echo.Context, name string, def, min, max int64) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return 0, newError(http.StatusBadRequest, "invalid_parameter",
			name+" must be an integer from "+strconv.FormatInt(min, 10)+" to "+strconv.FormatInt(max, 10))
	}
	return n, nil
}

// boolParam returns a boolean query parameter ("true", "false", "1", "0"), false when absent.
func boolParam(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, newError(http.StatusBadRequest, "invalid_parameter", name+" must be true or false")
	}
	return b, nil
}

// maxTime is the last second a time parameter may name: JSON and RFC 3339 have four-digit years.
var maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// timeParam returns a time query parameter given as RFC 3339 or unix seconds, or def. Times
// before 1970 or after the year 9999 are refused (400), not carried on to fail later.
func timeParam(c echo.Context, name string, def time.Time) (time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if n, nerr := strconv.ParseInt(v, 10, 64); nerr == nil {
		t, err = time.Unix(n, 0).UTC(), nil
		if n < 0 || n > maxTime.Unix() {
			err = errors.New("out of range")
		}
	}
	if err != nil || t.Before(time.Unix(0, 0)) || t.After(maxTime) {
		return time.Time{}, newError(http.StatusBadRequest, "invalid_parameter",
			name+" must be an RFC 3339 time or unix seconds, from 1970 to the end of 9999")
	}
	return t.UTC(), nil
}

// decodeJSON decodes a request body strictly: one JSON object (not null) of known fields, each
// named once and spelt exactly as documented, and nothing after it. encoding/json alone would
// take null as "no body", let the last of two equal names win and match names whatever their
// case, so that {"MaxMessagesPerSecond":1,"maxMessagesPerSecond":500} would say two things at
// once. An empty body leaves v as it is when allowEmpty. v must be a pointer to a struct.
func decodeJSON(c echo.Context, v any, allowEmpty bool) error {
	var raw json.RawMessage
	dec := json.NewDecoder(c.Request().Body)
	err := dec.Decode(&raw)
	switch {
	case errors.Is(err, io.EOF) && allowEmpty:
		return nil
	case err != nil:
		var he *echo.HTTPError
		var mbe *http.MaxBytesError
		if errors.As(err, &he) || errors.As(err, &mbe) {
			return err // over the body limit: 413
		}
		return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON")
	case dec.Decode(&struct{}{}) != io.EOF:
		return newError(http.StatusBadRequest, "invalid_json", "the body must hold a single JSON object")
	case !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")):
		return newError(http.StatusBadRequest, "invalid_json", "the body must be a JSON object")
	}
	if err := checkNames(raw, jsonNames(reflect.TypeOf(v).Elem())); err != nil {
		return err
	}
	strict := json.NewDecoder(bytes.NewReader(raw))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		// encoding/json has no typed error for an unknown field: decoding again without the
		// check tells that case apart from a wrong shape.
		if json.Unmarshal(raw, reflect.New(reflect.TypeOf(v).Elem()).Interface()) == nil {
			return newError(http.StatusBadRequest, "unknown_field", "the body has a field this endpoint does not know")
		}
		return newError(http.StatusBadRequest, "invalid_json", "the body is not JSON of the expected shape")
	}
	return nil
}

// jsonNames returns the JSON names of a struct's fields.
func jsonNames(t reflect.Type) map[string]bool {
	names := make(map[string]bool, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
}

// checkNames walks a valid JSON document and refuses an object that names a member twice, and
// a member of the outer object that is not exactly one of names.
func checkNames(raw []byte, names map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(top bool) error
	walk = func(top bool) error {
		tok, err := dec.Token()
		if err != nil {
			return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON")
		}
		switch tok {
		case json.Delim('{'):
			seen := make(map[string]bool)
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON")
				}
				name := key.(string)
				if seen[name] {
					return newError(http.StatusBadRequest, "invalid_json", "the body names a field twice")
				}
				seen[name] = true
				if top && !names[name] {
					return newError(http.StatusBadRequest, "unknown_field",
						"the body has a field this endpoint does not know (names are case-sensitive)")
				}
				if err := walk(false); err != nil {
					return err
				}
			}
			_, err = dec.Token() // the closing brace
		case json.Delim('['):
			for dec.More() {
				if err := walk(false); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		if err != nil {
			return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON")
		}
		return nil
	}
	return walk(true)
}

// actor returns who asks for an action, for the actions service and its audit log.
func actor(c echo.Context) actions.Actor {
	id := identity(c)
	return actions.Actor{Name: id.Name, Kind: id.Kind, Role: id.Role, RemoteAddr: c.RealIP()}
}

// messageParams are the query parameters of the message lists besides the dimensions': a
// dimension of one of these names could not be filtered by, so New refuses it.
var messageParams = []string{"toolName", "tool", "nearMax", "limit", "cursor", "q", "groupBy", "format", "embed", "embed_token"}

// maxSearch bounds a search of the sample.
const maxSearch = 256

// messageQuery reads what the API and the messages page share of a message list's query: the
// search (q), the grouping (groupBy) and a filter per dimension (?mcpServer=docs-legacy); the
// tool filter under the name each uses (the API's toolName, the page's tool).
func (s *Server) messageQuery(c echo.Context, toolKey string) (views.MessageQuery, error) {
	var q views.MessageQuery
	var err error
	if q.ToolName, err = toolParam(c, toolKey); err != nil {
		return q, err
	}
	if q.Search, err = textParam(c, "q", maxSearch); err != nil {
		return q, err
	}
	if q.GroupBy, err = textParam(c, "groupBy", 64); err != nil {
		return q, err
	}
	if q.Cursor, err = textParam(c, "cursor", 256); err != nil {
		return q, err
	}
	for _, name := range s.opts.Views.Dimensions() {
		if _, given := c.QueryParams()[name]; !given {
			continue
		}
		v, err := textParam(c, name, 256)
		if err != nil {
			return q, err
		}
		if q.Dimensions == nil {
			q.Dimensions = map[string]string{}
		}
		q.Dimensions[name] = v
	}
	return q, nil
}

// scopeParams returns the ?account= (a configured name or an account id) and ?region= filters
// of the overview and the queue list, for the API and the pages alike; "" keeps every account or
// region.
func scopeParams(c echo.Context) (account, region string, err error) {
	if account, err = textParam(c, "account", 64); err != nil {
		return "", "", err
	}
	if region, err = textParam(c, "region", 32); err != nil {
		return "", "", err
	}
	return account, region, nil
}
