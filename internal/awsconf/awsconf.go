// Package awsconf builds the SQS, CloudWatch, Lambda and EventBridge clients toolq uses, from
// the standard AWS configuration chain (environment, shared profiles, SSO, web identity,
// container and instance roles) or, for the embedded simulator, from static dummy credentials
// and a local endpoint.
package awsconf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// MaxIdleConnsPerHost is how many idle connections each client keeps per endpoint: more than
// the collector's calls in flight to it (collector.DefaultConcurrency).
const MaxIdleConnsPerHost = 64

// Retry modes accepted in Options.RetryMode.
const (
	// RetryStandard is the SDK's standard retryer: exponential backoff with jitter and a retry
	// quota, retrying throttling, 5xx and transport errors.
	RetryStandard = "standard"
	// RetryAdaptive adds client-side rate limiting that slows the client down while it is throttled.
	RetryAdaptive = "adaptive"
)

// Defaults of Options.
const (
	// DefaultMaxAttempts is tried per call before an error is returned. The SDK's own default is 3;
	// a collector that runs every 15 s can afford a little more patience with throttling.
	DefaultMaxAttempts = 5
	// DefaultMaxBackoff bounds the wait between two attempts: well under the attribute interval,
	// so that a retried call cannot overlap the next cycle.
	DefaultMaxBackoff = 5 * time.Second
)

// Static credentials used when Options.StaticCredentials is set. The simulator does not check
// signatures; the values only have to be well formed.
const (
	staticAccessKeyID     = "AKIDTOOLQSIMULATOR00"
	staticSecretAccessKey = "toolq-simulator-secret-not-a-real-key"
)

// Options configure Load. Every field is optional.
type Options struct {
	// Region of both clients. Empty: the region of the configuration chain (AWS_REGION, the
	// profile); an error if that is empty too and no endpoint is set.
	Region string
	// Profile selects a shared-config profile. Empty: AWS_PROFILE or "default".
	Profile string
	// EndpointURL, when set, is the BaseEndpoint of every client (the simulator serves SQS,
	// CloudWatch, Lambda and EventBridge on one port).
	EndpointURL string
	// CloudWatchEndpointURL overrides EndpointURL for CloudWatch when the two differ.
	CloudWatchEndpointURL string
	// StaticCredentials uses dummy static credentials instead of the chain. Only for the
	// embedded simulator or an emulator: real AWS rejects them.
	StaticCredentials bool
	// RetryMode is RetryStandard (default) or RetryAdaptive.
	RetryMode string
	// MaxAttempts per call, first attempt included. Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxBackoff bounds the delay between attempts. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// HTTPClient replaces the SDK's default HTTP client (tests, proxies). Nil: the default.
	HTTPClient config.HTTPClient
}

// ErrNoRegion is returned when neither Options.Region nor the configuration chain names a region.
var ErrNoRegion = errors.New("awsconf: no region: set --region or AWS_REGION")

// Clients are the AWS clients of one region. SQS and ActionsSQS are two clients of one
// configuration, each with a retryer and a retry quota of its own: the collector's retries
// (against an endpoint answering 500 to every poll, say) can never spend the quota an operator's
// redrive needs, nor the reverse.
//
// Lambda and EventBridge are the collector's too: it lists the event source mappings that drain
// the queues and the rules that feed them (read only; toolq changes neither).
type Clients struct {
	SQS         *sqs.Client // the collector's
	ActionsSQS  *sqs.Client // the actions' (move tasks)
	CloudWatch  *cloudwatch.Client
	Lambda      *lambda.Client
	EventBridge *eventbridge.Client
	// STS says which account the clients' credentials reach (GetCallerIdentity), for the
	// collector's check of a configured account.
	STS *sts.Client
}

// Load builds a region's clients from opts. It reads credentials lazily: a missing credential
// surfaces on the first call, not here.
func Load(ctx context.Context, opts Options) (Clients, error) {
	cfg, err := LoadConfig(ctx, opts)
	if err != nil {
		return Clients{}, err
	}
	return fromConfig(cfg, opts), nil
}

