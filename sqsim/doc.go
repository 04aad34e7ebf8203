// Package sqsim is an in-memory Amazon SQS and CloudWatch simulator.
//
// A Simulator is an http.Handler that the stock aws-sdk-go-v2 clients use
// unchanged: service/sqs speaks AWS JSON 1.0 to it (POST / with
// X-Amz-Target: AmazonSQS.<Operation>) and service/cloudwatch speaks Smithy
// RPC v2 CBOR (POST /service/GraniteServiceVersion20100801/operation/<Op>).
// Older SQS clients (botocore and the aws CLI before late 2023, Debian 12's
// aws CLI 2.9 among them) speak SQS's Query protocol, form-encoded
// Action=<Operation> answered in XML; the simulator serves it too, with the
// same operations. CloudWatch's Query protocol is not served.
// Point the clients' BaseEndpoint at an httptest.Server wrapping the
// simulator and give them static credentials; signatures are not checked.
//
// The simulator follows what AWS documents: standard and FIFO queues,
// visibility timeouts, delays, retention, dead-letter queues with
// maxReceiveCount, deduplication, message move tasks (DLQ redrive) and the
// AWS/SQS CloudWatch metrics, which it derives from its own minute-by-minute
// activity. Errors carry AWS's shapes and query-compatible codes, so the SDK
// returns its typed errors (for example *types.QueueDoesNotExist).
//
// # Time
//
// Every time read goes through Options.Clock. Work that falls due with time
// (delays ending, visibility timeouts, retention expiry, move-task progress,
// per-minute metric samples) is done by Tick, which every request calls
// first; Run calls it every 100 ms for the real clock. With a ManualClock,
// tests Advance the clock and call Tick.
//
// Long polling (WaitTimeSeconds) returns as soon as a message can be
// received. Otherwise it ends when a Tick finds the clock past the wait's
// deadline, or when the request's context ends. With the real clock the wait
// is also bounded by the same duration of real time. With any other clock it
// is bounded by Options.MaxRealWait of real time (one second by default), so
// a test that forgets to advance the clock is never stuck for 20 seconds.
//
// # Choices where AWS leaves room
//
//   - Standard queues deliver in send order (oldest visible first), which
//     keeps tests deterministic; AWS only promises at-least-once delivery.
//   - A move task without MaxNumberOfMessagesPerSecond moves
//     DefaultMoveRate messages per second. A task moves at most
//     rate × elapsed seconds in total, and only the messages that were in
//     the source when it started (ApproximateNumberOfMessagesToMove).
//   - A message moved to a DLQ keeps its receive count; a move task resets
//     it to zero and clears DeadLetterQueueSourceArn.
//   - Gauge metrics (ApproximateNumberOfMessagesVisible and the like) are
//     sampled at the first Tick of each minute and reported for that minute;
//     counters (NumberOfMessagesSent and the like) are summed per minute of
//     the clock. History is kept for MetricHistory (15 days).
//   - ReceiveRequestAttemptId is accepted and ignored.
package sqsim
