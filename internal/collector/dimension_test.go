package collector

import (
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestParseDimension(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    Dimension
		wantErr bool
	}{
		{spec: "mcpServer=attr:mcpServer", want: Dimension{Name: "mcpServer", Source: FromAttribute, Path: "mcpServer"}},
		{spec: "error=json:$.error.code", want: Dimension{Name: "error", Source: FromJSON, Path: "error.code"}},
		{spec: "error=json:error.code", want: Dimension{Name: "error", Source: FromJSON, Path: "error.code"}},
		{spec: " region = attr: x-region ", want: Dimension{Name: "region", Source: FromAttribute, Path: "x-region"}},
		{spec: "mcpServer", wantErr: true},
		{spec: "mcpServer=attr", wantErr: true},
		{spec: "=attr:x", wantErr: true},
		{spec: "1st=attr:x", wantErr: true},
		{spec: "a-b=attr:x", wantErr: true}, // a query parameter and a label value: identifiers only
		{spec: "x=body:y", wantErr: true},
		{spec: "x=json:$", wantErr: true},
		{spec: "x=json:a..b", wantErr: true},
		{spec: "x=attr:", wantErr: true},
		{spec: "x=attr:" + strings.Repeat("a", 257), wantErr: true},
		{spec: strings.Repeat("n", 65) + "=attr:x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseDimension(tt.spec)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Errorf("ParseDimension = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
			if err == nil && got.String() != tt.want.String() {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestCollectorRefusesBadDimensions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	twice := []Dimension{{Name: "a", Source: FromAttribute, Path: "x"}, {Name: "a", Source: FromJSON, Path: "y"}}
	many := make([]Dimension, MaxDimensions+1)
	for i := range many {
		many[i] = Dimension{Name: "d" + strings.Repeat("x", i), Source: FromAttribute, Path: "x"}
	}
	for name, dims := range map[string][]Dimension{"twice": twice, "too many": many, "bad source": {{Name: "a", Source: "body", Path: "x"}}} {
		if _, err := New(Options{Regions: []Region{{Name: "us-east-1", SQS: e.sqs}}, Store: e.store, Dimensions: dims}); err == nil {
			t.Errorf("%s: New accepted %v", name, dims)
		}
	}
}

// TestSampleKeepsDimensions runs a real peek over messages that carry their MCP server as an
// attribute and an error code in the body, and reads the dimensions back from the store.
func TestSampleKeepsDimensions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("tool-calls", "tool-calls-dlq", 1)
	attr := func(server string) func(*sqs.SendMessageInput) {
		return func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{
				"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(server)},
				"blob":      {DataType: aws.String("Binary"), BinaryValue: []byte("docs-legacy")},
			}
		}
	}
	e.send(srcURL, `{"toolName":"fetch_url","error":{"code":"url_scheme_not_allowed"}}`, attr("research"))
	e.send(srcURL, `{"toolName":"create_document"}`, attr("docs-legacy"))
	e.send(srcURL, `not json`, attr("<script>x</script>\u202e"))
	e.send(srcURL, `{"toolName":"read_file","error":{"code":7}}`)
	for range 5 {
		e.consume(srcURL)
	}
	c := e.collector(func(o *Options) {
		o.Dimensions = []Dimension{
			{Name: "mcpServer", Source: FromAttribute, Path: "mcpServer"},
			{Name: "error", Source: FromJSON, Path: "error.code"},
			{Name: "binary", Source: FromAttribute, Path: "blob"},
		}
	})
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	_, msgs := e.latestMessages("tool-calls-dlq")
	got := map[string]map[string]string{}
	for _, m := range msgs {
		got[m.ToolName+"|"+m.Body[:min(len(m.Body), 8)]] = m.Dimensions
	}
	want := map[string]map[string]string{
		`fetch_url|{"toolNa`:       {"mcpServer": "research", "error": "url_scheme_not_allowed"},
		`create_document|{"toolNa`: {"mcpServer": "docs-legacy"},
		`|not json`:                {"mcpServer": "<script>x</script>\u202e"}, // kept as text; the pages escape it
		`read_file|{"toolNa`:       {"error": "7"},
	}
	if len(got) != len(want) {
		t.Fatalf("dimensions = %v; want %v", got, want)
	}
	for k, w := range want {
		if !maps.Equal(got[k], w) {
			t.Errorf("%s: dimensions %v; want %v", k, got[k], w)
		}
	}
}
