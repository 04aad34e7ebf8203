-- See ../00019_redrive_destinations.sql.
-- +goose Up
ALTER TABLE redrive_messages ADD COLUMN destination_arn TEXT NOT NULL DEFAULT '';
UPDATE redrive_messages SET destination_arn = coalesce(
    (SELECT j.destination_arn FROM selection_journal j
        WHERE j.move_task_id = redrive_messages.move_task_id AND j.message_id = redrive_messages.message_id),
    (SELECT mt.destination_arn FROM move_tasks mt
        WHERE mt.id = redrive_messages.move_task_id AND mt.destination_arn <> ''),
    (SELECT m.dead_letter_source_arn FROM redrive_samples rs JOIN messages m ON m.queue_id = rs.queue_id
        WHERE rs.move_task_id = redrive_messages.move_task_id AND m.message_id = redrive_messages.message_id),
    '');

-- +goose Down
ALTER TABLE redrive_messages DROP COLUMN destination_arn;
