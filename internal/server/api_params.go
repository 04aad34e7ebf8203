package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
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
	return s.resolveQueue(c.Request().Context(), ref)
}

// resolveQueue resolves a queue reference as a client sent it, in a path, a query parameter or
// a tool's arguments: refused when no queue can have it, then found among the watched queues.
func (s *Server) resolveQueue(ctx context.Context, ref string) (views.QueueKey, error) {
	if _, err := validQueueRef(ref); err != nil {
		return views.QueueKey{}, err
	}
	return s.opts.Views.ResolveQueue(ctx, ref)
}

// redriveIDParam returns the {redriveId} path parameter, for the API and the pages alike: a
// move task's id, a positive integer.
func redriveIDParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("redriveId"), 10, 64)
	if err != nil || id < 1 {
		return 0, newError(http.StatusBadRequest, "invalid_redrive_id", "not a redrive id")
	}
	return id, nil
}

// maxMessageID bounds a message id: SQS's are UUIDs, other endpoints' are short too.
const maxMessageID = 128

// messageIDParam returns the {messageId} path parameter, for the API and the pages alike: up to
// 128 bytes, no control characters and no slash.
func messageIDParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("messageId"))
	if err != nil {
		return "", errInvalidMessageID()
	}
	return validMessageID(id)
}

// validMessageID returns id when it can be a message id: up to 128 bytes, no control characters
// and no slash.
func validMessageID(id string) (string, error) {
	if id == "" || len(id) > maxMessageID || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || r == '/' }) {
		return "", errInvalidMessageID()
	}
	return id, nil
}

func errInvalidMessageID() *apiError {
	return newError(http.StatusBadRequest, "invalid_message_id", "not a message id")
}

// textParam returns a query parameter that is free text (a tool name, a cursor), bounded and
// without control characters.
func textParam(c echo.Context, name string, max int) (string, error) {
	return validText(name, c.QueryParam(name), max)
}

// validText returns v, the parameter name of a request, when it is free text within max bytes
// and without control characters: one rule for query parameters and tools' arguments.
func validText(name, v string, max int) (string, error) {
	if len(v) > max || strings.ContainsFunc(v, unicode.IsControl) {
		return "", newError(http.StatusBadRequest, "invalid_parameter", name+" is too long or holds control characters")
	}
	return v, nil
}

// maxToolParam bounds a tool-name filter. It is above what the collector stores of a tool name
// (256 bytes), so that every name a page offers as a filter is taken.
const maxToolParam = 1024

// validToolName returns v, a tool-name filter named name in the request, for the API, the
// pages and the tools alike: any name the collector may have stored, which keeps newlines and
// tabs (safetext.Store), but no other control character and nothing longer than maxToolParam.
func validToolName(name, v string) (string, error) {
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
	if err != nil {
		return 0, errOutOfRange(name, min, max)
	}
	return validRange(name, n, min, max)
}

// validRange returns n, the integer parameter name, when it is within [min, max].
func validRange(name string, n, min, max int64) (int64, error) {
	if n < min || n > max {
		return 0, errOutOfRange(name, min, max)
	}
	return n, nil
}

func errOutOfRange(name string, min, max int64) *apiError {
	return newError(http.StatusBadRequest, "invalid_parameter",
		name+" must be an integer from "+strconv.FormatInt(min, 10)+" to "+strconv.FormatInt(max, 10))
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
	switch err := walkNames(raw, names, nil); {
	case errors.Is(err, errNamedTwice):
		return newError(http.StatusBadRequest, "invalid_json", "the body names a field twice")
	case errors.Is(err, errUnknownName):
		return newError(http.StatusBadRequest, "unknown_field",
			"the body has a field this endpoint does not know (names are case-sensitive)")
	case err != nil:
		return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON")
	}
	return nil
}

// What walkNames finds wrong with a document's names.
var (
	errNamedTwice  = errors.New("server: a JSON object names a member twice")
	errUnknownName = errors.New("server: a JSON member of an unknown name")
)

