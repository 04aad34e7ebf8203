package views

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/store"
)

// ErrUnknownMetric is returned by Series for a name that is not an AWS/SQS metric toolq knows
// (see MetricNames); the API answers it with 400.
var ErrUnknownMetric = errors.New("views: unknown metric")

const metricOldestAge = "ApproximateAgeOfOldestMessage"

// depthMetrics are the CloudWatch names of the depths that GetQueueAttributes also reports: their
// series come from the attribute samples (every 15 s) rather than CloudWatch (every minute, late).
var depthMetrics = map[string]func(store.AttributeSample) int64{
	"ApproximateNumberOfMessagesVisible":    func(a store.AttributeSample) int64 { return a.Visible },
	"ApproximateNumberOfMessagesNotVisible": func(a store.AttributeSample) int64 { return a.InFlight },
	"ApproximateNumberOfMessagesDelayed":    func(a store.AttributeSample) int64 { return a.Delayed },
}

// MetricNames returns the metric names Series accepts, sorted: the AWS/SQS CloudWatch metrics.
func MetricNames() []string { return store.MetricNames() }

// Series returns a metric of a queue over [since, until); ErrUnknownMetric for a name not in
// MetricNames.
func (s *Service) Series(ctx context.Context, queueID int64, metric string, since, until time.Time) (Series, error) {
	if !slices.Contains(store.MetricNames(), metric) {
		return Series{}, choices.Wrap(fmt.Errorf("%w: %q", ErrUnknownMetric, metric), metric, store.MetricNames())
	}
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return Series{}, err
	}
	out := Series{Queue: q.Name, Name: metric, Since: since.UTC(), Until: until.UTC(), Points: []Point{}}
	if !since.Before(until) {
		return out, nil // an empty range holds no points; the API refuses it before asking
	}

	points, err := s.store.MetricSeries(ctx, q.ID, metric, since, until)
	if err != nil {
		return Series{}, fmt.Errorf("views: series: %w", err)
	}
	value, isDepth := depthMetrics[metric]
	if !isDepth {
		for _, p := range points {
			out.Points = append(out.Points, Point{At: p.At.UTC(), Value: p.Value})
		}
		return out, nil
	}

	samples, err := s.store.AttributeSeries(ctx, q.ID, since, until)
	if err != nil {
		return Series{}, fmt.Errorf("views: series: %w", err)
	}
	// CloudWatch's backfill fills the time before the first sample; after that the samples are
	// finer and fresher, so datapoints there would only add noise.
	for _, p := range points {
		if len(samples) > 0 && !p.At.Before(samples[0].At) {
			break
		}
		out.Points = append(out.Points, Point{At: p.At.UTC(), Value: p.Value})
	}
	for _, a := range samples {
		out.Points = append(out.Points, Point{At: a.At.UTC(), Value: float64(value(a))})
	}
	return out, nil
}
