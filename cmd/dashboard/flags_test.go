package main

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env returns a lookupEnvFunc over vars.
func env(vars map[string]string) lookupEnvFunc {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

type testFlags struct {
	listen    string
	simListen string
	traffic   bool
	seed      int64
	every     time.Duration
	regions   []string
}

func newTestFlags(out io.Writer) (*envFlags, *testFlags) {
	var v testFlags
	f := newEnvFlags("test", "test [flags]", "A test command.", out)
	f.String(&v.listen, "listen", "127.0.0.1:8080", "`address` to listen on")
	f.String(&v.simListen, "sim-listen", "127.0.0.1:4566", "simulator `address`")
	f.Bool(&v.traffic, "traffic", false, "run traffic")
	f.Int64(&v.seed, "seed", 1, "`seed`")
	f.Duration(&v.every, "every", time.Minute, "`interval`")
	f.List(&v.regions, "region", []string{"us-east-1"}, "`region` to watch")
	return f, &v
}

func TestEnvFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want testFlags
	}{
		{
			name: "defaults",
			want: testFlags{listen: "127.0.0.1:8080", simListen: "127.0.0.1:4566", seed: 1, every: time.Minute, regions: []string{"us-east-1"}},
		},
		{
			name: "environment fills flags",
			env: map[string]string{"TOOLQ_LISTEN": ":9000", "TOOLQ_TRAFFIC": "true", "TOOLQ_SEED": "7",
				"TOOLQ_EVERY": "15s", "TOOLQ_REGION": "eu-west-1, ap-northeast-1,", "TOOLQ_SIM_LISTEN": ""},
			want: testFlags{listen: ":9000", simListen: "", traffic: true, seed: 7, every: 15 * time.Second,
				regions: []string{"eu-west-1", "ap-northeast-1"}},
		},
		{
			name: "command line wins over environment",
			args: []string{"--listen", "127.0.0.1:0", "--seed=9", "--region", "us-west-2", "--region", "eu-central-1,sa-east-1"},
			env:  map[string]string{"TOOLQ_LISTEN": ":9000", "TOOLQ_SEED": "7", "TOOLQ_REGION": "eu-west-1"},
			want: testFlags{listen: "127.0.0.1:0", simListen: "127.0.0.1:4566", seed: 9, every: time.Minute,
				regions: []string{"us-west-2", "eu-central-1", "sa-east-1"}},
		},
		{
			name: "empty string turns a listener off",
			args: []string{"--sim-listen", ""},
			env:  map[string]string{"TOOLQ_SIM_LISTEN": "127.0.0.1:1"},
			want: testFlags{listen: "127.0.0.1:8080", simListen: "", seed: 1, every: time.Minute, regions: []string{"us-east-1"}},
		},
		{
			name: "empty list variable empties the list",
			env:  map[string]string{"TOOLQ_REGION": ""},
			want: testFlags{listen: "127.0.0.1:8080", simListen: "127.0.0.1:4566", seed: 1, every: time.Minute, regions: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, got := newTestFlags(io.Discard)
			if err := f.Parse(tt.args, env(tt.env)); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestEnvFlagsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantHelp bool
		wantText string
	}{
		{name: "bad variable names it", env: map[string]string{"TOOLQ_SEED": "seven"}, wantText: `TOOLQ_SEED="seven"`},
		{name: "bad flag", args: []string{"--seed", "x"}, wantText: "invalid value"},
		{name: "unknown flag", args: []string{"--nope"}, wantText: "not defined"},
		{name: "positional argument", args: []string{"extra"}, wantText: `unexpected argument "extra"`},
		{name: "help", args: []string{"--help"}, wantHelp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFlags(io.Discard)
			err := f.Parse(tt.args, env(tt.env))
			if tt.wantHelp {
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err = %v, want flag.ErrHelp", err)
				}
				return
			}
			if _, ok := errors.AsType[*usageError](err); !ok {
				t.Fatalf("err = %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantText)
			}
		})
	}
}

func TestEnvFlagsHelpNamesVariables(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	f, _ := newTestFlags(&out)
	if err := f.Parse([]string{"-h"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{
		"Usage: dashboard test [flags]", "A test command.",
		"--listen ADDRESS", "env TOOLQ_LISTEN, default 127.0.0.1:8080",
		"--sim-listen ADDRESS", "env TOOLQ_SIM_LISTEN",
		"--traffic\n", "env TOOLQ_TRAFFIC\n",
		"--region REGION,...", "env TOOLQ_REGION, default us-east-1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
