// The seeds' MCP tool-call patterns, run with the AWS SDK for JavaScript v3
// against the simulator at $SQSIM_ENDPOINT. $SQSIM_CLOCK, when set, is a
// test-only URL that moves the simulator's manual clock: POST ?advance=<seconds>.
// Prints one line per check and a closing "N passed, N failed"; exits 1 on any failure.
import {
  SQSClient, CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand,
  ReceiveMessageCommand, ChangeMessageVisibilityCommand, DeleteMessageCommand, SendMessageBatchCommand,
  SetQueueAttributesCommand, StartMessageMoveTaskCommand, ListMessageMoveTasksCommand,
  CancelMessageMoveTaskCommand, GetQueueUrlCommand, QueueDoesNotExist,
} from "@aws-sdk/client-sqs";
import {
  CloudWatchClient, GetMetricDataCommand, PutMetricAlarmCommand, DescribeAlarmsCommand,
  ListMetricsCommand, DeleteAlarmsCommand, PutMetricDataCommand,
} from "@aws-sdk/client-cloudwatch";

const endpoint = process.env.SQSIM_ENDPOINT;
const clockURL = process.env.SQSIM_CLOCK;
const config = {
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDJSCLIENT", secretAccessKey: "secret" },
};
const sqs = new SQSClient(config);
const cw = new CloudWatchClient(config);

