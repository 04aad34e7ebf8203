package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/toolq/toolq/internal/app"
	"github.com/toolq/toolq/internal/awsconf"
)

// serveConfig is the configuration of `dashboard serve`.
type serveConfig struct {
	dashboard          app.Config
	regions            []string
	profile            string
	endpointURL        string
	cloudWatchEndpoint string
	staticCredentials  bool
	queuePrefixes      []string
	queues             []string
	// accounts are the AWS accounts watched (--account, --accounts-file); none: the ambient
	// credentials' one account, as before accounts existed.
	accounts []accountConfig
	// ready, when set, is called once the dashboard's listener is bound, with its address
	// (tests listen on port 0).
	ready func(addr string)
}

func runServeCommand(ctx context.Context, env *environment, args []string) error {
	cfg, log, err := parseServe(env, args)
	if err != nil {
		return err
	}
	return runServe(ctx, cfg, log)
}

// parseServe reads serve's flags and environment into its configuration and logger.
func parseServe(env *environment, args []string) (serveConfig, *slog.Logger, error) {
	var cfg serveConfig
	var accountFlags []string
	var accountsFile string
	var dash dashboardFlags
	var lf logFlags
	fl := newEnvFlags("serve", "serve [flags]",
		"Runs the collector and the dashboard against real AWS, with the SDK's default credential chain\n"+
			"(environment, shared profiles, SSO, web identity, container and instance roles), or against\n"+
			"any SQS-compatible endpoint (--endpoint-url), such as `dashboard sim`.",
		env.stderr)
	dash.register(fl, serveDefaults)
	fl.List(&cfg.regions, "region", nil, "AWS `region` to watch (repeatable); default the region of the credential chain (AWS_REGION, the profile)")
	fl.String(&cfg.profile, "profile", "", "shared-config `profile`; default AWS_PROFILE or 'default'")
	fl.String(&cfg.endpointURL, "endpoint-url", "", "`URL` of an SQS-compatible endpoint, used for CloudWatch too (the simulator serves both)")
	fl.String(&cfg.cloudWatchEndpoint, "cloudwatch-endpoint-url", "", "`URL` of CloudWatch when it differs from --endpoint-url")
	fl.Bool(&cfg.staticCredentials, "static-credentials", false, "use dummy credentials (for the simulator or an emulator); implied with --endpoint-url when no credentials are configured")
	fl.List(&cfg.queuePrefixes, "queue-prefix", nil, "watch the queues whose name starts with `prefix` (repeatable); default every queue")
	fl.List(&cfg.queues, "queue", nil, "watch this queue, by `name or URL` (repeatable)")
	fl.List(&accountFlags, "account", nil, "watch the AWS account `NAME=ROLE_ARN[,external-id=ID]` through the role (repeatable); NAME alone: the ambient credentials' account under that name")
	fl.String(&accountsFile, "accounts-file", "", "watch the accounts of a JSON `file`: [{\"name\":\"prod\",\"roleArn\":\"arn:aws:iam::…:role/…\",\"externalId\":\"…\",\"regions\":[\"us-east-1\"]}]")
	lf.register(fl)
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return cfg, nil, err
	}
	accounts, err := parseAccountFlags(accountFlags)
	if err != nil {
		return cfg, nil, &usageError{err: err}
	}
	if accountsFile != "" {
		fromFile, err := readAccountsFile(accountsFile)
		if err != nil {
			return cfg, nil, &usageError{err: err}
		}
		accounts = append(accounts, fromFile...)
	}
	if cfg.accounts, err = checkAccounts(accounts); err != nil {
		return cfg, nil, &usageError{err: err}
	}
	log, err := lf.logger(env.stderr)
	if err != nil {
		return cfg, nil, err
	}
	version, commit := buildVersion()
	if cfg.dashboard, err = dash.config(env.lookupEnv, version, commit); err != nil {
		return cfg, nil, err
	}
	if cfg.endpointURL != "" && !cfg.staticCredentials && !credentialsConfigured(env.lookupEnv) {
		log.Info("no AWS credentials configured; using dummy credentials for the endpoint", "endpoint", cfg.endpointURL)
		cfg.staticCredentials = true
	}
	return cfg, log, nil
}

// runServe builds the clients of every region and runs the dashboard until ctx ends.
func runServe(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	regions := cfg.regions
	if len(regions) == 0 {
		regions = []string{""} // the credential chain's region
	}
	dcfg := cfg.dashboard
	accounts := cfg.accounts
	if len(accounts) == 0 {
		accounts = []accountConfig{{}} // the ambient credentials' account, unnamed
	}
	for _, a := range accounts {
		names := regions
		if len(a.Regions) > 0 {
			names = a.Regions
		}
		for _, name := range names {
			r, err := loadRegion(ctx, cfg, a, name)
			if err != nil {
				return err
			}
			dcfg.Regions = append(dcfg.Regions, r)
		}
	}
	dcfg.Collector.QueuePrefixes = cfg.queuePrefixes
	dcfg.Collector.Queues = cfg.queues
	dcfg.Logger = log

	ln, err := net.Listen("tcp", dcfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: listen: %w", err)
	}
	dash, err := app.New(ctx, dcfg)
	if err != nil {
		ln.Close()
		return err
	}
	if cfg.ready != nil {
		cfg.ready(ln.Addr().String())
	}
	return dash.Run(ctx, ln)
}

// loadRegion builds the clients of one region of one account: with the ambient credentials, or
// with those of the account's role.
func loadRegion(ctx context.Context, cfg serveConfig, a accountConfig, name string) (app.Region, error) {
	what := fmt.Sprintf("region %q", name)
	if a.Name != "" {
		what = fmt.Sprintf("account %q, region %q", a.Name, name)
	}
	opts := awsconf.Options{
		Region: name, Profile: cfg.profile, EndpointURL: cfg.endpointURL,
		CloudWatchEndpointURL: cfg.cloudWatchEndpoint, StaticCredentials: cfg.staticCredentials,
	}
	awsCfg, err := awsconf.LoadConfig(ctx, opts)
	if err != nil {
		return app.Region{}, fmt.Errorf("serve: %s: %w", what, err)
	}
	opts.Region = awsCfg.Region
	var clients awsconf.Clients
	if a.RoleARN != "" {
		clients, err = awsconf.LoadAssumed(ctx, opts, a.RoleARN, a.ExternalID)
	} else {
		clients, err = awsconf.Load(ctx, opts)
	}
	if err != nil {
		return app.Region{}, fmt.Errorf("serve: %s: %w", what, err)
	}
	return app.Region{Name: awsCfg.Region, Account: a.Name, AccountID: a.accountID, Clients: clients}, nil
}

// credentialsConfigured reports whether the environment names a source of AWS credentials that
// does not need the network: keys, a profile, a web identity, a container endpoint or a shared
// credentials file. Without one, the chain would end at the instance metadata service, which an
// endpoint like the simulator never needs.
func credentialsConfigured(lookupEnv lookupEnvFunc) bool {
	for _, name := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	} {
		if v, ok := lookupEnv(name); ok && v != "" {
			return true
		}
	}
	files := []string{}
	if v, ok := lookupEnv("AWS_SHARED_CREDENTIALS_FILE"); ok && v != "" {
		files = append(files, v)
	}
	if v, ok := lookupEnv("AWS_CONFIG_FILE"); ok && v != "" {
		files = append(files, v)
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}
