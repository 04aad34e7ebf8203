package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/toolq/toolq/sqsim"
)

// refusing wraps the simulator in an endpoint that denies what a policy without the named
// permissions would: every SQS call, every CloudWatch call, every Lambda call, each in its
// protocol's own error shape, so that the stock clients return the typed AccessDenied errors AWS
// gives.
func refusing(sim http.Handler, denySQS, denyCloudWatch, denyLambda bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case denyLambda && strings.HasPrefix(r.URL.Path, "/2015-03-31/"):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"Type":"User","message":"User: arn:aws:iam::123456789012:user/toolq is not authorized to perform: lambda:ListEventSourceMappings"}`)
		case denyCloudWatch && strings.HasPrefix(r.URL.Path, "/service/"):
			w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
			w.Header().Set("Content-Type", "application/cbor")
			w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
			w.WriteHeader(http.StatusForbidden)
			w.Write(cbor.Encode(cbor.Map{
				"__type":  cbor.String("AccessDenied"),
				"message": cbor.String("User: arn:aws:iam::123456789012:user/toolq is not authorized to perform: cloudwatch:GetMetricData"),
			}))
		case denySQS && r.Header.Get("X-Amz-Target") != "":
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
			w.WriteHeader(http.StatusBadRequest)
			op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
			io.WriteString(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/toolq is not authorized to perform: sqs:`+op+`"}`)
		default:
			sim.ServeHTTP(w, r)
		}
	})
}

// TestServeIsNeverGreenWhileBlind runs `dashboard serve` against endpoints that refuse it and
// reads what an on-call engineer and a bot would: ready (the pod stays in its Service), but the
// summary never says healthy, the status endpoint names the failing operation and the
// permission it needs, and the gauges say so.
func TestServeIsNeverGreenWhileBlind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                        string
		denySQS, denyCW, denyLambda bool
		wantText                    []string
		wantOp                      string
		wantMetric                  string
	}{
		{"credentials denied for SQS", true, false, false,
			[]string{"toolq: CANNOT SEE us-east-1; ", "CANNOT SEE us-east-1: cannot list its queues: ListQueues failed with AccessDenied (needs sqs:ListQueues)"},
			"ListQueues", `toolq_region_visible{region="us-east-1"} 0`},
		{"CloudWatch refused", false, true, false,
			[]string{"UNKNOWN web-search: oldest message age unknown: CloudWatch GetMetricData fails (AccessDenied)",
				"CANNOT READ us-east-1: CloudWatch metrics are missing (oldest-message ages, sends, receives): GetMetricData failed with AccessDenied (needs cloudwatch:GetMetricData)"},
			"GetMetricData", `toolq_aws_operation_failing{operation="GetMetricData",region="us-east-1"} 1`},
		// A denied Lambda listing is no queue without consumers: it is a problem toolq names.
		{"Lambda refused", false, false, true,
			[]string{"CANNOT READ us-east-1: Lambda consumers (event source mappings) cannot be read: ListEventSourceMappings failed with AccessDeniedException (needs lambda:ListEventSourceMappings)"},
			"ListEventSourceMappings", `toolq_aws_operation_failing{operation="ListEventSourceMappings",region="us-east-1"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := sqsim.New(sqsim.Options{Seed: 3})
			direct := httptest.NewServer(sim)
			defer direct.Close()
			client := newTestClient(t, direct.URL)
			out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("web-search")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(`{"toolName":"search"}`)}); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(refusing(sim, tt.denySQS, tt.denyCW, tt.denyLambda))
			defer srv.Close()
			base, _ := startServe(t, []string{"--endpoint-url", srv.URL, "--region", "us-east-1",
				"--db", t.TempDir() + "/toolq.db", "--listen", "127.0.0.1:0", "--log-level", "error"})

			var text string
			waitForServe(t, "a summary that says what toolq cannot read", func() bool {
				text = fetch(t, base+"/api/v1/summary", "text/plain")
				for _, want := range tt.wantText {
					if !strings.Contains(text, want) {
						return false
					}
				}
				return true
			})
			if strings.Contains(text, "queues healthy") {
				t.Errorf("summary says healthy:\n%s", text)
			}
			var st struct {
				Regions []struct {
					Region     string
					Operations []struct {
						Operation, Permission, FailureCode, FailureMessage string
						Failing                                            bool
					}
				}
			}
			if err := json.Unmarshal([]byte(fetch(t, base+"/api/v1/status", "application/json")), &st); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range st.Regions {
				for _, op := range r.Operations {
					if op.Operation == tt.wantOp {
						found = op.Failing && strings.Contains(op.FailureMessage, "arn:aws:iam::123456789012:user/toolq") && op.Permission != ""
					}
				}
			}
			if !found {
				t.Errorf("status does not show %s failing with AWS's message: %+v", tt.wantOp, st)
			}
			if code := get(t, base+"/readyz"); code != http.StatusOK {
				t.Errorf("/readyz = %d while AWS refuses, want 200", code)
			}
			if m := fetch(t, base+"/metrics", ""); !strings.Contains(m, tt.wantMetric) || !strings.Contains(m, "toolq_build_info{") {
				t.Errorf("/metrics lacks %s or toolq_build_info", tt.wantMetric)
			}
		})
	}
}

// fetch GETs url with an Accept header and returns the body.
func fetch(t *testing.T, url, accept string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := apiClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
