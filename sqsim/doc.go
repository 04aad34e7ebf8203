// Package sqsim is an in-memory Amazon SQS and CloudWatch simulator, with
// the parts of EventBridge and Lambda that feed and drain SQS queues and the
// part of STS that reaches several accounts.
//
// A Simulator is an http.Handler that stock AWS clients use unchanged. It
// serves each service in every protocol its current and older clients
// speak, on one endpoint:
//
//   - SQS over AWS JSON 1.0 (POST / with X-Amz-Target: AmazonSQS.<Op>):
//     aws-sdk-go-v2's service/sqs, the JavaScript SDK v3, botocore 1.43 and
//     so boto3 and the aws CLI 1.x.
//   - SQS over the Query protocol (form-encoded Action=<Op>, answered in
//     XML): botocore and the aws CLI before late 2023, Debian 12's
//     python3-boto3 and awscli 2.9 among them.
//   - CloudWatch over Smithy RPC v2 CBOR (POST
//     /service/GraniteServiceVersion20100801/operation/<Op>): aws-sdk-go-v2's
//     service/cloudwatch since v1.53.
//   - CloudWatch over AWS JSON 1.0 (X-Amz-Target:
//     GraniteServiceVersion20100801.<Op>): the JavaScript SDK v3 and
//     botocore 1.43.
//   - CloudWatch over the Query protocol (Action=<Op>&Version=2010-08-01):
//     older botocore and CLIs.
//   - EventBridge over AWS JSON 1.1 (X-Amz-Target: AWSEvents.<Op>):
//     service/eventbridge.
//   - Lambda over REST-JSON (/2015-03-31/functions/...,
//     /2015-03-31/event-source-mappings/...): service/lambda.
//   - STS over the Query protocol, through Accounts (see below): every SDK.
//
// A Query request names its service by Version or, without one, by its
// Action (the two services share no operation name). A request that names
// no operation exactly (an X-Amz-Target without its service's prefix, an
// unknown or miscased operation, Action given twice with different values,
// a body of the wrong content type) is refused in its protocol's error
// shape, before anything is read or changed. So is a request addressed in
// two ways, or ambiguously, which could act on another queue than meant: an
// AWS JSON request posted anywhere but /, a Query request posted to one
// queue's URL with a QueueUrl of another, a member or parameter given twice
// (in the body, or in the URL and the body with other values), a JSON member
// spelt in another case than the service model's ("queueUrl"), a QueueUrl
// with a query, a fragment or an escaped path, and a queue's address given to
// an operation that names no queue by it (CreateQueue, StartMessageMoveTask).
// Every answer, success or
// error, carries a request id of its own in x-amzn-RequestId (and, in the
// Query protocol, in its XML's RequestId), where the SDKs read it. Point the
// clients' endpoint at an httptest.Server wrapping the simulator and give
// them static credentials; signatures are not checked.
//
// The simulator follows what AWS documents: standard and FIFO queues,
// visibility timeouts, delays, retention, dead-letter queues with
// maxReceiveCount, deduplication, message move tasks (DLQ redrive) and the
// AWS/SQS CloudWatch metrics, which it derives from its own minute-by-minute
// activity. Errors carry AWS's shapes and query-compatible codes, so the SDK
// returns its typed errors (for example *types.QueueDoesNotExist).
//
// # SQS
//
// Every operation of the SQS API is served: CreateQueue, DeleteQueue,
// GetQueueUrl, ListQueues, GetQueueAttributes, SetQueueAttributes,
// ListDeadLetterSourceQueues, TagQueue, UntagQueue, ListQueueTags,
// PurgeQueue, SendMessage, SendMessageBatch, ReceiveMessage, DeleteMessage,
// DeleteMessageBatch, ChangeMessageVisibility, ChangeMessageVisibilityBatch,
// StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask,
// AddPermission and RemovePermission. Nothing is enforced, though: a queue's
// Policy (the statements AddPermission writes, in SQS's document) and its
// encryption settings are attributes only, and any caller may do anything.
//
// # CloudWatch
//
// Served: GetMetricData, GetMetricStatistics, ListMetrics, PutMetricData,
// PutMetricAlarm, DescribeAlarms, DescribeAlarmsForMetric, DeleteAlarms and
// SetAlarmState. Not served: composite alarms, alarm history, alarm actions
// (EnableAlarmActions, DisableAlarmActions; actions never run), dashboards,
// anomaly detectors, insight rules, metric streams, tags, metric widgets.
// GetMetricData refuses metric math and Metrics Insights expressions, and
// both reads refuse extended statistics (percentiles).
//
// PutMetricData publishes metrics in any namespace but the AWS/ ones: single
// values, statistic sets, Values with Counts, with dimensions and units, at
// standard (one-minute) or high (StorageResolution 1, one-second)
// resolution, gzip-compressed or not, with CloudWatch's limits and texts. A
// metric is its namespace, name and whole set of dimensions, as in
// CloudWatch: a query must name all its dimensions. GetMetricData,
// GetMetricStatistics and ListMetrics read custom metrics as they read the
// AWS/SQS ones, in periods of 1, 5, 10, 20 or 30 seconds or any multiple of
// 60. Data is kept per unit: GetMetricStatistics answers a datapoint per
// unit, a query naming a unit reads that unit's data, and a GetMetricData
// query naming none reads all units together (CloudWatch picks one and says
// so in its Messages). High-resolution points become one-minute points after
// three hours, and every point goes after MetricHistory, as CloudWatch keeps
// them.
//
// # Regions
//
// A Simulator is one account, and serves every region of it, each a world
// of its own (queues, metrics, alarms, buses, functions, ARNs naming the
// region), by the region each request's SigV4 signature is scoped to, as
// AWS serves regions by host; an unsigned request goes to Options.Region. A
// region is created by the first request signed for it (its name must look
// like one, at most 64 regions); Region returns it, and Tick and Run move
// every region. One host serves them all, so a queue URL does not name its
// region: a client signing for another region reaches that region's queue of
// the same name, where AWS would answer NonExistentQueue.
//
// # Accounts and STS
//
// Accounts serves several accounts on one endpoint, each a Simulator with
// its regions, and the part of STS (Query protocol) a client needs to reach
// them: AssumeRole of a role added with AddRole, with STS's validation texts
// (RoleSessionName [\w+=,.@-]{2,64}, DurationSeconds 900 to 43200 and no
// more than the role's MaxSessionDuration, which is IAM's default of one
// hour, an ARN of six parts, the ExternalId the role demands), and
// GetCallerIdentity. A request signed with credentials AssumeRole issued
// goes to the role's account; any other to the first account. Issued
// credentials are not checked for expiry, and no other STS operation is
// served.
//
// # EventBridge and Lambda
//
// EventBridge: CreateEventBus, DescribeEventBus, DeleteEventBus,
// ListEventBuses, PutRule, DescribeRule, DeleteRule, ListRules,
// PutTargets, RemoveTargets, ListTargetsByRule and PutEvents. Every
// account has the default bus. PutEvents delivers each event, in
// EventBridge's envelope (version, id, detail-type, source, account, time,
// region, resources, detail), to the SQS targets of the enabled rules of
// its bus whose event pattern matches it: exact values and the prefix,
// suffix, equals-ignore-case, anything-but, exists and numeric filters,
// nested under detail and the other fields; a target's Input or InputPath
// ($.a.b) replaces the body, and a FIFO target gets its SqsParameters'
// MessageGroupId and the event id as deduplication id. A delivery that fails
// goes to the target's DeadLetterConfig queue, its body the event, with the
// message attributes EventBridge sets: RULE_ARN, TARGET_ARN, ERROR_CODE
// (NO_RESOURCE for a missing queue, SDK_CLIENT_ERROR when the queue refused
// the message, for example an event larger than its MaximumMessageSize),
// ERROR_MESSAGE (SQS's error text) and RETRY_ATTEMPTS (0: these are the
// failures EventBridge does not retry, so EXHAUSTED_RETRY_CONDITION is
// never set). Without a DLQ the event is dropped. Targets other than SQS
// queues, and scheduled rules, are kept as configuration only. Not served:
// EnableRule, DisableRule, TestEventPattern, archives and replays,
// connections and API destinations, tags.
//
// Lambda: CreateFunction, GetFunction, GetFunctionConfiguration,
// ListFunctions, DeleteFunction, CreateEventSourceMapping,
// GetEventSourceMapping, ListEventSourceMappings (by EventSourceArn and
// FunctionName),
// UpdateEventSourceMapping and DeleteEventSourceMapping, for SQS event
// sources, with Lambda's validation (batch size and window, FIFO limits,
// MaximumConcurrency 2 to 1000, one mapping per queue and function). Code is
// never run and mappings poll nothing: they are what a dashboard reads to
// judge a queue's consumers. A mapping whose queue or function has gone
// reports it in LastProcessingResult ("PROBLEM: ..."), as Lambda does. Not
// served: Invoke, versions and aliases, function updates, layers,
// permissions, event sources other than SQS.
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
//   - A QueueUrl is the queue's URL on the host the request was sent to or,
//     as SQS allows, the queue's bare name. A URL on another host names a
//     queue of another endpoint and is answered
//     AWS.SimpleQueueService.NonExistentQueue, as AWS answers a URL of
//     another region; localhost and 127.0.0.1 count as one host, since a
//     local client may use either.
//   - Standard queues deliver in send order (oldest visible first), which
//     keeps tests deterministic; AWS only promises at-least-once delivery.
//   - A move task without MaxNumberOfMessagesPerSecond moves
//     DefaultMoveRate messages per second. A task moves at most
//     rate × elapsed seconds in total, and only the messages that were in
//     the source when it started (ApproximateNumberOfMessagesToMove).
//   - A message moved to a DLQ keeps its id and receive count. A move task
//     redrives it as a new message, as SQS documents: a new message id and
//     SentTimestamp, its retention period started afresh, no receives and
//     no DeadLetterQueueSourceArn; its body, attributes and FIFO group and
//     deduplication ids stay.
//   - Gauge metrics (ApproximateNumberOfMessagesVisible and the like) are
//     sampled at the first Tick of each minute and reported for that minute;
//     counters (NumberOfMessagesSent and the like) are summed per minute of
//     the clock. History is kept for MetricHistory (15 days).
//   - A FIFO receive with a ReceiveRequestAttemptId is remembered for five
//     minutes: a retry with the same id gets the same messages and receipt
//     handles, their visibility timeout started afresh, unless one of them
//     was deleted, received again or had its visibility changed. Standard
//     queues ignore the id, as SQS does.
//   - SenderId is a principal id derived from the request's access key id
//     (PrincipalID), or the account id for unsigned requests.
//   - Alarms are evaluated at the first Tick of each minute (of each period,
//     for a high-resolution alarm's Period of 10 or 30 seconds) against the
//     simulator's metrics, AWS/SQS or custom, over the last
//     EvaluationPeriods whole periods (aligned to multiples of Period),
//     honouring DatapointsToAlarm and TreatMissingData; state, reason,
//     reason data and the state's timestamps change as CloudWatch's do.
//     Since a minute's gauge is sampled when that minute begins and read
//     once it has ended, a message arriving in a DLQ turns an
//     ApproximateNumberOfMessagesVisible alarm to ALARM one to two minutes
//     later, and a NumberOfMessagesSent alarm within one.
//   - A metric-math alarm keeps its Metrics as given, for DescribeAlarms to
//     return. It is evaluated when the one query that returns data is a
//     MetricStat; an expression is not computed, so such an alarm keeps its
//     state, as do alarms with extended statistics or anomaly bands.
//     DescribeAlarmsForMetric lists the alarms of one metric (its whole set
//     of dimensions), not metric-math ones.
package sqsim
