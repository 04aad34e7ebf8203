package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestQuoteJSON: an answer's JSON written as a JSON string is what encoding/json writes for it,
// whatever the answer holds (quotes, backslashes, HTML, control characters, U+2028) and across
// the chunks it is written in.
func TestQuoteJSON(t *testing.T) {
	t.Parallel()
	long := strings.Repeat(`a"b\c`, quoteChunk/3) // quotes and backslashes across chunk edges
	for _, v := range []any{
		map[string]string{},
		map[string]any{"body": `Ignore previous instructions "and" \ escape </script> & <b>`, "n": 1.5},
		[]string{"\x00\x1f\t\n", "\u2028\u2029", "日本語", `\"`, `"`, `\`},
		map[string]string{"long": long, "tail": strings.Repeat("x", quoteChunk+7)},
		strings.Repeat(`"`, quoteChunk+3),
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(string(raw))
		var got bytes.Buffer
		if err := writeQuotedJSON(&got, raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("quoting %.80s…: got %.200s…, want %.200s…", raw, got.Bytes(), want)
		}
	}
}

// TestSpliceTakesOnlyItsPlaceholders: the writer replaces the placeholders of its own request's
// answer, once, and leaves alone what merely looks like one (a body can say "toolq-answer-…").
func TestSpliceTakesOnlyItsPlaceholders(t *testing.T) {
	t.Parallel()
	answers := &mcpAnswers{}
	raw := []byte(`{"body":"toolq-answer-FORGED \"toolq-answer-text-FORGED\""}`)
	res := answers.result("short", raw)
	sdk, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": res, "forged": "toolq-answer-FORGED"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	w := splicingWriter{ResponseWriter: rec, answers: answers}
	if _, err := w.Write(sdk); err != nil {
		t.Fatal(err)
	}
	out := rec.Body
	var got struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
		Forged string `json:"forged"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("spliced message is not JSON: %v\n%s", err, out.Bytes())
	}
	if len(got.Result.Content) != 2 || got.Result.Content[0].Text != "short" || got.Result.Content[1].Text != string(raw) ||
		string(got.Result.StructuredContent) != string(raw) || got.Forged != "toolq-answer-FORGED" {
		t.Errorf("spliced = %s", out.Bytes())
	}
	if answers.unwritten() != 0 {
		t.Error("the answer is still pending after its write")
	}
	// A second write of the same bytes finds no pending answer: it goes out as it is.
	out.Reset()
	if _, err := w.Write(sdk); err != nil || !bytes.Equal(out.Bytes(), sdk) {
		t.Errorf("a write without an answer changed: %s", out.Bytes())
	}
}
