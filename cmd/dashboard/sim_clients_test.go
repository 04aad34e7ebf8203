package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startSim runs `dashboard sim` with flags on a free loopback port, as a user starts it, and
// returns its endpoint; it stops when the test ends.
func startSim(t *testing.T, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := &endpointWriter{endpoint: make(chan string, 1)}
	done := make(chan error, 1)
	args := append([]string{"sim", "--listen", "127.0.0.1:0"}, flags...)
	go func() {
		done <- run(ctx, args, &environment{stdout: logs, stderr: logs, lookupEnv: env(nil)})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim: %v", err)
		}
	})
	select {
	case endpoint := <-logs.endpoint:
		return endpoint
	case err := <-done:
		t.Fatalf("sim ended before listening: %v\n%s", err, logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("sim not listening within 20s:\n%s", logs)
	}
	return ""
}

// awsCLIs returns the aws CLIs on this machine, one per installation: pip's aws CLI 1.45
// (botocore 1.43, AWS JSON 1.0) and Debian's awscli 2.9 (the Query protocol) where present.
func awsCLIs(t *testing.T) []string {
	t.Helper()
	var found []string
	seen := map[string]bool{}
	for _, c := range []string{"aws", "/usr/bin/aws"} {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		found = append(found, path)
	}
	if len(found) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and the aws CLI is not installed (.ci/run installs it)")
		}
		t.Skip("the aws CLI is not installed; skipping (.ci/run installs it)")
	}
	return found
}

// TestSimWithAWSCLI runs a few aws CLI calls against `dashboard sim`: SQS and CloudWatch
// both answer in the protocol the CLI speaks, errors included.
func TestSimWithAWSCLI(t *testing.T) {
	t.Parallel()
	endpoint := startSim(t)
	var cliEnv []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cliEnv = append(cliEnv, kv)
		}
	}
	cliEnv = append(cliEnv, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER=", "AWS_EC2_METADATA_DISABLED=true")
	for i, cli := range awsCLIs(t) {
		t.Run(filepath.Base(filepath.Dir(cli))+"-"+filepath.Base(cli), func(t *testing.T) {
			t.Parallel() // each CLI on its own queues
			q := "cli" + string(rune('a'+i))
			steps := []struct {
				args    []string
				wantErr bool
				want    string // in stdout, or stderr for an error
				wantRE  string // a pattern stdout must match, where the answer depends on timing
			}{
				{args: []string{"sqs", "create-queue", "--queue-name", q + "-dlq"}, want: "/000000000000/" + q + "-dlq"},
				{args: []string{"sqs", "create-queue", "--queue-name", q, "--attributes",
					`{"RedrivePolicy":"{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:` + q + `-dlq\",\"maxReceiveCount\":3}"}`}, want: "/000000000000/" + q},
				{args: []string{"sqs", "send-message", "--queue-url", endpoint + "/000000000000/" + q, "--message-body", `{"toolCallId":"tc_1","toolName":"web_search"}`,
					"--message-attributes", `{"toolName":{"DataType":"String","StringValue":"web_search"}}`}, want: `"MD5OfMessageBody"`},
				{args: []string{"sqs", "receive-message", "--queue-url", endpoint + "/000000000000/" + q, "--attribute-names", "All", "--message-attribute-names", "All"},
					want: `"ApproximateReceiveCount": "1"`},
				{args: []string{"sqs", "get-queue-attributes", "--queue-url", endpoint + "/000000000000/" + q, "--attribute-names", "All"},
					want: `"ApproximateNumberOfMessagesNotVisible": "1"`},
				{args: []string{"sqs", "get-queue-url", "--queue-name", q + "-missing"}, wantErr: true, want: "NonExistentQueue"},
				{args: []string{"cloudwatch", "put-metric-alarm", "--alarm-name", q + "-dlq-depth", "--namespace", "AWS/SQS",
					"--metric-name", "ApproximateNumberOfMessagesVisible", "--dimensions", "Name=QueueName,Value=" + q + "-dlq",
					"--statistic", "Maximum", "--period", "60", "--evaluation-periods", "1", "--threshold", "1",
					"--comparison-operator", "GreaterThanOrEqualToThreshold"}},
				// A new alarm is INSUFFICIENT_DATA until its first evaluation, which the simulator runs at
				// each whole minute (as AWS does), so a put just before one is described as OK.
				{args: []string{"cloudwatch", "describe-alarms", "--alarm-names", q + "-dlq-depth"},
					want: `"AlarmName": "` + q + `-dlq-depth"`, wantRE: `"StateValue": "(INSUFFICIENT_DATA|OK)"`},
				{args: []string{"cloudwatch", "get-metric-statistics", "--namespace", "AWS/SQS", "--metric-name", "NumberOfMessagesSent",
					"--dimensions", "Name=QueueName,Value=" + q, "--statistics", "Sum", "--period", "60",
					"--start-time", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "--end-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
					want: `"Sum": 1`},
				{args: []string{"cloudwatch", "delete-alarms", "--alarm-names", q + "-missing"}, wantErr: true, want: "ResourceNotFound"},
				// The CLI's smoke test, and what tools that call it first go on to do.
				{args: []string{"sts", "get-caller-identity"}, want: `"Account": "000000000000"`},
				{args: []string{"sqs", "send-message", "--queue-url", q, "--message-body", "by name"}, want: `"MD5OfMessageBody"`},
				{args: []string{"sqs", "create-queue", "--queue-name", q, "--region", "eu-west-1"}, want: "/000000000000/" + q},
				{args: []string{"sqs", "get-queue-attributes", "--queue-url", q, "--attribute-names", "QueueArn", "ApproximateNumberOfMessages", "--region", "eu-west-1"},
					want: `"QueueArn": "arn:aws:sqs:eu-west-1:000000000000:` + q + `"`},
				{args: []string{"cloudwatch", "put-metric-data", "--namespace", "mcp/" + q, "--metric-name", "latency", "--value", "12", "--unit", "Milliseconds", "--storage-resolution", "1"}},
				{args: []string{"cloudwatch", "get-metric-statistics", "--namespace", "mcp/" + q, "--metric-name", "latency", "--statistics", "Maximum", "--period", "60",
					"--start-time", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "--end-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
					want: `"Maximum": 12`},
				{args: []string{"lambda", "list-functions"}, want: `"Functions": []`},
			}
			for _, s := range steps {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				cmd := exec.CommandContext(ctx, cli, append([]string{"--endpoint-url", endpoint, "--output", "json"}, s.args...)...)
				cmd.Env = cliEnv
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				cancel()
				name := strings.Join(s.args[:2], " ")
				if (err != nil) != s.wantErr {
					t.Errorf("%s: err %v, want error %v\nstdout: %s\nstderr: %s", name, err, s.wantErr, stdout.String(), stderr.String())
					continue
				}
				got := stdout.String()
				if s.wantErr {
					got = stderr.String()
				}
				if !strings.Contains(got, s.want) {
					t.Errorf("%s: output lacks %q:\n%s", name, s.want, got)
				}
				if s.wantRE != "" && !regexp.MustCompile(s.wantRE).MatchString(got) {
					t.Errorf("%s: output does not match %q:\n%s", name, s.wantRE, got)
				}
			}
		})
	}
}
