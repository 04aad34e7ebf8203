package store

import (
	"context"
	"fmt"
	"time"
)

// EventSourceMapping is one Lambda event source mapping that drains an SQS queue, with the
// timeout of its function (GetFunctionConfiguration).
type EventSourceMapping struct {
	UUID                 string
	Region               string
	QueueARN             string // the mapping's EventSourceArn
	FunctionARN          string
	State                string // Enabled, Disabled, Creating, Updating, …
	StateReason          string // StateTransitionReason
	LastProcessingResult string // "PROBLEM: …" when Lambda's pollers fail
	BatchSize            int
	// BatchingWindowSeconds is MaximumBatchingWindowInSeconds.
	BatchingWindowSeconds   int
	ReportBatchItemFailures bool
	// MaximumConcurrency is ScalingConfig.MaximumConcurrency; 0 when it is not set.
	MaximumConcurrency int
	// FunctionTimeoutSeconds is the function's Timeout; 0 when it could not be read, and then
	// FunctionError says why.
	FunctionTimeoutSeconds int
	FunctionError          string
	ReadAt                 time.Time
}

// EventBridgeTarget is one target of one EventBridge rule.
type EventBridgeTarget struct {
	Region        string
	BusName       string
	BusARN        string
	RuleName      string
	RuleARN       string
	RuleState     string // ENABLED, DISABLED, …
	TargetID      string
	TargetARN     string
	DeadLetterARN string // the target's DeadLetterConfig; "" without one
	// MaxEventAgeSeconds is RetryPolicy.MaximumEventAgeInSeconds, 0 when it is not set
	// (EventBridge's default: 24 hours).
	MaxEventAgeSeconds int
	// MaxRetryAttempts is RetryPolicy.MaximumRetryAttempts, -1 when it is not set (185).
	MaxRetryAttempts int
	ReadAt           time.Time
}

// QueueAlarm is one CloudWatch alarm on one AWS/SQS metric of one queue. A metric-math alarm
// over several queues' metrics is one QueueAlarm per queue and metric.
type QueueAlarm struct {
	Region         string
	AlarmName      string
	AlarmARN       string
	QueueName      string // the QueueName dimension
	MetricName     string
	State          string // OK, ALARM, INSUFFICIENT_DATA
	StateReason    string
	StateUpdatedAt time.Time
	ActionsEnabled bool
	ReadAt         time.Time
}

// ReplaceEventSourceMappings replaces every mapping stored for a region (the collector's scope)
// with a complete ListEventSourceMappings reading of it: the mappings whose EventSourceArn is a
// watched queue.
func (s *Store) ReplaceEventSourceMappings(ctx context.Context, region string, mappings []EventSourceMapping) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM event_source_mappings WHERE region = ?", region); err != nil {
			return err
		}
		for _, m := range mappings {
			_, err := tx.ExecContext(ctx, `
				INSERT INTO event_source_mappings (uuid, region, queue_arn, function_arn, state,
					state_reason, last_processing_result, batch_size, batching_window,
					report_batch_item_failures, maximum_concurrency, function_timeout, function_error, read_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (uuid) DO UPDATE SET region = excluded.region, queue_arn = excluded.queue_arn,
					function_arn = excluded.function_arn, state = excluded.state, state_reason = excluded.state_reason,
					last_processing_result = excluded.last_processing_result, batch_size = excluded.batch_size,
					batching_window = excluded.batching_window, report_batch_item_failures = excluded.report_batch_item_failures,
					maximum_concurrency = excluded.maximum_concurrency, function_timeout = excluded.function_timeout,
					function_error = excluded.function_error, read_at = excluded.read_at`,
				m.UUID, region, m.QueueARN, m.FunctionARN, m.State, m.StateReason, m.LastProcessingResult,
				m.BatchSize, m.BatchingWindowSeconds, m.ReportBatchItemFailures, m.MaximumConcurrency,
				m.FunctionTimeoutSeconds, m.FunctionError, ms(m.ReadAt))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: replace event source mappings of %s: %w", region, err)
	}
	return nil
}

