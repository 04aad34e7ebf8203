package arn

import (
	"errors"
	"testing"
)

func TestParseQueue(t *testing.T) {
	tests := []struct {
		in   string
		want Queue
		ok   bool
	}{
		{"arn:aws:sqs:us-east-1:123456789012:tool-calls", Queue{"aws", "us-east-1", "123456789012", "tool-calls"}, true},
		{"arn:aws-cn:sqs:cn-north-1:123456789012:calls.fifo", Queue{"aws-cn", "cn-north-1", "123456789012", "calls.fifo"}, true},
		{"arn:aws:sqs:us-east-1:000000000000:a_b-c", Queue{"aws", "us-east-1", "000000000000", "a_b-c"}, true},
		{"arn:aws:sns:us-east-1:123456789012:topic", Queue{}, false},
		{"arn:aws:sqs:us-east-1:12345:short-account", Queue{}, false},
		{"arn:aws:sqs:us-east-1:123456789012:", Queue{}, false},
		{"arn:aws:sqs:us-east-1:123456789012:a/b", Queue{}, false},
		{"arn:aws:sqs:us-east-1:123456789012:a.fifo.fifo", Queue{}, false},
		{"tool-calls", Queue{}, false},
		{"", Queue{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseQueue(tt.in)
			if tt.ok != (err == nil) || got != tt.want {
				t.Fatalf("ParseQueue(%q) = %+v, %v", tt.in, got, err)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if tt.ok && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestRefs(t *testing.T) {
	for ref, want := range map[string]bool{
		"tool-calls": true, "calls.fifo": true, "arn:aws:sqs:eu-west-1:123456789012:x": true,
		"arn:nope": false, "../etc": false, "a b": false, "": false,
	} {
		if got := ValidQueueRef(ref); got != want {
			t.Errorf("ValidQueueRef(%q) = %v, want %v", ref, got, want)
		}
	}
	if got := QueueName("arn:aws:sqs:us-east-1:123456789012:web-search-dlq"); got != "web-search-dlq" {
		t.Errorf("QueueName = %q", got)
	}
	if got := QueueName("plain"); got != "plain" {
		t.Errorf("QueueName(plain) = %q", got)
	}
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		in            string
		account, name string
		ok            bool
	}{
		{"arn:aws:iam::111111111111:role/toolq-reader", "111111111111", "toolq-reader", true},
		{"arn:aws-cn:iam::111111111111:role/ops/toolq", "111111111111", "ops/toolq", true},
		{"arn:aws:iam::11111111111:role/short-account", "", "", false},
		{"arn:aws:iam::111111111111:user/alice", "", "", false},
		{"arn:aws:sqs:us-east-1:111111111111:q", "", "", false},
		{"arn:aws:iam::111111111111:role/", "", "", false},
		{"toolq-reader", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRole(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseRole(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if tt.ok && (r.Account != tt.account || r.Name != tt.name) {
				t.Errorf("ParseRole(%q) = %+v", tt.in, r)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidRole) {
				t.Errorf("error %v is not ErrInvalidRole", err)
			}
		})
	}
}
