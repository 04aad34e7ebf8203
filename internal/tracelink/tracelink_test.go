package tracelink

import (
	"errors"
	"strings"
	"testing"
)

func TestParseTraceparent(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, in string
		want     string // the trace id; "" for malformed
	}{
		{"version 00", ok, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"a later version with more fields", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"version 00 with more fields", ok + "-x", ""},
		{"a later version glued on", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", ""},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"uppercase", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		{"trace id all zeros", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"parent id all zeros", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		{"short trace id", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", ""},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", ""},
		{"wrong separators", "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", ""},
		{"a link in it", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"><a href=x>", ""},
		{"spaces", " " + ok, ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ParseTraceparent(tt.in)
			if tt.want == "" {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ParseTraceparent(%q) = %+v, %v; want ErrMalformed", tt.in, tr, err)
				}
				return
			}
			if err != nil || tr.ID != tt.want || tr.Header != Traceparent {
				t.Fatalf("ParseTraceparent(%q) = %+v, %v; want id %s", tt.in, tr, err, tt.want)
			}
		})
	}
}

func TestParseAWSTraceHeader(t *testing.T) {
	const root = "1-5759e988-bd862e3fe1be46a994272793"
	tests := []struct {
		name, in string
		want     string
	}{
		{"root, parent, sampled", "Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=1", root},
		{"root alone", "Root=" + root, root},
		{"spaces after the separators", "Root=" + root + "; Parent=53995c3f42cd8ad8; Sampled=0", root},
		{"parent first", "Parent=53995c3f42cd8ad8;Root=" + root, root},
		{"lineage", "Root=" + root + ";Lineage=a87bd80c:0", root},
		{"no root", "Parent=53995c3f42cd8ad8;Sampled=1", ""},
		{"two roots", "Root=" + root + ";Root=" + root, ""},
		{"version 2", "Root=2-5759e988-bd862e3fe1be46a994272793", ""},
		{"short id", "Root=1-5759e988-bd862e3fe1be46a99427279", ""},
		{"uppercase", "Root=1-5759E988-BD862E3FE1BE46A994272793", ""},
		{"random part all zeros", "Root=1-5759e988-000000000000000000000000", ""},
		{"an unknown field", "Root=" + root + ";Evil=<script>", ""},
		{"a field without a value", "Root=" + root + ";", ""},
		{"a traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ParseAWSTraceHeader(tt.in)
			if tt.want == "" {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ParseAWSTraceHeader(%q) = %+v, %v; want ErrMalformed", tt.in, tr, err)
				}
				return
			}
			if err != nil || tr.ID != tt.want || tr.Header != AWSTraceHeader {
				t.Fatalf("ParseAWSTraceHeader(%q) = %+v, %v; want id %s", tt.in, tr, err, tt.want)
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	tests := []struct {
		name, template string
		wantErr        string
		trace          Trace
		want           string
	}{
		{name: "grafana", template: "https://grafana.example/explore?traceId={traceId}",
			trace: Trace{Header: Traceparent, ID: "4bf92f3577b34da6a3ce929d0e0e4736"},
			want:  "https://grafana.example/explore?traceId=4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "x-ray console", template: "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#xray:traces/{traceId}",
			trace: Trace{Header: AWSTraceHeader, ID: "1-5759e988-bd862e3fe1be46a994272793"},
			want:  "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#xray:traces/1-5759e988-bd862e3fe1be46a994272793"},
		{name: "twice", template: "http://jaeger:16686/trace/{traceId}?q={traceId}",
			trace: Trace{ID: "ab"}, want: "http://jaeger:16686/trace/ab?q=ab"},
		{name: "no id, no link", template: "https://t.example/{traceId}", trace: Trace{}, want: ""},
		{name: "off", template: "", trace: Trace{ID: "ab"}, want: ""},
		{name: "no placeholder", template: "https://grafana.example/explore?traceId=", wantErr: "must contain {traceId}"},
		{name: "misspelt placeholder", template: "https://grafana.example/explore?traceId={traceID}", wantErr: "must contain {traceId}"},
		{name: "not http", template: "javascript:alert({traceId})", wantErr: "http(s)://host"},
		{name: "no host", template: "https:///{traceId}", wantErr: "http(s)://host"},
		{name: "credentials", template: "https://u:p@t.example/{traceId}", wantErr: "http(s)://host"},
		{name: "a quote", template: "https://t.example/{traceId}\"onclick=x", wantErr: "http(s)://host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(tt.template)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTemplate(%q) = %v; want an error with %q", tt.template, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tmpl.Link(tt.trace); got != tt.want {
				t.Fatalf("Link = %q; want %q", got, tt.want)
			}
		})
	}
}
