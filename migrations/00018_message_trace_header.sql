-- The AWSTraceHeader SQS keeps with a message (X-Ray's trace header), as a sample received it:
-- with --trace-url, the message's page and the alerts link it to the tracing system, beside a
-- traceparent message attribute. '' when the message had none.

-- +goose Up
ALTER TABLE messages ADD COLUMN trace_header TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE messages DROP COLUMN trace_header;
