package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// demo is a running `dashboard demo` subprocess.
type demo struct {
	// URL is the dashboard's base URL, http://127.0.0.1:PORT.
	URL string
	// SimURL is the simulator's public endpoint, where the tests change the demo's queues.
	SimURL string
	// SQS is a stock SQS client for the simulator.
	SQS *sqs.Client

	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has ended; exitErr is then set
	exitErr error
}

// startDemo runs `dashboard demo` with its files in dir, on free loopback ports, with the
// extra flags, and waits until its /readyz answers 200 and its simulator answers.
func startDemo(binary, dir string, extra ...string) (*demo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dashAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	simAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	d := &demo{
		URL:     "http://" + dashAddr,
		SimURL:  "http://" + simAddr,
		logPath: filepath.Join(dir, "demo.log"),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"demo",
		"--listen", dashAddr,
		"--sim-listen", simAddr,
		"--seed", "7",
		"--db", filepath.Join(dir, "toolq.db"),
		"--log-level", "info",
	}, extra...)
	d.cmd = exec.Command(binary, args...)
	d.cmd.Env = demoEnv()
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		logFile.Close()
		close(d.exited)
	}()
	d.SQS = sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(d.SimURL),
	})

	// A race-enabled build on two busy cores takes a while to open the store and run the first
	// collector cycle, which /readyz waits for.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := d.waitReady(ctx); err != nil {
		_ = d.stop(10 * time.Second)
		return nil, fmt.Errorf("%w\ndemo log:\n%s", err, d.logTail(30))
	}
	return d, nil
}

// demoEnv is this process's environment without the TOOLQ_ variables, which the demo would
// read as flags: a developer's settings must not change what the tests run.
func demoEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TOOLQ_") })
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (d *demo) waitReady(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		last = d.ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("%w before it was ready: %v", errDemoExited, d.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("demo not ready: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// ready checks /readyz and the simulator's public endpoint, which the demo skips with a mere
// warning when its port is taken.
func (d *demo) ready(ctx context.Context) error {
	status, _, err := httpGet(ctx, d.URL+"/readyz")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("/readyz: status %d", status)
	}
	if _, err := d.SQS.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	return nil
}

// stop sends SIGTERM and waits for a clean exit: status 0 within timeout, and no panic or race
// report in the log.
func (d *demo) stop(timeout time.Duration) error {
	select {
	case <-d.exited:
		return fmt.Errorf("%w before it was stopped: %v\ndemo log:\n%s", errDemoExited, d.exitErr, d.logTail(30))
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal the demo: %w", err)
	}
	select {
	case <-d.exited:
	case <-time.After(timeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("the demo did not exit within %s of SIGTERM\ndemo log:\n%s", timeout, d.logTail(30))
	}
	if d.exitErr != nil {
		return fmt.Errorf("the demo exited with %v after SIGTERM\ndemo log:\n%s", d.exitErr, d.logTail(60))
	}
	log, err := os.ReadFile(d.logPath)
	if err != nil {
		return err
	}
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "panic in handler", "cycle panicked"} {
		if bytes.Contains(log, []byte(bad)) {
			return fmt.Errorf("the demo's log reports %q\ndemo log:\n%s", bad, d.logTail(80))
		}
	}
	return nil
}

// logTail returns the last n lines the demo logged.
func (d *demo) logTail(n int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logLines returns the lines of the demo's log that contain s.
func (d *demo) logLines(s string) []string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, s) {
			lines = append(lines, strings.TrimRight(line, "\n"))
		}
	}
	return lines
}

// page returns the URL of a dashboard path.
func (d *demo) page(path string) string { return d.URL + path }

// queueURL returns the simulator's URL of a demo queue.
func (d *demo) queueURL(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := d.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetQueueUrl %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// send puts messages on a demo queue, ten to a batch, and returns their message ids.
func (d *demo) send(t *testing.T, queue string, entries ...types.SendMessageBatchRequestEntry) []string {
	t.Helper()
	url := d.queueURL(t, queue)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for batch := range slices.Chunk(entries, 10) {
		for i := range batch {
			if batch[i].Id == nil {
				batch[i].Id = aws.String(strconv.Itoa(i))
			}
		}
		out, err := d.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: batch})
		if err != nil {
			t.Fatalf("SendMessageBatch to %s: %v", queue, err)
		}
		for _, f := range out.Failed {
			t.Fatalf("SendMessageBatch to %s: entry %s failed: %s %s", queue, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		for _, ok := range out.Successful {
			ids = append(ids, aws.ToString(ok.MessageId))
		}
	}
	return ids
}

// toolCalls returns n tool-call messages as an MCP server would send them; FIFO queues get a
// group (the session) and a deduplication id (the tool-call id).
func toolCalls(prefix, tool string, n int, fifo bool) []types.SendMessageBatchRequestEntry {
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for i := range entries {
		callID := fmt.Sprintf("tc_%s_%03d", prefix, i)
		body, _ := json.Marshal(map[string]any{
			"toolCallId":     callID,
			"toolName":       tool,
			"toolArgs":       map[string]any{"q": "e2e " + prefix},
			"sessionId":      "sess_" + prefix,
			"sequenceNumber": i,
			"sentAt":         time.Now().UnixMilli(),
		})
		entries[i] = types.SendMessageBatchRequestEntry{MessageBody: aws.String(string(body))}
		if fifo {
			entries[i].MessageGroupId = aws.String("sess_" + prefix)
			entries[i].MessageDeduplicationId = aws.String(callID)
		}
	}
	return entries
}

// httpGet fetches url and returns its status and body.
func httpGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := apiClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// eventually calls check every 200 ms until it reports done, failing the test with what and
// check's last word when timeout passes first. It is how every test waits: never a fixed sleep.
// check bounds its own calls (a browser call needs the tab's context, not a new one).
func eventually(t *testing.T, timeout time.Duration, what string, check func() (done bool, detail string, err error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		done, detail, err := check()
		if done && err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				detail = fmt.Sprintf("%s (error: %v)", detail, err)
			}
			t.Fatalf("%s: not within %s; last seen: %s", what, timeout, detail)
		}
		<-tick.C
	}
}

// logMoveTasks logs a DLQ's move tasks as SQS (the simulator) reports them: on a test's failure,
// a task the page still shows running may have ended there (the page missed the push) or not.
func (d *demo) logMoveTasks(t *testing.T, dlq string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	attrs, err := d.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(d.queueURL(t, dlq)),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Logf("%s: %v", dlq, err)
		return
	}
	out, err := d.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(attrs.Attributes["QueueArn"])})
	if err != nil {
		t.Logf("move tasks of %s: %v", dlq, err)
		return
	}
	for _, task := range out.Results {
		t.Logf("%s's move task, as SQS reports it: %s, %d of %d moved, started %s", dlq, aws.ToString(task.Status),
			task.ApproximateNumberOfMessagesMoved, aws.ToInt64(task.ApproximateNumberOfMessagesToMove),
			time.UnixMilli(task.StartedTimestamp).UTC().Format(time.TimeOnly))
	}
}

// logDepths logs the depths SQS (the simulator) gives for the queues: on a test's failure, where
// a message was (visible, in flight, delayed) says more than the page did.
func (d *demo) logDepths(t *testing.T, queues ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range queues {
		out, err := d.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		attrs, err := d.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
				types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		t.Logf("%s now: %s visible, %s in flight, %s delayed", name, attrs.Attributes["ApproximateNumberOfMessages"],
			attrs.Attributes["ApproximateNumberOfMessagesNotVisible"], attrs.Attributes["ApproximateNumberOfMessagesDelayed"])
	}
}
