package sqsim

import (
	"hash/fnv"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A Simulator serves every region of its account, each a world of its own:
// queues, alarms, metrics, buses and functions of one region are not seen
// from another, and ARNs name their region. AWS tells regions apart by host
// (sqs.eu-west-1.amazonaws.com); one simulator endpoint serves them all, so
// it goes by the region of the request's SigV4 credential scope
// ("Credential=AKID/20261201/eu-west-1/sqs/aws4_request"), which every
// client signs with the region it is configured for. An unsigned request is
// served by the home region, Options.Region.

// regionSet holds the simulators of one account's regions. They share the
// account, the clock, the logger, and the faults and call counts (stats).
type regionSet struct {
	opts  Options
	stats *stats

	mu     sync.Mutex
	byName map[string]*Simulator
}

// maxRegions bounds how many regions one account may have, so that requests
// signed for made-up regions cannot grow the simulator without end. AWS has
// fewer than 40.
const maxRegions = 64

// regionPattern is what a region's name looks like: us-east-1,
// ap-southeast-2, us-gov-west-1.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

// region returns the simulator of the region name, created on first use.
func (rs *regionSet) region(name string) (*Simulator, *apiError) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if s := rs.byName[name]; s != nil {
		return s, nil
	}
	if !regionPattern.MatchString(name) || len(rs.byName) >= maxRegions {
		return nil, errInvalidRegion(name)
	}
	opts := rs.opts
	opts.Region = name
	// Each region draws its ids from a seed of its own, so that one
	// region's traffic does not change another's ids (a random source is
	// each region's own already).
	if opts.Seed != 0 {
		h := fnv.New64a()
		h.Write([]byte(name))
		opts.Seed ^= int64(h.Sum64())
	}
	s := newRegion(opts, rs.stats)
	s.regions = rs
	rs.byName[name] = s
	return s, nil
}

// all returns the regions created so far, in name order.
func (rs *regionSet) all() []*Simulator {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*Simulator, 0, len(rs.byName))
	for _, name := range slices.Sorted(maps.Keys(rs.byName)) {
		out = append(out, rs.byName[name])
	}
	return out
}

// Region returns the simulator of the account's region name, created on
// first use as a request signed for it would create it, or nil when name is
// no region's. Tests use it to look into another region (Snapshot, say).
func (s *Simulator) Region(name string) *Simulator {
	r, err := s.regions.region(name)
	if err != nil {
		return nil
	}
	return r
}

// regionFor returns the simulator that serves a request: that of its SigV4
// region, or s for an unsigned request or one signed for s's region.
func (s *Simulator) regionFor(r *http.Request) (*Simulator, *apiError) {
	_, region, _ := credentialScope(r)
	if region == "" || region == s.region {
		return s, nil
	}
	return s.regions.region(region)
}

// credentialScope returns the access key id, region and service of a
// request's SigV4 Authorization header ("AWS4-HMAC-SHA256
// Credential=AKID/20261201/us-east-1/sqs/aws4_request, …"), or empty strings
// for an unsigned request.
func credentialScope(r *http.Request) (key, region, service string) {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return "", "", ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return "", "", ""
	}
	return parts[0], parts[2], parts[3]
}

// errInvalidRegion is what AWS answers a signature scoped to no region.
func errInvalidRegion(region string) *apiError {
	return newAPIError(http.StatusForbidden, "SignatureDoesNotMatch", "SignatureDoesNotMatch",
		"Credential should be scoped to a valid region, not '%s'.", safeName(truncate(region, 64)))
}

// partition returns the ARN partition of a region: aws-cn in China,
// aws-us-gov in GovCloud, the isolated partitions by their prefixes, aws
// elsewhere.
func partition(region string) string {
	for _, p := range partitionPrefixes {
		if strings.HasPrefix(region, p[0]) {
			return p[1]
		}
	}
	return "aws"
}

// knownPartition reports whether name is an AWS partition's.
func knownPartition(name string) bool {
	if name == "aws" {
		return true
	}
	for _, p := range partitionPrefixes {
		if p[1] == name {
			return true
		}
	}
	return false
}

// partitionPrefixes are the partitions other than aws, by the prefix of
// their regions' names (us-isob- before us-iso-, which it starts with).
var partitionPrefixes = [][2]string{
	{"cn-", "aws-cn"}, {"us-gov-", "aws-us-gov"},
	{"us-isob-", "aws-iso-b"}, {"us-isof-", "aws-iso-f"}, {"eu-isoe-", "aws-iso-e"}, {"us-iso-", "aws-iso"},
}

// endpointDomains are the domains whose hosts name a region, with the
// partitions whose endpoints they serve: AWS's sqs.<region>.amazonaws.com,
// the legacy <region>.queue.amazonaws.com, the dual-stack sqs.<region>.api.aws,
// China's amazonaws.com.cn, and LocalStack's
// sqs.<region>.localhost.localstack.cloud, which serves any.
var endpointDomains = []struct {
	domain     string
	partitions []string // nil: any
}{
	{"amazonaws.com", []string{"aws", "aws-us-gov"}},
	{"api.aws", []string{"aws", "aws-us-gov"}},
	{"amazonaws.com.cn", []string{"aws-cn"}},
	{"api.amazonwebservices.com.cn", []string{"aws-cn"}},
	{"localhost.localstack.cloud", nil},
}

// hostRegion returns the region a queue URL's host names, when it is an AWS
// endpoint's or LocalStack's: eu-west-1 for sqs.eu-west-1.amazonaws.com,
// eu-west-1.queue.amazonaws.com or sqs.eu-west-1.localhost.localstack.cloud;
// us-east-1, AWS's first region, for AWS's hosts without one
// (queue.amazonaws.com). An AWS host whose region is of another partition
// (sqs.us-east-1.amazonaws.com.cn) names no region that exists: "". ok is
// false for any other host (127.0.0.1, localhost, a docker service's name,
// LocalStack's localhost.localstack.cloud), which names no region.
func hostRegion(host string) (region string, ok bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range endpointDomains {
		sub, found := strings.CutSuffix(host, "."+d.domain)
		if !found {
			continue
		}
		for _, label := range strings.Split(sub, ".") {
			if regionPattern.MatchString(label) {
				region = label
			}
		}
		switch {
		case region == "" && d.partitions == nil:
			return "", false
		case region == "":
			region = "us-east-1"
		}
		if d.partitions != nil && !slices.Contains(d.partitions, partition(region)) {
			return "", true
		}
		return region, true
	}
	return "", false
}
