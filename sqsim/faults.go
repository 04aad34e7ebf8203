package sqsim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault describes failures to inject into an operation. The zero Fault
// injects nothing.
type Fault struct {
	// ThrottleRate is the share (0 to 1) of calls answered with the
	// service's throttling error (RequestThrottled for SQS, Throttling for
	// CloudWatch), which the SDK retries.
	ThrottleRate float64
	// ErrorRate is the share (0 to 1) of calls answered with a 500
	// internal error.
	ErrorRate float64
	// Latency delays every call by this much real time.
	Latency time.Duration
	// Deny answers every call with AccessDenied (HTTP 403), as AWS answers a principal whose
	// policy lacks the operation's permission.
	Deny bool
}

// SetFault injects f into operation ("ReceiveMessage", "GetMetricData", ...,
// or "*" for every operation without its own fault). The zero Fault clears
// it. Which calls fail is drawn from Options.Seed, so that with a seed a
// sequence of calls fails the same way every run.
func (s *Simulator) SetFault(operation string, f Fault) {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	if f == (Fault{}) {
		delete(s.stats.faults, operation)
		return
	}
	s.stats.faults[operation] = f
}

// ParseFaults parses a fault specification such as
// "ReceiveMessage=throttle:0.2,latency:20ms;GetMetricData=error:0.1;*=latency:5ms;SendMessageBatch=deny":
// operations separated by ';', each with comma-separated throttle:<rate>,
// error:<rate>, latency:<duration> and deny (every call answered AccessDenied).
func ParseFaults(spec string) (map[string]Fault, error) {
	faults := make(map[string]Fault)
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		op, settings, ok := strings.Cut(part, "=")
		op = strings.TrimSpace(op)
		if !ok || op == "" {
			return nil, fmt.Errorf("sqsim: fault %q: want operation=settings", part)
		}
		var f Fault
		for setting := range strings.SplitSeq(settings, ",") {
			if strings.TrimSpace(setting) == "deny" {
				f.Deny = true
				continue
			}
			key, value, ok := strings.Cut(strings.TrimSpace(setting), ":")
			if !ok {
				return nil, fmt.Errorf("sqsim: fault %q: setting %q: want key:value", op, setting)
			}
			value = strings.TrimSpace(value)
			switch strings.TrimSpace(key) {
			case "throttle", "error":
				rate, err := strconv.ParseFloat(value, 64)
				if err != nil || rate < 0 || rate > 1 {
					return nil, fmt.Errorf("sqsim: fault %q: %s rate %q: want a number from 0 to 1", op, key, value)
				}
				if key == "throttle" {
					f.ThrottleRate = rate
				} else {
					f.ErrorRate = rate
				}
			case "latency":
				d, err := time.ParseDuration(value)
				if err != nil || d < 0 {
					return nil, fmt.Errorf("sqsim: fault %q: latency %q: want a duration such as 20ms", op, value)
				}
				f.Latency = d
			default:
				return nil, fmt.Errorf("sqsim: fault %q: unknown setting %q (want throttle, error, latency or deny)", op, key)
			}
		}
		if f.ThrottleRate+f.ErrorRate > 1 {
			return nil, fmt.Errorf("sqsim: fault %q: throttle and error rates add up to more than 1", op)
		}
		faults[op] = f
	}
	return faults, nil
}

// stats counts calls and holds the injected faults. It has its own lock so
// that counting never waits for a long poll's work.
type stats struct {
	mu            sync.Mutex
	calls         map[string]int
	metricQueries []int
	faults        map[string]Fault
	rng           *rand.Rand
}

func (st *stats) init(src rand.Source) {
	st.calls = make(map[string]int)
	st.faults = make(map[string]Fault)
	st.rng = rand.New(src)
}

func (st *stats) count(op string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls[op]++
}

// fault returns the fault that applies to op and a roll in [0, 1) that
// decides whether this call fails.
func (st *stats) fault(op string) (Fault, float64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f, ok := st.faults[op]
	if !ok {
		f = st.faults["*"]
	}
	if f == (Fault{}) {
		return f, 1
	}
	return f, st.rng.Float64()
}

// CallCount returns how many calls of operation (of either service) the
// simulator has served since it was created or ResetCallCounts, failed ones
// included.
func (s *Simulator) CallCount(operation string) int {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return s.stats.calls[operation]
}

// CallCounts returns the call count of every operation called.
func (s *Simulator) CallCounts() map[string]int {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return maps.Clone(s.stats.calls)
}

// ResetCallCounts sets every call count to zero and forgets
// MetricQueriesPerCall.
func (s *Simulator) ResetCallCounts() {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	clear(s.stats.calls)
	s.stats.metricQueries = nil
}

// MetricQueriesPerCall returns, in call order, the number of
// MetricDataQueries of each GetMetricData call since the last reset: what
// CloudWatch bills.
func (s *Simulator) MetricQueriesPerCall() []int {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return append([]int(nil), s.stats.metricQueries...)
}

func (st *stats) recordMetricQueries(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.metricQueries = append(st.metricQueries, n)
}
