-- Where each remembered message of a redrive was sent: a bounce-back is a later arrival in the
-- dead-letter queue that came through that queue (its DeadLetterQueueSourceArn names it) with
-- the same body. A copy of a redriven body sent straight to the DLQ carries no
-- DeadLetterQueueSourceArn, so it is no bounce-back of anything (store.RedrivenArrivals,
-- views.outcomesOf).
--
-- destination_arn is the move task's destination, or, for a task without one, the queue the
-- message had failed in (its DeadLetterQueueSourceArn in the DLQ); for a selection job, the
-- queue its journal sent the message to. Rows remembered before this migration get it from what
-- the store still holds; '' where nothing does.

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
