-- The account a queue was watched through: the configured name (--account NAME=…) of the AWS
-- account. The account's id is the queue ARN's. '' for a dashboard configured without accounts
-- (the ambient credentials' one account).
--
-- The collector's sight (aws_operations, collector_loops) and the topology it replaces region by
-- region (eventbridge_targets, queue_alarms) keep their region column, which now holds the sight
-- scope: the region, or NAME/region for a configured account (store.Scope).

-- +goose Up
ALTER TABLE queues ADD COLUMN account TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE queues DROP COLUMN account;
