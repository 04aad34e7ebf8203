package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/notify"
)

// TestServeAlertingConfig: a PagerDuty routing key comes from a file or the environment and is
// checked for PagerDuty's shape, a Teams URL must be https, a --trace-url must say where the
// trace id goes; otherwise serve refuses to start (exit 2) with an error that says why and never
// quotes the key.
func TestServeAlertingConfig(t *testing.T) {
	t.Parallel()
	const key = "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "pagerduty")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad")
	if err := os.WriteFile(badFile, []byte("not-a-key-but-a-secret-anyway"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "pagerduty key from the environment", args: []string{"--notify", "pagerduty:#routing-key-env=PD_KEY"}, env: map[string]string{"PD_KEY": key}},
		{name: "pagerduty key from a file, EU service", args: []string{"--notify", "pagerduty:https://events.eu.pagerduty.com/v2/enqueue#routing-key-file=" + keyFile}},
		{name: "teams over https", args: []string{"--notify", "teams:https://prod-01.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=s"}},
		{name: "a trace URL", args: []string{"--trace-url", "https://grafana.example/explore?traceId={traceId}"}},
		{name: "a key of the wrong shape", args: []string{"--notify", "pagerduty:#routing-key-env=PD_KEY"}, env: map[string]string{"PD_KEY": "hunter2-short"},
			wantErr: "--notify: notify: pagerduty target: the routing key in $PD_KEY is not one (13 characters)"},
		{name: "a key file of the wrong shape", args: []string{"--notify", "pagerduty:#routing-key-file=" + badFile}, wantErr: "is not one (29 characters)"},
		{name: "a key variable not set", args: []string{"--notify", "pagerduty:#routing-key-env=PD_KEY"}, wantErr: "PD_KEY (routing-key-env) is not set"},
		{name: "no key", args: []string{"--notify", "pagerduty:"}, wantErr: "routing-key-file=PATH or routing-key-env=NAME"},
		{name: "a key file missing", args: []string{"--notify", "pagerduty:#routing-key-file=" + filepath.Join(dir, "none")}, wantErr: "read the routing key"},
		{name: "teams over http", args: []string{"--notify", "teams:http://prod-01.westeurope.logic.azure.com/workflows/abc"}, wantErr: "refusing to post to http"},
		{name: "a trace URL without the id", args: []string{"--trace-url", "https://grafana.example/explore?traceId="}, wantErr: "--trace-url: tracelink: the trace URL must contain {traceId}"},
		{name: "a trace URL that is no URL", args: []string{"--trace-url", "javascript:alert({traceId})"}, wantErr: "must be http(s)://host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(tt.env)}, tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tt.args, "--trace-url") && !cfg.dashboard.TraceURL.Enabled() {
					t.Error("the trace URL did not reach the dashboard")
				}
				if want := slices.Contains(tt.args, "--notify"); (len(cfg.dashboard.Notify.Targets) == 1) != want {
					t.Errorf("targets %+v", cfg.dashboard.Notify.Targets)
				}
				for _, tg := range cfg.dashboard.Notify.Targets {
					if tg.Kind == notify.PagerDuty && tg.RoutingKey != key {
						t.Errorf("the routing key read: %q", tg.RoutingKey)
					}
				}
				return
			}
			var out bytes.Buffer
			if code := exitCode(err, &out); code != 2 || !strings.Contains(out.String(), tt.wantErr) {
				t.Errorf("exit %d, %q; want 2 and an error saying %q", code, out.String(), tt.wantErr)
			}
			for _, secret := range []string{"hunter2", "not-a-key"} {
				if strings.Contains(out.String(), secret) {
					t.Errorf("the error quotes the key: %s", out.String())
				}
			}
		})
	}
}
