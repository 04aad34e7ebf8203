-- The oldest SentTimestamp among a sample's messages. CloudWatch's ApproximateAgeOfOldestMessage
-- skips messages received three times or more, which in a dead-letter queue is every message:
-- the sample is where the age of a DLQ's oldest tool call comes from.

-- +goose Up
ALTER TABLE samples ADD COLUMN oldest_sent_at INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE samples DROP COLUMN oldest_sent_at;
