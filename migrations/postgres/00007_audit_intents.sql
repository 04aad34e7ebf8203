-- See ../00007_audit_intents.sql.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN intent_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN idempotency_key TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN code TEXT NOT NULL DEFAULT '';         -- a refusal's or failure's stable code
ALTER TABLE audit_log ADD COLUMN kind TEXT NOT NULL DEFAULT '';         -- what sort of refusal: the actions' Kind
ALTER TABLE audit_log ADD COLUMN move_task_id BIGINT NOT NULL DEFAULT 0; -- an accepted action's move task
CREATE INDEX audit_log_outcome ON audit_log (intent_id) WHERE intent_id <> 0;
CREATE INDEX audit_log_pending ON audit_log (id) WHERE result = 'intent';
CREATE INDEX audit_log_idempotency ON audit_log (actor, idempotency_key) WHERE idempotency_key <> '';

-- +goose Down
DROP INDEX audit_log_idempotency;
DROP INDEX audit_log_pending;
DROP INDEX audit_log_outcome;
ALTER TABLE audit_log DROP COLUMN move_task_id;
ALTER TABLE audit_log DROP COLUMN kind;
ALTER TABLE audit_log DROP COLUMN code;
ALTER TABLE audit_log DROP COLUMN idempotency_key;
ALTER TABLE audit_log DROP COLUMN intent_id;
