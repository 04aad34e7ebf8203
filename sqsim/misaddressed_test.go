package sqsim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// misaddressWorld is a simulator with something for every mutating SQS operation to change: q
// and q2 with messages (one of q's in flight, with its receipt handle), a tag and a permission
// on q, a dead-letter queue with a running move task and another with messages and none.
type misaddressWorld struct {
	h                *harness
	q, q2            string // queue URLs
	receipt          string // of q's message in flight
	taskHandle       string // of dlq's running task
	idleDLQ, ownHost string // dlq2's ARN; the host and port queue URLs name
}

func newMisaddressWorld(t *testing.T) *misaddressWorld {
	t.Helper()
	ctx := context.Background()
	w := &misaddressWorld{h: newHarness(t)}
	h := w.h
	w.q = h.createQueue(t, "q", nil)
	w.q2 = h.createQueue(t, "q2", nil)
	h.send(t, w.q, "one")
	h.send(t, w.q, "two")
	h.send(t, w.q2, "other")
	w.receipt = aws.ToString(h.receive(t, w.q, 1)[0].ReceiptHandle)
	if _, err := h.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(w.q), Tags: map[string]string{"keep": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sqs.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(w.q), Label: aws.String("perm"),
		AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}}); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"src", "dlq"}, {"src2", "dlq2"}} {
		dlq := h.createQueue(t, pair[1], nil)
		arn := h.queueARN(t, dlq)
		h.createQueue(t, pair[0], map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`})
		for range 3 {
			h.send(t, dlq, "dead")
		}
		if pair[1] == "dlq2" {
			w.idleDLQ = arn
			continue
		}
		out, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arn), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		w.taskHandle = aws.ToString(out.TaskHandle)
	}
	u, _ := url.Parse(w.q)
	w.ownHost = u.Host
	return w
}

// do sends one request to the simulator: method POST, the path (and query), the X-Amz-Target
// (empty: a Query-protocol form) and the body.
func (w *misaddressWorld) do(t *testing.T, path, target, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.h.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	} else {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// misaddressedOp is one mutating operation, well addressed: its JSON members and its Query
// parameters, with the queue (or move task) it acts on.
type misaddressedOp struct {
	name string
	// members of the JSON body, QueueUrl aside (added by the request); values are JSON.
	members func(w *misaddressWorld) [][2]string
	// params of the Query form, QueueUrl aside; nil: the test sends it in JSON only.
	params func(w *misaddressWorld) url.Values
	// queue: the operation names its queue with QueueUrl.
	queue bool
}

// misaddressedOps are every SQS operation that changes something (ReceiveMessage raises receive
// counts and hides messages).
var misaddressedOps = []misaddressedOp{
	{"CreateQueue", func(*misaddressWorld) [][2]string { return [][2]string{{"QueueName", `"fresh"`}} },
		func(*misaddressWorld) url.Values { return form("QueueName", "fresh") }, false},
	{"DeleteQueue", nothing, noParams, true},
	{"PurgeQueue", nothing, noParams, true},
	{"SetQueueAttributes", func(*misaddressWorld) [][2]string { return [][2]string{{"Attributes", `{"VisibilityTimeout":"99"}`}} },
		func(*misaddressWorld) url.Values {
			return form("Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "99")
		}, true},
	{"TagQueue", func(*misaddressWorld) [][2]string { return [][2]string{{"Tags", `{"k":"v"}`}} },
		func(*misaddressWorld) url.Values { return form("Tag.1.Key", "k", "Tag.1.Value", "v") }, true},
	{"UntagQueue", func(*misaddressWorld) [][2]string { return [][2]string{{"TagKeys", `["keep"]`}} },
		func(*misaddressWorld) url.Values { return form("TagKey.1", "keep") }, true},
	{"SendMessage", func(*misaddressWorld) [][2]string { return [][2]string{{"MessageBody", `"x"`}} },
		func(*misaddressWorld) url.Values { return form("MessageBody", "x") }, true},
	{"SendMessageBatch", func(*misaddressWorld) [][2]string { return [][2]string{{"Entries", `[{"Id":"1","MessageBody":"x"}]`}} },
		func(*misaddressWorld) url.Values {
			return form("SendMessageBatchRequestEntry.1.Id", "1", "SendMessageBatchRequestEntry.1.MessageBody", "x")
		}, true},
	{"ReceiveMessage", func(*misaddressWorld) [][2]string { return [][2]string{{"MaxNumberOfMessages", `10`}} },
		func(*misaddressWorld) url.Values { return form("MaxNumberOfMessages", "10") }, true},
	{"DeleteMessage", func(w *misaddressWorld) [][2]string { return [][2]string{{"ReceiptHandle", jsonString(w.receipt)}} },
		func(w *misaddressWorld) url.Values { return form("ReceiptHandle", w.receipt) }, true},
	{"DeleteMessageBatch", func(w *misaddressWorld) [][2]string {
		return [][2]string{{"Entries", `[{"Id":"1","ReceiptHandle":` + jsonString(w.receipt) + `}]`}}
	}, func(w *misaddressWorld) url.Values {
		return form("DeleteMessageBatchRequestEntry.1.Id", "1", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", w.receipt)
	}, true},
	{"ChangeMessageVisibility", func(w *misaddressWorld) [][2]string {
		return [][2]string{{"ReceiptHandle", jsonString(w.receipt)}, {"VisibilityTimeout", `0`}}
	}, func(w *misaddressWorld) url.Values { return form("ReceiptHandle", w.receipt, "VisibilityTimeout", "0") }, true},
	{"ChangeMessageVisibilityBatch", func(w *misaddressWorld) [][2]string {
		return [][2]string{{"Entries", `[{"Id":"1","ReceiptHandle":` + jsonString(w.receipt) + `,"VisibilityTimeout":0}]`}}
	}, func(w *misaddressWorld) url.Values {
		return form("ChangeMessageVisibilityBatchRequestEntry.1.Id", "1", "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle", w.receipt,
			"ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout", "0")
	}, true},
	{"AddPermission", func(*misaddressWorld) [][2]string {
		return [][2]string{{"Label", `"more"`}, {"AWSAccountIds", `["222222222222"]`}, {"Actions", `["SendMessage"]`}}
	}, func(*misaddressWorld) url.Values {
		return form("Label", "more", "AWSAccountId.1", "222222222222", "ActionName.1", "SendMessage")
	}, true},
	{"RemovePermission", func(*misaddressWorld) [][2]string { return [][2]string{{"Label", `"perm"`}} },
		func(*misaddressWorld) url.Values { return form("Label", "perm") }, true},
	{"StartMessageMoveTask", func(w *misaddressWorld) [][2]string { return [][2]string{{"SourceArn", jsonString(w.idleDLQ)}} },
		func(w *misaddressWorld) url.Values { return form("SourceArn", w.idleDLQ) }, false},
	{"CancelMessageMoveTask", func(w *misaddressWorld) [][2]string { return [][2]string{{"TaskHandle", jsonString(w.taskHandle)}} },
		func(w *misaddressWorld) url.Values { return form("TaskHandle", w.taskHandle) }, false},
}

func nothing(*misaddressWorld) [][2]string { return nil }
func noParams(*misaddressWorld) url.Values { return url.Values{} }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// object writes members as a JSON object, in order (names may repeat).
func object(members [][2]string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = jsonString(m[0]) + ":" + m[1]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// lowerFirst is a member name in lower camel case, as JSON elsewhere spells it.
func lowerFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// TestMisaddressedRequestsChangeNothing sends every mutating SQS operation, in AWS JSON 1.0 and
// in the Query protocol, malformed or addressed in a way that names no queue (or task) exactly:
// another account, or another region's (or partition's) AWS host, a queue URL with more or
// less than a queue's path (a trailing slash, an empty segment), a path and a
// parameter that disagree, a member or parameter given twice or in another case. Each is refused
// with a 4xx and changes nothing; the same request well addressed changes the simulator, so each
// refusal is of a request that would have acted.
func TestMisaddressedRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	type variant struct {
		name         string
		path, target string
		body         string
	}
	for _, op := range misaddressedOps {
		t.Run(op.name, func(t *testing.T) {
			target := sqsTargetPrefix + op.name
			queueURL := func(w *misaddressWorld, raw string) [][2]string {
				if !op.queue {
					return nil
				}
				return [][2]string{{"QueueUrl", jsonString(raw)}}
			}
			jsonBody := func(w *misaddressWorld) string { return object(append(queueURL(w, w.q), op.members(w)...)) }
			queryForm := func(w *misaddressWorld, qurl string) url.Values {
				v := op.params(w)
				v.Set("Action", op.name)
				if op.queue {
					v.Set("QueueUrl", qurl)
				}
				return v
			}

			withoutQueueURL := func(w *misaddressWorld) url.Values {
				v := op.params(w)
				v.Set("Action", op.name)
				return v
			}

			// Well addressed, in each protocol, on a world of its own: it acts.
			for _, protocol := range []string{"json", "query"} {
				w := newMisaddressWorld(t)
				before := w.h.sim.fingerprint()
				var status int
				var body string
				if protocol == "json" {
					status, body = w.do(t, "/", target, jsonBody(w))
				} else {
					status, body = w.do(t, "/", "", queryForm(w, w.q).Encode())
				}
				if status != http.StatusOK || w.h.sim.fingerprint() == before {
					t.Fatalf("well addressed in %s: status %d, changed %v: %.300s", protocol, status, w.h.sim.fingerprint() != before, body)
				}
			}

			variantsOf := func(w *misaddressWorld) []variant {
				ownAccount := "http://" + w.ownHost + "/000000000000/"
				var variants []variant
				members := func(w *misaddressWorld) [][2]string { return append(queueURL(w, w.q), op.members(w)...) }
				// AWS JSON 1.0.
				variants = append(variants,
					variant{"JSON posted to another queue's URL", "/000000000000/q2", target, jsonBody(w)},
					variant{"JSON posted to the queue's own URL", "/000000000000/q", target, jsonBody(w)},
					variant{"JSON posted to a path of no queue", "/sqs", target, jsonBody(w)},
					variant{"JSON with a second value after the body", "/", target, jsonBody(w) + ` {}`},
				)
				lower := [][2]string{}
				for _, m := range members(w) {
					lower = append(lower, [2]string{lowerFirst(m[0]), m[1]})
				}
				variants = append(variants, variant{"JSON members in lower camel case", "/", target, object(lower)})
				if first := members(w); len(first) > 0 {
					twice := append([][2]string{{first[0][0], `"` + strings.ReplaceAll(strings.Trim(first[0][1], `"`), "q", "q2") + `"`}}, first...)
					variants = append(variants, variant{"JSON member " + first[0][0] + " given twice", "/", target, object(twice)})
				}
				if op.queue {
					for _, bad := range []struct{ name, url string }{
						{"another region's AWS queue URL", "https://sqs.us-west-2.amazonaws.com/000000000000/q"},
						{"another region's legacy AWS queue URL", "https://eu-west-1.queue.amazonaws.com/000000000000/q"},
						{"another partition's AWS queue URL", "https://sqs.us-east-1.amazonaws.com.cn/000000000000/q"},
						{"another region's LocalStack queue URL", "http://sqs.eu-west-1.localhost.localstack.cloud:4566/000000000000/q"},
						{"another account's queue URL", "http://" + w.ownHost + "/111111111111/q"},
						{"another account's queue URL on AWS's host", "https://sqs.us-east-1.amazonaws.com/111111111111/q"},
						{"a queue URL with a path below the queue", ownAccount + "q/x"},
						{"a queue URL with a trailing slash", ownAccount + "q/"},
						{"an AWS queue URL with a trailing slash", "https://sqs.us-east-1.amazonaws.com/000000000000/q/"},
						{"a queue URL with a doubled slash", "http://" + w.ownHost + "//000000000000/q"},
						{"a queue URL with a slash in the middle doubled", "http://" + w.ownHost + "/000000000000//q"},
						{"a queue URL without a scheme", w.ownHost + "/000000000000/q"},
						{"a queue URL with a query", ownAccount + "q?Action=PurgeQueue"},
						{"a queue URL with a fragment", ownAccount + "q#q2"},
						{"a queue URL with an escaped name", ownAccount + "%71"},
						{"the queue's name in another case", "Q"},
					} {
						variants = append(variants, variant{"JSON with " + bad.name, "/", target, object(append(queueURL(w, bad.url), op.members(w)...))})
					}
				}
				if op.name == "StartMessageMoveTask" {
					for _, arn := range []string{strings.Replace(w.idleDLQ, "us-east-1", "us-west-2", 1), strings.Replace(w.idleDLQ, "000000000000", "111111111111", 1)} {
						variants = append(variants, variant{"JSON with SourceArn " + arn, "/", target, object([][2]string{{"SourceArn", jsonString(arn)}})})
					}
				}
				// The Query protocol.
				variants = append(variants,
					variant{"Query posted to another queue's URL", "/000000000000/q2", "", queryForm(w, w.q).Encode()},
					variant{"Query with the QueueUrl in the URL and another in the body", "/?QueueUrl=" + url.QueryEscape(w.q2), "", queryForm(w, w.q).Encode()},
				)
				if op.queue {
					twice := queryForm(w, w.q2)
					twice.Add("QueueUrl", w.q)
					variants = append(variants,
						variant{"Query with QueueUrl twice", "/", "", twice.Encode()},
						variant{"Query with another account's queue URL", "/", "", queryForm(w, "http://"+w.ownHost+"/111111111111/q").Encode()},
						variant{"Query with a queue URL with a query", "/", "", queryForm(w, ownAccount+"q?x=1").Encode()},
						variant{"Query with a queue URL with a trailing slash", "/", "", queryForm(w, ownAccount+"q/").Encode()},
						variant{"Query posted to the queue's URL with a trailing slash", "/000000000000/q/", "", queryForm(w, w.q).Encode()},
						variant{"Query without QueueUrl posted to a URL with a trailing slash", "/000000000000/q/", "", withoutQueueURL(w).Encode()},
						variant{"Query with another region's AWS queue URL", "/", "", queryForm(w, "https://sqs.eu-west-1.amazonaws.com/000000000000/q").Encode()},
					)
				} else {
					v := queryForm(w, "")
					for k, vs := range v {
						if k != "Action" {
							v[k] = append([]string{vs[0] + "x"}, vs...)
						}
					}
					variants = append(variants, variant{"Query with every parameter twice", "/", "", v.Encode()})
				}
				return variants
			}
			// Each on a world of its own, so that one that acts shows alone.
			for i := range variantsOf(newMisaddressWorld(t)) {
				w := newMisaddressWorld(t)
				v := variantsOf(w)[i]
				t.Run(v.name, func(t *testing.T) {
					before := w.h.sim.fingerprint()
					status, body := w.do(t, v.path, v.target, v.body)
					if status < 400 || status >= 500 {
						t.Errorf("status %d, want 4xx: %.300s", status, body)
					}
					if after := w.h.sim.fingerprint(); after != before {
						t.Fatalf("the request changed the simulator:\nbefore:\n%s\nafter:\n%s", before, after)
					}
				})
			}
		})
	}
}
