-- See ../00018_message_trace_header.sql.
-- +goose Up
ALTER TABLE messages ADD COLUMN trace_header TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE messages DROP COLUMN trace_header;
