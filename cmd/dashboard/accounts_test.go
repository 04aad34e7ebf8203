package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

func TestAccountFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, "accounts"+string(rune('a'+len(body)%26))+".json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const prodRole = "arn:aws:iam::111111111111:role/toolq-reader"
	tests := []struct {
		name    string
		args    []string
		envs    map[string]string
		want    []accountConfig
		wantErr string // "": no error
	}{
		{"none", nil, nil, nil, ""},
		{"a role with an external id, and the ambient account", []string{"--account", "prod=" + prodRole + ",external-id=ext-1", "--account", "home"}, nil,
			[]accountConfig{{Name: "prod", RoleARN: prodRole, ExternalID: "ext-1", accountID: "111111111111"}, {Name: "home"}}, ""},
		{"from the environment", nil, map[string]string{"TOOLQ_ACCOUNT": "prod=" + prodRole + ",staging=arn:aws:iam::222222222222:role/r"},
			[]accountConfig{{Name: "prod", RoleARN: prodRole, accountID: "111111111111"}, {Name: "staging", RoleARN: "arn:aws:iam::222222222222:role/r", accountID: "222222222222"}}, ""},
		{"a file", []string{"--accounts-file", file(`[{"name":"prod","roleArn":"` + prodRole + `","externalId":"x","regions":["eu-west-1","us-east-1"]}]`)}, nil,
			[]accountConfig{{Name: "prod", RoleARN: prodRole, ExternalID: "x", Regions: []string{"eu-west-1", "us-east-1"}, accountID: "111111111111"}}, ""},
		{"a bad ARN", []string{"--account", "prod=arn:aws:iam::1111:role/x"}, nil, nil, "not an IAM role ARN"},
		{"a user, not a role", []string{"--account", "prod=arn:aws:iam::111111111111:user/alice"}, nil, nil, "not an IAM role ARN"},
		{"a name twice", []string{"--account", "prod=" + prodRole, "--account", "prod=arn:aws:iam::222222222222:role/r"}, nil, nil, `"prod" is given twice`},
		{"a role twice", []string{"--account", "a=" + prodRole, "--account", "b=" + prodRole}, nil, nil, "assume the same role"},
		{"an empty name", []string{"--account", "=" + prodRole}, nil, nil, "a name is"},
		{"a name with a slash", []string{"--account", "a/b=" + prodRole}, nil, nil, "a name is"},
		{"an external id alone", []string{"--account", "external-id=x"}, nil, nil, "must follow NAME=ROLE_ARN"},
		{"the ambient account twice", []string{"--account", "a", "--account", "b"}, nil, nil, "both name the ambient"},
		{"a file with an unknown field", []string{"--accounts-file", file(`[{"name":"prod","role":"x"}]`)}, nil, nil, "unknown field"},
		{"a file with a bad region", []string{"--accounts-file", file(`[{"name":"prod","regions":["mars"]}]`)}, nil, nil, "not a region"},
		{"a missing file", []string{"--accounts-file", filepath.Join(dir, "nope.json")}, nil, nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(tt.envs)}, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseServe error = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseServe: %v", err)
			}
			if !slices.EqualFunc(cfg.accounts, tt.want, func(a, b accountConfig) bool {
				return a.Name == b.Name && a.RoleARN == b.RoleARN && a.ExternalID == b.ExternalID &&
					a.accountID == b.accountID && slices.Equal(a.Regions, b.Regions)
			}) {
				t.Errorf("accounts = %+v, want %+v", cfg.accounts, tt.want)
			}
		})
	}
}

// TestServeWatchesTwoAccounts runs `dashboard serve --account …` against two simulated
// accounts, the second through an assumed role with an external id: the queues of both are
// stored under their account, a same-named queue once per account.
func TestServeWatchesTwoAccounts(t *testing.T) {
	t.Parallel()
	home := sqsim.New(sqsim.Options{Seed: 3})
	prod := sqsim.New(sqsim.Options{Seed: 4, AccountID: "111111111111"})
	accounts := sqsim.NewAccounts(home, prod)
	const role = "arn:aws:iam::111111111111:role/toolq-reader"
	if err := accounts.AddRole(role, "ext-1"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(accounts)
	defer ts.Close()
	srv := ts.URL
	opts := awsconf.Options{Region: "us-east-1", EndpointURL: srv, StaticCredentials: true}
	homeClients, err := awsconf.Load(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	prodClients, err := awsconf.LoadAssumed(t.Context(), opts, role, "ext-1")
	if err != nil {
		t.Fatal(err)
	}
	for client, names := range map[*sqs.Client][]string{homeClients.SQS: {"tool-calls", "home-only"}, prodClients.SQS: {"tool-calls", "prod-only"}} {
		for _, name := range names {
			if _, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	db := filepath.Join(t.TempDir(), "toolq.db")
	_, stop := startServe(t, []string{"--endpoint-url", srv, "--region", "us-east-1", "--db", db, "--listen", "127.0.0.1:0",
		"--log-level", "warn", "--account", "home", "--account", "prod=" + role + ",external-id=ext-1"})
	defer stop()
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	waitForServe(t, "the queues of both accounts", func() bool {
		queues, err := st.ListQueues(t.Context(), store.QueueFilter{})
		if err != nil {
			return false
		}
		got = got[:0]
		for _, q := range queues {
			got = append(got, q.Account+":"+q.AccountID+":"+q.Name)
		}
		slices.Sort(got)
		return len(got) == 4
	})
	want := []string{"home:000000000000:home-only", "home:000000000000:tool-calls", "prod:111111111111:prod-only", "prod:111111111111:tool-calls"}
	if !slices.Equal(got, want) {
		t.Errorf("stored queues = %v, want %v", got, want)
	}
	if err := stop(); err != nil {
		t.Fatalf("runServe: %v", err)
	}
}