let passed = 0, failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.name ?? ""} ${err?.message ?? err}`);
  }
}
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
async function advance(seconds) {
  expect(clockURL, "no SQSIM_CLOCK to move the clock");
  const r = await fetch(`${clockURL}?advance=${seconds}`, { method: "POST" });
  expect(r.ok, `clock: ${r.status}`);
}

const run = Date.now().toString(36);
const name = (n) => `${n}-${run}`;
const toolCall = (sessionId, seq, toolName) => JSON.stringify({
  toolCallId: `tc_${sessionId}_${seq}`, toolName, toolArgs: { q: "x" }, sessionId, sequenceNumber: seq,
});

let dlqUrl, dlqArn, fifoUrl, stdUrl, stdDlqUrl, stdDlqArn;

await check("create a FIFO DLQ and a FIFO source with a RedrivePolicy", async () => {
  dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name("tools-dlq") + ".fifo", Attributes: { FifoQueue: "true", MessageRetentionPeriod: "1209600" } }))).QueueUrl;
  dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
  fifoUrl = (await sqs.send(new CreateQueueCommand({
    QueueName: name("tools") + ".fifo",
    Attributes: { FifoQueue: "true", VisibilityTimeout: "360", RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }) },
  }))).QueueUrl;
  expect(fifoUrl.endsWith(".fifo"), fifoUrl);
});

await check("RedrivePolicy reads back as JSON", async () => {
  const a = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: fifoUrl, AttributeNames: ["All"] }))).Attributes;
  const p = JSON.parse(a.RedrivePolicy);
  expect(p.deadLetterTargetArn === dlqArn && Number(p.maxReceiveCount) === 2, a.RedrivePolicy);
  expect(a.FifoQueue === "true" && a.VisibilityTimeout === "360", JSON.stringify(a));
});

await check("a FIFO source with a standard DLQ is refused with AWS's text", async () => {
  stdDlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: name("std-dlq") }))).QueueUrl;
  stdDlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: stdDlqUrl, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
  try {
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: fifoUrl, Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: stdDlqArn, maxReceiveCount: 3 }) } }));
  } catch (err) {
    expect(err.name === "InvalidParameterValue" || err.Code === "InvalidParameterValue", `error ${err.name}`);
    expect(err.message.endsWith("Reason: Dead-letter queue must be same type of queue as the source.."), err.message);
    expect(err.$metadata.httpStatusCode === 400, `status ${err.$metadata.httpStatusCode}`);
    return;
  }
  throw new Error("accepted");
});

const sent = {};
await check("FIFO send: MessageGroupId = sessionId, MessageDeduplicationId = toolCallId", async () => {
  for (const [session, seq, tool] of [["sess_a", 1, "create_document"], ["sess_a", 2, "append_section"], ["sess_b", 1, "web_search"]]) {
    const out = await sqs.send(new SendMessageCommand({
      QueueUrl: fifoUrl, MessageBody: toolCall(session, seq, tool), MessageGroupId: session,
      MessageDeduplicationId: `tc_${session}_${seq}`,
      MessageAttributes: { toolName: { DataType: "String", StringValue: tool } },
    }));
    expect(out.MessageId && out.SequenceNumber && out.MD5OfMessageBody, JSON.stringify(out));
    sent[`${session}/${seq}`] = out.MessageId;
  }
});

await check("a retried send with the same toolCallId is deduplicated", async () => {
  const out = await sqs.send(new SendMessageCommand({ QueueUrl: fifoUrl, MessageBody: toolCall("sess_a", 1, "create_document"), MessageGroupId: "sess_a", MessageDeduplicationId: "tc_sess_a_1" }));
  expect(out.MessageId === sent["sess_a/1"], `${out.MessageId} != ${sent["sess_a/1"]}`);
  const a = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: fifoUrl, AttributeNames: ["ApproximateNumberOfMessages"] }))).Attributes;
  expect(a.ApproximateNumberOfMessages === "3", `depth ${a.ApproximateNumberOfMessages}`);
});

let first;
await check("receive with all attributes: one session's calls in order", async () => {
  // A receive prefers one group's messages; asking for two gets the first session's two.
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 2, MessageSystemAttributeNames: ["All"], MessageAttributeNames: ["All"], ReceiveRequestAttemptId: `attempt-${run}` }));
  first = out.Messages ?? [];
  const seqs = first.map((m) => JSON.parse(m.Body).sequenceNumber);
  const groups = new Set(first.map((m) => m.Attributes.MessageGroupId));
  expect(first.length === 2 && groups.size === 1 && groups.has("sess_a") && seqs.join() === "1,2", `got ${first.length} ${[...groups]} ${seqs}`);
  const a = first[0].Attributes;
  expect(a.MessageDeduplicationId === "tc_sess_a_1" && a.ApproximateReceiveCount === "1" && a.SequenceNumber && a.SentTimestamp && a.ApproximateFirstReceiveTimestamp, JSON.stringify(a));
  expect(/^AIDA[A-Z2-7]{17}$/.test(a.SenderId), `SenderId ${a.SenderId}`);
  expect(first[0].MessageAttributes.toolName.StringValue === "create_document", JSON.stringify(first[0].MessageAttributes));
});

await check("a retried receive with the same ReceiveRequestAttemptId gets the same messages and handles", async () => {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 2, ReceiveRequestAttemptId: `attempt-${run}` }));
  const again = out.Messages ?? [];
  expect(again.length === first.length && again.every((m, i) => m.ReceiptHandle === first[i].ReceiptHandle && m.MessageId === first[i].MessageId), `got ${again.length}`);
});

await check("the session in flight is locked; the other session is delivered", async () => {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["MessageGroupId"] }));
  const msgs = out.Messages ?? [];
  expect(msgs.length === 1 && msgs[0].Attributes.MessageGroupId === "sess_b", `got ${msgs.map((m) => m.Attributes.MessageGroupId)}`);
  await sqs.send(new DeleteMessageCommand({ QueueUrl: fifoUrl, ReceiptHandle: msgs[0].ReceiptHandle }));
});

await check("receive counts grow with each receive", async () => {
  for (const m of first) {
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: fifoUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
  }
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["ApproximateReceiveCount"] }));
  const counts = (out.Messages ?? []).map((m) => m.Attributes.ApproximateReceiveCount);
  expect(counts.join() === "2,2", `counts ${counts}`);
  for (const m of out.Messages) {
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: fifoUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
  }
});

await check("past maxReceiveCount the session's calls move to the DLQ, in order", async () => {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: fifoUrl, MaxNumberOfMessages: 10 }));
  expect((out.Messages ?? []).length === 0, `source still delivered ${(out.Messages ?? []).length}`);
  const d = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["All"], VisibilityTimeout: 0 }));
  const msgs = d.Messages ?? [];
  expect(msgs.length === 2, `dlq has ${msgs.length}`);
  expect(msgs.map((m) => JSON.parse(m.Body).sequenceNumber).join() === "1,2", "order");
  expect(msgs[0].Attributes.DeadLetterQueueSourceArn.endsWith(":" + name("tools") + ".fifo"), msgs[0].Attributes.DeadLetterQueueSourceArn);
});

let taskHandle;
await check("move task: start, list RUNNING, cancel", async () => {
  const srcArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: fifoUrl, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
  taskHandle = (await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn, DestinationArn: srcArn, MaxNumberOfMessagesPerSecond: 1 }))).TaskHandle;
  expect(taskHandle, "no handle");
  const listed = (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn, MaxResults: 10 }))).Results;
  expect(listed.length === 1 && listed[0].Status === "RUNNING" && listed[0].ApproximateNumberOfMessagesToMove === 2, JSON.stringify(listed));
  await sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle: taskHandle }));
  const after = (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results;
  expect(["CANCELLING", "CANCELLED"].includes(after[0].Status), after[0].Status);
});

await check("a missing queue is the typed QueueDoesNotExist", async () => {
  try {
    await sqs.send(new GetQueueUrlCommand({ QueueName: name("nope") }));
  } catch (err) {
    expect(err instanceof QueueDoesNotExist, `${err.name}`);
    return;
  }
  throw new Error("found");
});

const dlqName = dlqUrl.split("/").pop();
await check("PutMetricAlarm: the seeds' DLQ alarm", async () => {
  await cw.send(new PutMetricAlarmCommand({
    AlarmName: `${dlqName}-depth`, Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible",
    Dimensions: [{ Name: "QueueName", Value: dlqName }], Statistic: "Maximum", Period: 60, EvaluationPeriods: 1,
    Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold", TreatMissingData: "notBreaching",
  }));
  const a = (await cw.send(new DescribeAlarmsCommand({ AlarmNames: [`${dlqName}-depth`] }))).MetricAlarms;
  expect(a.length === 1 && a[0].StateValue === "INSUFFICIENT_DATA" && a[0].Threshold === 1, JSON.stringify(a));
});

if (clockURL) {
  await check("DescribeAlarms: the DLQ alarm fires once a minute of data shows the messages", async () => {
    await advance(60);
    await advance(60);
    const a = (await cw.send(new DescribeAlarmsCommand({ AlarmNames: [`${dlqName}-depth`], StateValue: "ALARM" }))).MetricAlarms;
    expect(a.length === 1 && a[0].StateReason.startsWith("Threshold Crossed: 1 datapoint [2.0"), JSON.stringify(a));
    expect(a[0].StateUpdatedTimestamp instanceof Date, typeof a[0].StateUpdatedTimestamp);
  });

  await check("GetMetricData: the FIFO queue's sends per minute", async () => {
    const now = Date.now();
    const out = await cw.send(new GetMetricDataCommand({
      StartTime: new Date(now - 3600e3), EndTime: new Date(now + 3600e3),
      MetricDataQueries: [{
        Id: "sent", MetricStat: {
          Metric: { Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent", Dimensions: [{ Name: "QueueName", Value: name("tools") + ".fifo" }] },
          Period: 60, Stat: "Sum",
        },
      }],
    }));
    const r = out.MetricDataResults[0];
    const total = r.Values.reduce((a, b) => a + b, 0);
    expect(r.StatusCode === "Complete" && total === 3 && r.Timestamps.every((t) => t instanceof Date), `sum ${total} ${JSON.stringify(r)} ${now}`);
  });
}

await check("ListMetrics names the queues' metrics", async () => {
  const out = await cw.send(new ListMetricsCommand({ Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent" }));
  expect(out.Metrics.some((m) => m.Dimensions[0].Value === dlqName), `${out.Metrics.length} metrics`);
});

await check("a CloudWatch error is typed", async () => {
  try {
    await cw.send(new DeleteAlarmsCommand({ AlarmNames: [`${dlqName}-missing`] }));
  } catch (err) {
    expect(err.name === "ResourceNotFound", err.name);
    return;
  }
  throw new Error("deleted");
});

await check("a FIFO send with DelaySeconds 0, as worker wrappers pass it, is accepted; a positive one is refused", async () => {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name("zero-delay") + ".fifo", Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" } }))).QueueUrl;
  await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "one", MessageGroupId: "g", DelaySeconds: 0 }));
  const b = await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [
    { Id: "zero", MessageBody: "two", MessageGroupId: "g", DelaySeconds: 0 },
    { Id: "five", MessageBody: "three", MessageGroupId: "g", DelaySeconds: 5 }] }));
  expect(b.Successful.length === 1 && b.Successful[0].Id === "zero", JSON.stringify(b.Successful));
  expect(b.Failed.length === 1 && b.Failed[0].Id === "five" && b.Failed[0].Code === "InvalidParameterValue", JSON.stringify(b.Failed));
});

await check("every answer has its own request id, as $metadata.requestId reads it", async () => {
  const ids = [];
  ids.push((await sqs.send(new GetQueueAttributesCommand({ QueueUrl: fifoUrl, AttributeNames: ["QueueArn"] }))).$metadata.requestId);
  ids.push((await cw.send(new DescribeAlarmsCommand({}))).$metadata.requestId);
  try {
    await sqs.send(new GetQueueUrlCommand({ QueueName: name("nope") }));
  } catch (err) {
    ids.push(err.$metadata.requestId);
  }
  try {
    await cw.send(new DeleteAlarmsCommand({ AlarmNames: [name("nope")] }));
  } catch (err) {
    ids.push(err.$metadata.requestId);
  }
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  expect(ids.length === 4 && ids.every((id) => uuid.test(id)) && new Set(ids).size === 4, JSON.stringify(ids));
});

await check("a queue's name is taken where its URL is asked for; another region's URL is NonExistentQueue", async () => {
  const queueName = name("by-name");
  await sqs.send(new CreateQueueCommand({ QueueName: queueName }));
  const out = await sqs.send(new SendMessageCommand({ QueueUrl: queueName, MessageBody: "by name" }));
  expect(out.MessageId, JSON.stringify(out));
  try {
    await sqs.send(new SendMessageCommand({ QueueUrl: `https://sqs.eu-west-1.amazonaws.com/000000000000/${queueName}`, MessageBody: "x" }));
  } catch (err) {
    expect(err instanceof QueueDoesNotExist && err.$metadata.httpStatusCode === 400, `${err.name} ${err.$metadata.httpStatusCode}`);
    return;
  }
  throw new Error("sent to another region's queue URL");
});

await check("an MCP server's own latency: PutMetricData at high resolution, read in one-second periods", async () => {
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const ns = name("mcp");
  await cw.send(new PutMetricDataCommand({ Namespace: ns, MetricData: [
    { MetricName: "latency", Timestamp: now, Value: 250, Unit: "Milliseconds", StorageResolution: 1, Dimensions: [{ Name: "tool", Value: "web_search" }] },
    { MetricName: "latency", Timestamp: new Date(now.getTime() + 1000), Value: 120, Unit: "Milliseconds", StorageResolution: 1, Dimensions: [{ Name: "tool", Value: "web_search" }] }] }));
  const out = await cw.send(new GetMetricDataCommand({
    StartTime: new Date(now.getTime() - 60e3), EndTime: new Date(now.getTime() + 60e3), ScanBy: "TimestampAscending",
    MetricDataQueries: [{ Id: "latency", MetricStat: { Metric: { Namespace: ns, MetricName: "latency", Dimensions: [{ Name: "tool", Value: "web_search" }] }, Period: 1, Stat: "Maximum" } }],
  }));
  const r = out.MetricDataResults[0];
  expect(r.Values.join() === "250,120" && r.Timestamps[0].getTime() === now.getTime(), JSON.stringify(r));
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
