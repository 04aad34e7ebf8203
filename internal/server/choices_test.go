package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolq/toolq/internal/views"
)

// TestRefusedChoicesNameTheValidOnes: an error about a choice that names nothing (a dimension, a
// queue, a destination, a rule, a metric, a tool) says which values would have, all of them when
// they are few and the closest otherwise, through MCP and the REST API alike: an agent has no
// page to look them up on. The name given is not repeated.
func TestRefusedChoicesNameTheValidOnes(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	endpoint := h.mcpURL(t)
	operator, viewer := h.mcpSession(t, endpoint, h.operator), h.mcpSession(t, endpoint, h.viewer)
	rules := views.AdviceRuleIDs()
	tests := []struct {
		name  string
		call  func() (code, message string)
		code  string
		wants []string
	}{
		{"MCP groupBy", func() (string, string) {
			return callError(t, viewer, "list_dlq_messages", map[string]any{"queue": "orders-dlq", "groupBy": "colour"})
		}, "unknown_dimension", []string{"valid: toolName, mcpServer, error"}},
		{"MCP dimension filter", func() (string, string) {
			return callError(t, viewer, "list_dlq_messages", map[string]any{"queue": "orders-dlq", "dimensions": map[string]any{"colour": "red"}})
		}, "unknown_dimension", []string{"valid: mcpServer, error"}},
		{"MCP queue", func() (string, string) {
			return callError(t, viewer, "get_queue", map[string]any{"queue": "oders-dlq"})
		},
			"queue_not_found", []string{"valid: ", "orders-dlq", "calls-dlq.fifo"}},
		{"MCP rule", func() (string, string) {
			return callError(t, viewer, "get_advice", map[string]any{"rule": "retention-too-shrt"})
		},
			"invalid_parameter", []string{rules[0]}},
		{"MCP redrive of a queue that is not there", func() (string, string) {
			return callError(t, operator, "start_redrive", map[string]any{"queue": "oders-dlq"})
		}, "queue_not_found", []string{"valid: calls-dlq.fifo, orders-dlq"}},
		{"MCP destination", func() (string, string) {
			return callError(t, operator, "start_redrive", map[string]any{"queue": "orders-dlq", "destination": "ordrs"})
		}, "destination_not_found", []string{"valid: orders"}},
		{"REST queue", func() (string, string) { return h.apiError(t, "/api/v1/queues/oders-dlq") }, "queue_not_found", []string{"orders-dlq"}},
		{"REST groupBy", func() (string, string) { return h.apiError(t, "/api/v1/queues/orders-dlq/messages?groupBy=colour") },
			"unknown_dimension", []string{"valid: toolName, mcpServer, error"}},
		{"REST metric", func() (string, string) {
			return h.apiError(t, "/api/v1/queues/orders/metrics?name=NumberOfMessagesSend")
		},
			"unknown_metric", []string{"NumberOfMessagesSent"}},
		{"REST rule", func() (string, string) { return h.apiError(t, "/api/v1/advice?rule=nope") }, "invalid_parameter", []string{rules[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := tt.call()
			if code != tt.code {
				t.Fatalf("code %q (%q), want %s", code, msg, tt.code)
			}
			for _, want := range tt.wants {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			for _, given := range []string{"colour", "oders", "shrt", "Send"} { // a destination is named, made safe
				if strings.Contains(msg, given) {
					t.Errorf("%q repeats the value given", msg)
				}
			}
		})
	}

	t.Run("MCP tool", func(t *testing.T) {
		for _, tt := range []struct {
			cs   *mcp.ClientSession
			sees bool
		}{{viewer, false}, {operator, true}} {
			_, err := tt.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_queues", Arguments: map[string]any{}})
			if err == nil || !strings.Contains(err.Error(), "unknown_tool") || !strings.Contains(err.Error(), "get_queue") || strings.Contains(err.Error(), "get_queues") {
				t.Errorf("an unknown tool: %v, want unknown_tool naming get_queue", err)
				continue
			}
			if sees := strings.Contains(err.Error(), "start_redrive") || strings.Contains(err.Error(), "cancel_redrive"); sees && !tt.sees {
				t.Errorf("a viewer is told of operator tools: %v", err)
			}
		}
	})
}

// apiError GETs target as the viewer and returns the API error's code and message.
func (h *apiHarness) apiError(t *testing.T, target string) (code, message string) {
	t.Helper()
	rec := h.do(t, apiRequest{target: target, header: bearer(h.viewer)})
	var body errorBody
	if rec.Code < 400 || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
		t.Fatalf("GET %s: %d %s, want an error", target, rec.Code, rec.Body)
	}
	return body.Error.Code, body.Error.Message
}