// EventSourceMappings returns every stored mapping, by queue ARN and UUID.
func (s *Store) EventSourceMappings(ctx context.Context) ([]EventSourceMapping, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT uuid, region, queue_arn, function_arn, state, state_reason, last_processing_result,
			batch_size, batching_window, report_batch_item_failures, maximum_concurrency,
			function_timeout, function_error, read_at
		FROM event_source_mappings ORDER BY queue_arn, uuid`)
	if err != nil {
		return nil, fmt.Errorf("store: event source mappings: %w", err)
	}
	defer rows.Close()
	out := []EventSourceMapping{}
	for rows.Next() {
		var m EventSourceMapping
		var readAt int64
		if err := rows.Scan(&m.UUID, &m.Region, &m.QueueARN, &m.FunctionARN, &m.State, &m.StateReason,
			&m.LastProcessingResult, &m.BatchSize, &m.BatchingWindowSeconds, &m.ReportBatchItemFailures,
			&m.MaximumConcurrency, &m.FunctionTimeoutSeconds, &m.FunctionError, &readAt); err != nil {
			return nil, fmt.Errorf("store: event source mappings: %w", err)
		}
		m.ReadAt = fromMS(readAt)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: event source mappings: %w", err)
	}
	return out, nil
}

// ReplaceEventBridgeTargets replaces every target stored for a region with a complete reading
// of its buses, rules and targets.
func (s *Store) ReplaceEventBridgeTargets(ctx context.Context, region string, targets []EventBridgeTarget) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM eventbridge_targets WHERE region = ?", region); err != nil {
			return err
		}
		for _, t := range targets {
			_, err := tx.ExecContext(ctx, `
				INSERT INTO eventbridge_targets (rule_arn, target_id, region, bus_name, bus_arn,
					rule_name, rule_state, target_arn, dead_letter_arn, max_event_age, max_retry_attempts, read_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (rule_arn, target_id) DO UPDATE SET region = excluded.region, bus_name = excluded.bus_name,
					bus_arn = excluded.bus_arn, rule_name = excluded.rule_name, rule_state = excluded.rule_state,
					target_arn = excluded.target_arn, dead_letter_arn = excluded.dead_letter_arn,
					max_event_age = excluded.max_event_age, max_retry_attempts = excluded.max_retry_attempts,
					read_at = excluded.read_at`,
				t.RuleARN, t.TargetID, region, t.BusName, t.BusARN, t.RuleName, t.RuleState, t.TargetARN,
				t.DeadLetterARN, t.MaxEventAgeSeconds, t.MaxRetryAttempts, ms(t.ReadAt))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: replace EventBridge targets of %s: %w", region, err)
	}
	return nil
}

// EventBridgeTargets returns every stored target, by region, bus, rule and target id.
func (s *Store) EventBridgeTargets(ctx context.Context) ([]EventBridgeTarget, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT region, bus_name, bus_arn, rule_name, rule_arn, rule_state, target_id, target_arn,
			dead_letter_arn, max_event_age, max_retry_attempts, read_at
		FROM eventbridge_targets ORDER BY region, bus_name, rule_name, target_id`)
	if err != nil {
		return nil, fmt.Errorf("store: EventBridge targets: %w", err)
	}
	defer rows.Close()
	out := []EventBridgeTarget{}
	for rows.Next() {
		var t EventBridgeTarget
		var readAt int64
		if err := rows.Scan(&t.Region, &t.BusName, &t.BusARN, &t.RuleName, &t.RuleARN, &t.RuleState, &t.TargetID,
			&t.TargetARN, &t.DeadLetterARN, &t.MaxEventAgeSeconds, &t.MaxRetryAttempts, &readAt); err != nil {
			return nil, fmt.Errorf("store: EventBridge targets: %w", err)
		}
		t.ReadAt = fromMS(readAt)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: EventBridge targets: %w", err)
	}
	return out, nil
}

// ReplaceQueueAlarms replaces every alarm stored for a region with a complete DescribeAlarms
// reading.
func (s *Store) ReplaceQueueAlarms(ctx context.Context, region string, alarms []QueueAlarm) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM queue_alarms WHERE region = ?", region); err != nil {
			return err
		}
		for _, a := range alarms {
			_, err := tx.ExecContext(ctx, `
				INSERT INTO queue_alarms (region, alarm_name, queue_name, metric_name, alarm_arn,
					state, state_reason, state_updated_at, actions_enabled, read_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (region, alarm_name, queue_name, metric_name) DO UPDATE SET alarm_arn = excluded.alarm_arn,
					state = excluded.state, state_reason = excluded.state_reason,
					state_updated_at = excluded.state_updated_at, actions_enabled = excluded.actions_enabled,
					read_at = excluded.read_at`,
				region, a.AlarmName, a.QueueName, a.MetricName, a.AlarmARN, a.State, a.StateReason,
				ms(a.StateUpdatedAt), a.ActionsEnabled, ms(a.ReadAt))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: replace alarms of %s: %w", region, err)
	}
	return nil
}

// QueueAlarms returns every stored alarm, by region, queue and alarm name.
func (s *Store) QueueAlarms(ctx context.Context) ([]QueueAlarm, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT region, alarm_name, alarm_arn, queue_name, metric_name, state, state_reason,
			state_updated_at, actions_enabled, read_at
		FROM queue_alarms ORDER BY region, queue_name, alarm_name, metric_name`)
	if err != nil {
		return nil, fmt.Errorf("store: alarms: %w", err)
	}
	defer rows.Close()
	out := []QueueAlarm{}
	for rows.Next() {
		var a QueueAlarm
		var updated, readAt int64
		if err := rows.Scan(&a.Region, &a.AlarmName, &a.AlarmARN, &a.QueueName, &a.MetricName, &a.State,
			&a.StateReason, &updated, &a.ActionsEnabled, &readAt); err != nil {
			return nil, fmt.Errorf("store: alarms: %w", err)
		}
		a.StateUpdatedAt, a.ReadAt = fromMS(updated), fromMS(readAt)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: alarms: %w", err)
	}
	return out, nil
}
