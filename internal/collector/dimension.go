package collector

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DimensionSource says where a tool call's dimension is read from.
type DimensionSource string

// Dimension sources.
const (
	// FromAttribute reads a message attribute (String or Number; binary attributes read as empty).
	FromAttribute DimensionSource = "attr"
	// FromJSON reads a dotted JSON path of the body, as the tool fields are read.
	FromJSON DimensionSource = "json"
)

// Dimension is one named property of a tool call besides its tool name, call id and session id,
// by which sampled messages are grouped, filtered and searched: the MCP server from a message
// attribute, an error code from the body. Name is what the pages and the API call it.
type Dimension struct {
	Name   string
	Source DimensionSource
	// Path is the attribute's name, or the dotted JSON path (a leading "$." allowed).
	Path string
}

// MaxDimensions bounds Options.Dimensions: each is stored with every sampled message.
const MaxDimensions = 16

// dimensionName is what a dimension may be called: it becomes a query parameter
// (?mcpServer=docs-legacy) and a metric label value, so it is a plain identifier.
var dimensionName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// ParseDimension reads a --dimension flag: NAME=attr:ATTRIBUTE or NAME=json:PATH
// (mcpServer=attr:mcpServer, error=json:$.error.code).
func ParseDimension(spec string) (Dimension, error) {
	name, rest, ok := strings.Cut(spec, "=")
	source, path, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return Dimension{}, fmt.Errorf("dimension %q: want NAME=attr:ATTRIBUTE or NAME=json:PATH", spec)
	}
	name, path = strings.TrimSpace(name), strings.TrimSpace(path)
	if !dimensionName.MatchString(name) {
		return Dimension{}, fmt.Errorf("dimension %q: the name must be a letter then letters, digits or _ (at most 64)", spec)
	}
	d := Dimension{Name: name, Source: DimensionSource(strings.TrimSpace(source)), Path: path}
	switch d.Source {
	case FromAttribute:
		if path == "" || len(path) > 256 {
			return Dimension{}, fmt.Errorf("dimension %q: no attribute name", spec)
		}
	case FromJSON:
		d.Path = strings.TrimPrefix(strings.TrimPrefix(path, "$"), ".")
		if d.Path == "" || strings.Contains(d.Path, "..") || strings.HasSuffix(d.Path, ".") {
			return Dimension{}, fmt.Errorf("dimension %q: the JSON path must name a field ($.error.code or error.code)", spec)
		}
	default:
		return Dimension{}, fmt.Errorf("dimension %q: the source must be attr or json", spec)
	}
	return d, nil
}

// String returns the dimension as its flag is written.
func (d Dimension) String() string { return d.Name + "=" + string(d.Source) + ":" + d.Path }

// checkDimensions refuses dimensions that could not be told apart or are too many.
func checkDimensions(dims []Dimension) error {
	if len(dims) > MaxDimensions {
		return fmt.Errorf("collector: %d dimensions, at most %d", len(dims), MaxDimensions)
	}
	seen := map[string]bool{}
	for _, d := range dims {
		if _, err := ParseDimension(d.String()); err != nil {
			return fmt.Errorf("collector: %w", err)
		}
		if seen[d.Name] {
			return fmt.Errorf("collector: dimension %q given twice", d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// attributeValue reads a message attribute as text: String and Number values as they are,
// binary ones not at all (they are no name to group by).
func attributeValue(attrs map[string]types.MessageAttributeValue, name string) string {
	v, ok := attrs[name]
	if !ok || v.BinaryValue != nil {
		return ""
	}
	return aws.ToString(v.StringValue)
}
