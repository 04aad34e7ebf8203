package sqsim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// cborInput reads the members of a decoded CloudWatch input structure.
// Inputs of every protocol are decoded into the same CBOR values (see
// cloudwatch_protocols.go); the protocol says how scalars travel. A member
// of the wrong type makes the whole request malformed, which the first
// failed read records and err returns.
type cborInput struct {
	m     cbor.Map
	err   *apiError
	proto cwProtocol
}

// cwProtocol is one of the wire protocols CloudWatch serves.
type cwProtocol int

const (
	// protoCBOR is Smithy RPC v2 CBOR: typed scalars, timestamps as tag 1.
	protoCBOR cwProtocol = iota
	// protoJSON is AWS JSON 1.0: JSON scalars, timestamps as epoch seconds.
	protoJSON
	// protoQuery is the Query protocol: every scalar is text, timestamps in
	// ISO 8601.
	protoQuery
)

func newCBORInput(body []byte) (*cborInput, *apiError) {
	if len(body) == 0 {
		return &cborInput{m: cbor.Map{}}, nil
	}
	v, err := cbor.Decode(body)
	if err != nil {
		return nil, errMalformedBody(err.Error())
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return nil, errMalformedBody("the input is not a CBOR map")
	}
	return &cborInput{m: m}, nil
}

func (in *cborInput) fail(key, want string) {
	if in.err == nil {
		in.err = errMalformedBody(fmt.Sprintf("member %s is not %s", key, want))
	}
}

// present reports whether key is set to something other than null.
func present(m cbor.Map, key string) (cbor.Value, bool) {
	v, ok := m[key]
	if !ok {
		return nil, false
	}
	switch v.(type) {
	case *cbor.Nil, *cbor.Undefined:
		return nil, false
	}
	return v, true
}

func (in *cborInput) str(m cbor.Map, key string) (string, bool) {
	v, ok := present(m, key)
	if !ok {
		return "", false
	}
	s, ok := v.(cbor.String)
	if !ok {
		in.fail(key, "a string")
		return "", false
	}
	return string(s), true
}

func (in *cborInput) integer(m cbor.Map, key string) (int64, bool) {
	v, ok := present(m, key)
	if !ok {
		return 0, false
	}
	n, err := cbor.AsInt64(v)
	if text, ok := v.(cbor.String); ok && in.proto == protoQuery {
		n, err = strconv.ParseInt(string(text), 10, 64)
	}
	if err != nil {
		in.fail(key, "an integer")
		return 0, false
	}
	return n, true
}

func (in *cborInput) float(m cbor.Map, key string) (float64, bool) {
	v, ok := present(m, key)
	if !ok {
		return 0, false
	}
	f, err := cbor.AsFloat64(v)
	if text, ok := v.(cbor.String); ok && in.proto == protoQuery {
		f, err = strconv.ParseFloat(string(text), 64)
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		in.fail(key, "a finite number")
		return 0, false
	}
	return f, true
}

func (in *cborInput) boolean(m cbor.Map, key string) (bool, bool) {
	v, ok := present(m, key)
	if !ok {
		return false, false
	}
	b, ok := v.(cbor.Bool)
	if text, isText := v.(cbor.String); isText && in.proto == protoQuery {
		parsed, err := strconv.ParseBool(string(text))
		b, ok = cbor.Bool(parsed), err == nil
	}
	if !ok {
		in.fail(key, "a boolean")
		return false, false
	}
	return bool(b), true
}

func (in *cborInput) timestamp(m cbor.Map, key string) (time.Time, bool) {
	v, ok := present(m, key)
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	var err error
	switch in.proto {
	case protoCBOR:
		t, err = cbor.AsTime(v)
	case protoJSON:
		var secs float64
		secs, err = cbor.AsFloat64(v)
		t = time.UnixMilli(int64(math.Round(secs * 1e3)))
	case protoQuery:
		t, err = parseQueryTime(v)
	}
	if err != nil {
		in.fail(key, "a timestamp")
		return time.Time{}, false
	}
	return t, true
}

func (in *cborInput) list(m cbor.Map, key string) (cbor.List, bool) {
	v, ok := present(m, key)
	if !ok {
		return nil, false
	}
	l, ok := v.(cbor.List)
	if text, isText := v.(cbor.String); isText && text == "" && in.proto == protoQuery {
		// The Query protocol sends an empty list as the bare name.
		l, ok = cbor.List{}, true
	}
	if !ok {
		in.fail(key, "a list")
		return nil, false
	}
	return l, true
}

func (in *cborInput) structure(m cbor.Map, key string) (cbor.Map, bool) {
	v, ok := present(m, key)
	if !ok {
		return nil, false
	}
	s, ok := v.(cbor.Map)
	if !ok {
		in.fail(key, "a structure")
		return nil, false
	}
	return s, true
}

// strings reads a list of strings.
func (in *cborInput) strings(m cbor.Map, key string) []string {
	l, _ := in.list(m, key)
	out := make([]string, 0, len(l))
	for _, v := range l {
		s, ok := v.(cbor.String)
		if !ok {
			in.fail(key, "a list of strings")
			return nil
		}
		out = append(out, string(s))
	}
	return out
}

// floats reads a list of finite numbers.
func (in *cborInput) floats(m cbor.Map, key string) []float64 {
	l, _ := in.list(m, key)
	out := make([]float64, 0, len(l))
	for _, v := range l {
		f, err := cbor.AsFloat64(v)
		if text, ok := v.(cbor.String); ok && in.proto == protoQuery {
			f, err = strconv.ParseFloat(string(text), 64)
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			in.fail(key, "a list of finite numbers")
			return nil
		}
		out = append(out, f)
	}
	return out
}

// structures reads a list of structures.
func (in *cborInput) structures(m cbor.Map, key string) []cbor.Map {
	l, _ := in.list(m, key)
	out := make([]cbor.Map, 0, len(l))
	for _, v := range l {
		s, ok := v.(cbor.Map)
		if !ok {
			in.fail(key, "a list of structures")
			return nil
		}
		out = append(out, s)
	}
	return out
}

// Output helpers.

func cborTime(t time.Time) cbor.Value {
	return &cbor.Tag{ID: 1, Value: cbor.Float64(float64(t.UnixMilli()) / 1e3)}
}

func cborStrings(ss []string) cbor.List {
	l := make(cbor.List, len(ss))
	for i, s := range ss {
		l[i] = cbor.String(s)
	}
	return l
}

func cborInt(n int64) cbor.Value {
	if n < 0 {
		return cbor.NegInt(uint64(-n))
	}
	return cbor.Uint(uint64(n))
}
