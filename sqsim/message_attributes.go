package sqsim

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// messageAttribute is a message attribute as the JSON protocol carries it.
// BinaryValue travels as base64, which encoding/json does for []byte.
type messageAttribute struct {
	DataType         string
	StringValue      *string  `json:",omitempty"`
	BinaryValue      []byte   `json:",omitempty"`
	StringListValues []string `json:",omitempty" query:"StringListValue"`
	BinaryListValues [][]byte `json:",omitempty" query:"BinaryListValue"`
}

// String describes the attribute's value for Snapshot.
func (a messageAttribute) String() string {
	if a.StringValue != nil {
		return *a.StringValue
	}
	return string(a.BinaryValue)
}

const maxMessageAttributes = 10

// validateMessageAttributes applies SQS's rules for message attributes (and,
// with system set, for message system attributes, of which only
// AWSTraceHeader exists) and returns their size as SQS counts it: name,
// type and value bytes.
func validateMessageAttributes(attrs map[string]messageAttribute, system bool) (int, *apiError) {
	if len(attrs) > maxMessageAttributes {
		return 0, errInvalidParameterValue("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), maxMessageAttributes)
	}
	size := 0
	for name, a := range attrs {
		if system {
			if name != "AWSTraceHeader" {
				return 0, errInvalidParameterValue("Message system attribute name '%s' is invalid.", truncate(name, 100))
			}
		} else if err := validateAttributeName(name); err != nil {
			return 0, err
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		if len(a.DataType) > 256 || (base != "String" && base != "Number" && base != "Binary") {
			return 0, errInvalidParameterValue("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", truncate(name, 100))
		}
		if len(a.StringListValues) > 0 || len(a.BinaryListValues) > 0 {
			return 0, errInvalidParameterValue("Message attribute list values in '%s' are not supported.", truncate(name, 100))
		}
		switch base {
		case "String", "Number":
			if a.StringValue == nil || *a.StringValue == "" || a.BinaryValue != nil {
				return 0, errInvalidParameterValue("Message (user) attribute '%s' must contain a non-empty value of type '%s'.", truncate(name, 100), base)
			}
			if err := validateMessageText(*a.StringValue); err != nil {
				return 0, err
			}
			if base == "Number" {
				f, err := strconv.ParseFloat(*a.StringValue, 64)
				if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
					return 0, errInvalidParameterValue("Can't cast the value of message (user) attribute '%s' to a number.", truncate(name, 100))
				}
			}
			size += len(*a.StringValue)
		case "Binary":
			if len(a.BinaryValue) == 0 || a.StringValue != nil {
				return 0, errInvalidParameterValue("Message (user) attribute '%s' must contain a non-empty value of type 'Binary'.", truncate(name, 100))
			}
			size += len(a.BinaryValue)
		}
		size += len(name) + len(a.DataType)
	}
	return size, nil
}

func validateAttributeName(name string) *apiError {
	invalid := errInvalidParameterValue("Message (user) attribute name '%s' is invalid.", truncate(name, 100))
	if name == "" || len(name) > 256 {
		return invalid
	}
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
		return errInvalidParameterValue("Message (user) attribute name '%s' is reserved for use by Amazon.", truncate(name, 100))
	}
	if name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return invalid
	}
	for _, r := range name {
		ok := r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return invalid
		}
	}
	return nil
}

// validateMessageText applies SQS's character rule to a body or string
// attribute: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF.
func validateMessageText(s string) *apiError {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return errInvalidMessageContents("invalid UTF-8")
			}
		}
		ok := r == 0x9 || r == 0xA || r == 0xD ||
			(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
		if !ok {
			return errInvalidMessageContents("character " + strconv.QuoteRune(r))
		}
	}
	return nil
}

// md5OfAttributes computes MD5OfMessageAttributes exactly as SQS does (and
// as the SDKs that check it do): attributes sorted by name, each encoded as
// length-prefixed name, length-prefixed type, a transport byte (1 string,
// 2 binary) and the length-prefixed value. Empty input has no digest.
func md5OfAttributes(attrs map[string]messageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	h := md5.New()
	writeField := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range names {
		a := attrs[name]
		writeField([]byte(name))
		writeField([]byte(a.DataType))
		if a.StringValue != nil {
			h.Write([]byte{1})
			writeField([]byte(*a.StringValue))
		} else {
			h.Write([]byte{2})
			writeField(a.BinaryValue)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// selectAttributes returns the attributes that ReceiveMessage's
// MessageAttributeNames asks for: "All" or ".*" for every one, "prefix.*"
// for those under a prefix, or exact names.
func selectAttributes(attrs map[string]messageAttribute, wanted []string) map[string]messageAttribute {
	if len(attrs) == 0 || len(wanted) == 0 {
		return nil
	}
	out := make(map[string]messageAttribute)
	for name, a := range attrs {
		for _, w := range wanted {
			prefix, isPrefix := strings.CutSuffix(w, ".*")
			if w == "All" || w == ".*" || w == name || (isPrefix && strings.HasPrefix(name, prefix+".")) {
				out[name] = a
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
