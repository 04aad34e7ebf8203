-- See ../00002_sample_oldest_sent.sql.

-- +goose Up
ALTER TABLE samples ADD COLUMN oldest_sent_at BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE samples DROP COLUMN oldest_sent_at;
