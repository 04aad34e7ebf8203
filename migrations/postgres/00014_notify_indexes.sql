-- See ../00014_notify_indexes.sql.

-- +goose Up
CREATE INDEX notify_outbox_message ON notify_outbox (message_id, target, alert_id);
DROP INDEX notify_outbox_waiting;
CREATE INDEX notify_deliveries_failures ON notify_deliveries (target, at, id) WHERE outcome <> 'sent';
DROP INDEX notify_deliveries_target;

-- +goose Down
CREATE INDEX notify_deliveries_target ON notify_deliveries (target, at);
DROP INDEX notify_deliveries_failures;
CREATE INDEX notify_outbox_waiting ON notify_outbox (message_id, target, group_key) WHERE message_id = 0;
DROP INDEX notify_outbox_message;