// walkNames walks a JSON document: errNamedTwice for an object that names a member twice (which
// encoding/json would take, the last one winning), errUnknownName for a member of the outer
// object that is not one of names (nil takes any name), another error for invalid JSON. The
// value at skip, a path of member names from the outer object, is not looked into.
func walkNames(raw []byte, names map[string]bool, skip []string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func(path []string) error
	walk = func(path []string) error {
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
				name := key.(string)
				switch {
				case seen[name]:
					return errNamedTwice
				case len(path) == 0 && names != nil && !names[name]:
					return errUnknownName
				}
				seen[name] = true
				if err := walkMember(dec, append(path, name), skip, walk); err != nil {
					return err
				}
			}
			_, err = dec.Token() // the closing brace
		case json.Delim('['):
			for dec.More() {
				if err := walk(append(path, "[")); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	return walk(nil)
}

// walkMember walks the value of an object's member at path, or skips it when path is skip.
func walkMember(dec *json.Decoder, path, skip []string, walk func(path []string) error) error {
	if skip != nil && slices.Equal(path, skip) {
		var v json.RawMessage
		return dec.Decode(&v)
	}
	return walk(path)
}

// actor returns who asks for an action, for the actions service and its audit log.
func actor(c echo.Context) actions.Actor {
	id := identity(c)
	return actions.Actor{Name: id.Name, Kind: id.Kind, Role: id.Role, RemoteAddr: c.RealIP(), TokenID: id.TokenID, Credential: id.Credential}
}

// messageParams are the query parameters of the message lists besides the dimensions': a
// dimension of one of these names could not be filtered by, so New refuses it.
var messageParams = []string{"toolName", "tool", "nearMax", "limit", "cursor", "q", "groupBy", "format", "embed", "embed_token"}

// maxSearch bounds a search of the sample.
const maxSearch = 256

// messageFilter is what the API, the messages page and the list_dlq_messages tool share of a
// message list's query, as the client sent it: the tool filter, the search, the grouping, the
// page's cursor and a filter per dimension (by name: mcpServer=docs-legacy).
type messageFilter struct {
	ToolName, Search, GroupBy, Cursor string
	Dimensions                        map[string]string
	NearMax                           bool
}

// messageQuery reads and checks a message list's query, for the messages page.
func (s *Server) messageQuery(c echo.Context, toolKey string) (views.MessageQuery, error) {
	return validMessageFilter(toolKey, s.messageFilterParams(c, toolKey))
}

// messageFilterParams reads a message list's query from the request: the tool filter under the
// name each caller uses (the API's toolName, the page's tool), the dimensions the views know.
func (s *Server) messageFilterParams(c echo.Context, toolKey string) messageFilter {
	f := messageFilter{ToolName: c.QueryParam(toolKey), Search: c.QueryParam("q"), GroupBy: c.QueryParam("groupBy"), Cursor: c.QueryParam("cursor")}
	for _, name := range s.opts.Views.Dimensions() {
		if _, given := c.QueryParams()[name]; given {
			if f.Dimensions == nil {
				f.Dimensions = map[string]string{}
			}
			f.Dimensions[name] = c.QueryParam(name)
		}
	}
	return f
}

// validMessageFilter checks a message list's query, whose tool filter the caller names toolKey:
// each text bounded and without control characters. The views refuse a dimension they do not
// know (unknown_dimension).
func validMessageFilter(toolKey string, f messageFilter) (views.MessageQuery, error) {
	q := views.MessageQuery{Dimensions: f.Dimensions, NearMaxOnly: f.NearMax}
	var err error
	if q.ToolName, err = validToolName(toolKey, f.ToolName); err != nil {
		return q, err
	}
	if q.Search, err = validText("q", f.Search, maxSearch); err != nil {
		return q, err
	}
	if q.GroupBy, err = validText("groupBy", f.GroupBy, 64); err != nil {
		return q, err
	}
	if q.Cursor, err = validText("cursor", f.Cursor, 256); err != nil {
		return q, err
	}
	for name, v := range f.Dimensions {
		if _, err := validText(name, v, 256); err != nil {
			return q, err
		}
	}
	return q, nil
}

// scopeParams returns the ?account= (a configured name or an account id) and ?region= filters
// of the overview and the queue list, for the API and the pages alike; "" keeps every account or
// region.
func scopeParams(c echo.Context) (account, region string, err error) {
	return validScope(c.QueryParam("account"), c.QueryParam("region"))
}

// validScope checks an account filter (a configured name or an account id) and a region filter.
func validScope(account, region string) (string, string, error) {
	var err error
	if account, err = validText("account", account, 64); err != nil {
		return "", "", err
	}
	if region, err = validText("region", region, 32); err != nil {
		return "", "", err
	}
	return account, region, nil
}
