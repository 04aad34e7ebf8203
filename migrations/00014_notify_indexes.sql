-- Indexes for every read the notifier makes, so that what it costs depends on what waits, not on
-- the history the outbox keeps (issue 38). A day of alerts at 1,000 queues is tens of thousands
-- of outbox rows, and the only index over notify_outbox's message_id was the partial one of the
-- waiting alerts (message_id = 0): finding the alerts of a message (what a group was told
-- lately, a message's alerts when its payload is written again) read the whole outbox.
--
-- notify_outbox_message: a message's alerts, by message (the key's target and alert_id come with
-- it, so that the join from notify_messages and the order by alert_id read nothing else); and,
-- as message 0's, the waiting alerts, for which both engines chose it over the partial index
-- notify_outbox_waiting, which it replaces.
-- notify_deliveries_failures: a target's newest attempt that did not succeed (the status page,
-- the metrics' scrape). It replaces notify_deliveries_target (target, at), which served that
-- read alone and made it read every attempt of a target that never failed; while both existed,
-- SQLite, without statistics, chose the old one.

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
