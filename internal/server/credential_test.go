package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// tokenID returns the store id of the live token called name.
func (h *apiHarness) tokenID(t *testing.T, name string) int64 {
	t.Helper()
	tokens, err := auth.ListTokens(context.Background(), h.w.Store)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tokens {
		if tk.Name == name && tk.RevokedAt.IsZero() {
			return tk.ID
		}
	}
	t.Fatalf("no live token called %s", name)
	return 0
}

// moveTasks counts the move tasks SQS has of a dead-letter queue.
func (h *apiHarness) moveTasks(t *testing.T, dlq string) int {
	t.Helper()
	out, err := h.w.SQS.ListMessageMoveTasks(t.Context(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(h.w.ARN(dlq))})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Results)
}

// TestConfirmationOfARevokedTokensName: a preview's confirmation is the token's, by its id: a
// new token given the name of the revoked one that previewed, within the two minutes, is another
// caller (confirmation_mismatch) and starts nothing. The audit log, the API and the page tell the
// two apart by token id.
func TestConfirmationOfARevokedTokensName(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	ctx := context.Background()
	first, err := auth.CreateToken(ctx, h.w.Store, "deploy-bot", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	firstID := h.tokenID(t, "deploy-bot")
	endpoint := h.mcpURL(t)
	cs := h.mcpSession(t, endpoint, first)
	args := map[string]any{"queue": "orders-dlq", "maxMessagesPerSecond": 5}
	raw, _ := call(t, cs, toolNames(t, cs), "start_redrive", args)
	var preview startRedriveAnswer
	if err := json.Unmarshal(raw, &preview); err != nil || preview.Preview == nil {
		t.Fatalf("preview = %s, %v", raw, err)
	}

	if err := auth.RevokeToken(ctx, h.w.Store, "deploy-bot"); err != nil {
		t.Fatal(err)
	}
	second, err := auth.CreateToken(ctx, h.w.Store, "deploy-bot", auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	secondID := h.tokenID(t, "deploy-bot")
	if secondID == firstID {
		t.Fatalf("the new token has the revoked one's id %d", firstID)
	}
	args["confirmationToken"] = preview.Preview.ConfirmationToken
	if code, _ := callError(t, h.mcpSession(t, endpoint, second), "start_redrive", args); code != "confirmation_mismatch" {
		t.Errorf("the revoked token's confirmation redeemed by a new token of its name: %s, want confirmation_mismatch", code)
	}
	if n := h.moveTasks(t, "orders-dlq"); n != 0 {
		t.Errorf("move tasks = %d; want none", n)
	}

	// The audit log: the preview by the first token, the refusal by the second, one name.
	rec := h.do(t, apiRequest{target: "/api/v1/audit?queue=orders-dlq", header: bearer(h.viewer)})
	var got struct {
		Entries []struct {
			Actor   string `json:"actor"`
			TokenID int64  `json:"tokenId"`
			Action  string `json:"action"`
			Result  string `json:"result"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Entries) != 2 {
		t.Fatalf("audit = %s, %v; want the refusal and the preview", rec.Body, err)
	}
	refusal, previewed := got.Entries[0], got.Entries[1]
	if refusal.Action != "redrive.start" || refusal.Result != store.AuditRefused || refusal.Actor != "deploy-bot" || refusal.TokenID != secondID ||
		previewed.Action != "redrive.preview" || previewed.Actor != "deploy-bot" || previewed.TokenID != firstID {
		t.Errorf("audit entries = %+v; want the preview by token %d and the refusal by token %d, both deploy-bot", got.Entries, firstID, secondID)
	}
	page := h.do(t, apiRequest{target: "/audit", header: bearer(h.viewer)})
	doc, err := goquery.NewDocumentFromReader(page.Body)
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	doc.Find("table tbody tr td:nth-of-type(1)").Each(func(_ int, s *goquery.Selection) {
		actors = append(actors, strings.Join(strings.Fields(s.Text()), " "))
	})
	for _, want := range []string{"deploy-bot (token #" + strconv.FormatInt(firstID, 10) + ", operator)", "deploy-bot (token #" + strconv.FormatInt(secondID, 10) + ", operator)"} {
		if !strings.Contains(strings.Join(actors, "\n"), want) {
			t.Errorf("audit page's actors %q; want %q", actors, want)
		}
	}
}

// TestIdempotencyKeyIsTheCredentials: an idempotency key answers repeats by the credential that
// sent it: a Bearer token named like a proxy user does not get that user's start replayed, nor
// does another browser session of the same token; the same credential does.
func TestIdempotencyKeyIsTheCredentials(t *testing.T) {
	t.Parallel()
	const key = "0b7e3c52-9f1a-4d7e-8c3b-2a6f5e4d1c90"
	type sender struct {
		name    string
		header  map[string]string
		cookies []*http.Cookie
		remote  string
	}
	start := func(t *testing.T, h *apiHarness, s sender) (int, string, string) {
		t.Helper()
		hdr := map[string]string{"Content-Type": "application/json", "Idempotency-Key": key}
		for k, v := range s.header {
			hdr[k] = v
		}
		rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: `{"maxMessagesPerSecond":1}`,
			header: hdr, cookies: s.cookies, remote: s.remote})
		code := ""
		if rec.Code >= 400 {
			code = errorCode(t, rec.Body.Bytes())
		}
		return rec.Code, code, rec.Header().Get("Idempotent-Replayed")
	}
	tests := []struct {
		name string
		mode auth.Mode
		// first sends the key first; other sends it again under the same name or token.
		first, other func(t *testing.T, h *apiHarness) sender
	}{
		{"a Bearer token named like a proxy user", auth.ModeProxy,
			func(t *testing.T, h *apiHarness) sender {
				return sender{name: "proxy user alice", remote: "10.9.0.1:4000",
					header: map[string]string{auth.HeaderForwardedUser: "alice", auth.HeaderForwardedGroups: "sre"}}
			},
			func(t *testing.T, h *apiHarness) sender {
				plain, err := auth.CreateToken(context.Background(), h.w.Store, "alice", auth.RoleOperator)
				if err != nil {
					t.Fatal(err)
				}
				return sender{name: "token alice", header: bearer(plain), remote: "192.0.2.9:4000"}
			}},
		{"another browser session of the same token", auth.ModeToken,
			func(t *testing.T, h *apiHarness) sender {
				cookies, _ := browserSession(t, h, h.operator)
				return sender{name: "session one", cookies: cookies, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}
			},
			func(t *testing.T, h *apiHarness) sender {
				cookies, _ := browserSession(t, h, h.operator)
				return sender{name: "session two", cookies: cookies, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newAPIHarness(t, harnessConfig{mode: tt.mode})
			first := tt.first(t, h)
			if status, code, replayed := start(t, h, first); status != http.StatusAccepted || replayed != "" {
				t.Fatalf("%s's start: %d %s, replayed %q; want 202", first.name, status, code, replayed)
			}
			other := tt.other(t, h)
			if status, code, replayed := start(t, h, other); status != http.StatusConflict || code != "task_running" || replayed != "" {
				t.Errorf("%s with %s's key: %d %s, Idempotent-Replayed %q; want 409 task_running, not the replay", other.name, first.name, status, code, replayed)
			}
			if status, _, replayed := start(t, h, first); status != http.StatusAccepted || replayed != "true" {
				t.Errorf("%s again: %d, Idempotent-Replayed %q; want the replay", first.name, status, replayed)
			}
			if n := h.moveTasks(t, "orders-dlq"); n != 1 {
				t.Errorf("move tasks = %d; want one", n)
			}
		})
	}
}
