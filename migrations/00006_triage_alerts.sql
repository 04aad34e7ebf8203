-- Triage and alerts. Each sampled message keeps the operator's named dimensions of a tool call
-- (`--dimension mcpServer=attr:mcpServer`), as a JSON object of strings, so that a sample can be
-- grouped, filtered and searched by them.
--
-- alerts is the one log of what toolq tells people and bots (DLQ arrivals, health changes,
-- blocked sessions, redrives, blind regions): the notifier and GET /api/v1/events both read it,
-- and its ids are the event stream's Last-Event-ID. AUTOINCREMENT, so that an id is never used
-- twice even after the oldest alerts are pruned. The detector's memory of what it last saw is a
-- kv row written in the same transaction as the alerts it raised.
--
-- notify_outbox routes each alert to each target whose filters it passes; notify_messages are
-- what is sent (one message may summarise several alerts of one queue); notify_deliveries are the
-- attempts. A restart resumes from them: an alert routed is never routed again, a message sent is
-- never sent again.

-- +goose Up
ALTER TABLE messages ADD COLUMN dimensions TEXT NOT NULL DEFAULT '{}';

CREATE TABLE alerts (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    group_key TEXT    NOT NULL, -- queue:<id> or region:<name>: what one notification message is about
    body      TEXT    NOT NULL  -- the alert as JSON (views.Alert)
);
CREATE INDEX alerts_at ON alerts (at);

CREATE TABLE notify_targets (
    name     TEXT PRIMARY KEY,
    kind     TEXT    NOT NULL, -- slack or webhook
    endpoint TEXT    NOT NULL, -- scheme and host only: the URL of a Slack webhook is a secret
    filter   TEXT    NOT NULL DEFAULT '',
    seen_at  INTEGER NOT NULL  -- when a dashboard last started with it configured
) WITHOUT ROWID;

CREATE TABLE notify_messages (
    id              INTEGER PRIMARY KEY,
    target          TEXT    NOT NULL,
    group_key       TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    alerts          INTEGER NOT NULL DEFAULT 0, -- how many alerts it summarises
    title           TEXT    NOT NULL DEFAULT '',
    payload         TEXT    NOT NULL,           -- the exact body, sent again on a retry
    status          TEXT    NOT NULL,           -- pending, sent, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    sent_at         INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX notify_messages_due ON notify_messages (status, next_attempt_at);
CREATE INDEX notify_messages_group ON notify_messages (target, group_key, created_at);

CREATE TABLE notify_outbox (
    alert_id   INTEGER NOT NULL,
    target     TEXT    NOT NULL,
    group_key  TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    message_id INTEGER NOT NULL DEFAULT 0, -- 0 until a message takes it
    PRIMARY KEY (alert_id, target)
) WITHOUT ROWID;
CREATE INDEX notify_outbox_waiting ON notify_outbox (message_id, target, group_key) WHERE message_id = 0;

CREATE TABLE notify_deliveries (
    id          INTEGER PRIMARY KEY,
    message_id  INTEGER NOT NULL,
    target      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    outcome     TEXT    NOT NULL, -- sent, retry, failed
    http_status INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notify_deliveries_target ON notify_deliveries (target, at);
CREATE INDEX notify_deliveries_at ON notify_deliveries (at);

-- +goose Down
DROP TABLE notify_deliveries;
DROP TABLE notify_outbox;
DROP TABLE notify_messages;
DROP TABLE notify_targets;
DROP TABLE alerts;
ALTER TABLE messages DROP COLUMN dimensions;