// RoleSessionName is the session name of the roles toolq assumes: what CloudTrail shows of
// toolq's calls in the account.
const RoleSessionName = "toolq"

// LoadAssumed builds a region's clients whose credentials come from assuming roleARN (with
// externalID when it is not "") with opts' credentials, through the region's STS endpoint (or
// opts.EndpointURL), refreshed before they expire and shared by the region's clients. Like Load
// it calls nothing: a role that cannot be assumed fails the first call of every client.
func LoadAssumed(ctx context.Context, opts Options, roleARN, externalID string) (Clients, error) {
	cfg, err := LoadConfig(ctx, opts)
	if err != nil {
		return Clients{}, err
	}
	base := sts.NewFromConfig(cfg, func(o *sts.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	})
	cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(base, roleARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = RoleSessionName
		if externalID != "" {
			o.ExternalID = aws.String(externalID)
		}
	}))
	return fromConfig(cfg, opts), nil
}

// fromConfig builds the clients of cfg, at opts' endpoints.
func fromConfig(cfg aws.Config, opts Options) Clients {
	endpoint := func(o *sqs.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	}
	cwClient := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		switch {
		case opts.CloudWatchEndpointURL != "":
			o.BaseEndpoint = aws.String(opts.CloudWatchEndpointURL)
		case opts.EndpointURL != "":
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	})
	lambdaClient := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	})
	ebClient := eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	})
	stsClient := sts.NewFromConfig(cfg, func(o *sts.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	})
	// cfg.Retryer makes a new retryer for each client built from it.
	return Clients{
		SQS: sqs.NewFromConfig(cfg, endpoint), ActionsSQS: sqs.NewFromConfig(cfg, endpoint), CloudWatch: cwClient,
		Lambda: lambdaClient, EventBridge: ebClient, STS: stsClient,
	}
}

// LoadConfig returns the aws.Config that Load builds its clients from, for callers that need
// other clients with the same credentials and retry policy.
func LoadConfig(ctx context.Context, opts Options) (aws.Config, error) {
	mode, err := retryMode(opts.RetryMode)
	if err != nil {
		return aws.Config{}, err
	}
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	maxBackoff := opts.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}

	loaders := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return newRetryer(mode, maxAttempts, maxBackoff) }),
	}
	if opts.Region != "" {
		loaders = append(loaders, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loaders = append(loaders, config.WithSharedConfigProfile(opts.Profile))
	}
	if opts.StaticCredentials {
		loaders = append(loaders, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(staticAccessKeyID, staticSecretAccessKey, "")))
	}
	httpClient := opts.HTTPClient
	if httpClient == nil {
		// The SDK keeps 10 idle connections per host; the collector has tens of calls in flight
		// to one endpoint, and each connection beyond the tenth would be dialled (TLS and all)
		// again for every call.
		httpClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = MaxIdleConnsPerHost
		})
	}
	loaders = append(loaders, config.WithHTTPClient(httpClient))
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("awsconf: load: %w", err)
	}
	cfg.APIOptions = append(cfg.APIOptions, addReadOnlyRequestBody)
	if cfg.Region == "" {
		if opts.EndpointURL == "" {
			return aws.Config{}, ErrNoRegion
		}
		// A local endpoint still needs a region to sign with; which one does not matter.
		cfg.Region = "us-east-1"
	}
	return cfg, nil
}

func retryMode(s string) (aws.RetryMode, error) {
	switch s {
	case "", RetryStandard:
		return aws.RetryModeStandard, nil
	case RetryAdaptive:
		return aws.RetryModeAdaptive, nil
	default:
		return "", fmt.Errorf("awsconf: retry mode %q: want %q or %q", s, RetryStandard, RetryAdaptive)
	}
}

func newRetryer(mode aws.RetryMode, maxAttempts int, maxBackoff time.Duration) aws.Retryer {
	standard := func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxBackoff
	}
	if mode == aws.RetryModeAdaptive {
		return retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, standard)
		})
	}
	return retry.NewStandard(standard)
}
