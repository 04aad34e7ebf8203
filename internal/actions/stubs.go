package actions

// This file is the actions' contract, written first so that the API and the pages can be built
// against it at the same time. The owner replaces it with the real code and deletes this file.

import (
	"context"
	"errors"

	"github.com/toolq/toolq/internal/store"
)

// Actor is who asks for an action, as authentication established it.
type Actor struct {
	Name       string // token name or proxy user; "anonymous" with --auth none
	Kind       string // "token", "proxy" or "none"
	Role       string // "viewer" or "operator"
	RemoteAddr string
}

// StartRedriveRequest asks for a move task out of a dead-letter queue.
type StartRedriveRequest struct {
	Queue        string // the DLQ's name or ARN
	Destination  string // name or ARN; empty: each message's original source
	MaxPerSecond int    // 0: SQS chooses; else 1..500
}

// Error is a refused action: Code is stable for API clients, Message is safe to show.
type Error struct {
	Code    string // e.g. "read_only", "forbidden", "not_dead_letter_queue", "task_running", "no_task_running", "destination_not_found", "destination_type_mismatch", "redrive_not_allowed", "invalid_rate", "queue_not_found", "aws_error"
	Message string
	Status  int // the HTTP status that fits: 403, 404, 409, 422, 502...
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

var errStub = errors.New("actions: not implemented yet")

// Service runs the actions. It is the only code that changes anything in AWS.
type Service struct{}

// StartRedrive validates and starts a move task, and audits the attempt whatever its outcome.
func (s *Service) StartRedrive(ctx context.Context, actor Actor, req StartRedriveRequest) (store.MoveTask, error) {
	return store.MoveTask{}, errStub
}

// CancelRedrive cancels the running move task of a dead-letter queue, and audits the attempt.
func (s *Service) CancelRedrive(ctx context.Context, actor Actor, queue string) (store.MoveTask, error) {
	return store.MoveTask{}, errStub
}

// ReadOnly reports whether actions are turned off.
func (s *Service) ReadOnly() bool { return false }
