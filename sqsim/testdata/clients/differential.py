"""One boto3 script for two endpoints: the simulator and moto server.

Runs the same SQS and CloudWatch calls against $SQSIM_ENDPOINT and prints, as
one JSON object, each step's answer with what legitimately differs between two
endpoints (account ids, hosts, message ids, receipt handles, timestamps) replaced
by placeholders. The Go test compares the two transcripts against the allowlist
in moto_differences.txt.
"""

import datetime
import json
import os
import re
import sys

import boto3
import botocore
from botocore.config import Config

endpoint = os.environ["SQSIM_ENDPOINT"]
session = boto3.session.Session(aws_access_key_id="AKIDDIFF", aws_secret_access_key="secret", region_name="us-east-1")
config = Config(retries={"max_attempts": 1, "mode": "standard"})
sqs = session.client("sqs", endpoint_url=endpoint, config=config)
cw = session.client("cloudwatch", endpoint_url=endpoint, config=config)
sts = session.client("sts", endpoint_url=endpoint, config=config)
lam = session.client("lambda", endpoint_url=endpoint, config=config)

ACCOUNT = re.compile(r"\b(000000000000|123456789012)\b")
ID_KEYS = {"MessageId", "ReceiptHandle", "SequenceNumber", "TaskHandle", "SenderId", "AlarmArn", "UserId",
           "RevisionId", "CodeSha256"}
TIME_KEYS = {"CreatedTimestamp", "LastModifiedTimestamp", "SentTimestamp", "ApproximateFirstReceiveTimestamp",
             "AlarmConfigurationUpdatedTimestamp", "StateUpdatedTimestamp", "StateTransitionedTimestamp", "StartedTimestamp",
             "LastModified"}


def normalize(v, key=None):
    if isinstance(v, dict):
        return {k: normalize(x, k) for k, x in sorted(v.items()) if k != "ResponseMetadata"}
    if isinstance(v, list):
        return [normalize(x) for x in v]
    if key in ID_KEYS:
        return "<%s>" % key
    if key in TIME_KEYS or isinstance(v, datetime.datetime):
        return "<time>"
    if isinstance(v, str):
        v = v.replace(endpoint, "<endpoint>")
        v = re.sub(r"https?://[^/\s\"]+", "<endpoint>", v)
        return ACCOUNT.sub("<account>", v)
    return v


transcript = {}


def step(name, fn):
    try:
        out = fn()
        transcript[name] = {"ok": normalize(out)}
    except botocore.exceptions.ClientError as err:
        e = err.response.get("Error", {})
        transcript[name] = {"error": e.get("Code"), "message": normalize(e.get("Message"))}
    except Exception as err:  # the client refused the answer itself
        transcript[name] = {"client-error": type(err).__name__}


q = {}


def create(name, **attrs):
    url = sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]
    q[name] = url
    return url


def arn(name):
    return sqs.get_queue_attributes(QueueUrl=q[name], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


step("create_queue.standard", lambda: {"QueueUrl": create("diff-calls")})
step("create_queue.dlq", lambda: {"QueueUrl": create("diff-calls-dlq", MessageRetentionPeriod="1209600")})
step("create_queue.fifo", lambda: {"QueueUrl": create("diff-calls.fifo", FifoQueue="true", ContentBasedDeduplication="false")})
step("create_queue.fifo_dlq", lambda: {"QueueUrl": create("diff-calls-dlq.fifo", FifoQueue="true")})
step("create_queue.same_attributes", lambda: sqs.create_queue(QueueName="diff-calls-dlq", Attributes={"MessageRetentionPeriod": "1209600"}))
step("create_queue.other_attributes", lambda: sqs.create_queue(QueueName="diff-calls-dlq", Attributes={"MessageRetentionPeriod": "60"}))
step("create_queue.fifo_name_without_attribute", lambda: sqs.create_queue(QueueName="diff-bad.fifo"))
step("create_queue.bad_name", lambda: sqs.create_queue(QueueName="diff bad"))
step("get_queue_url", lambda: sqs.get_queue_url(QueueName="diff-calls"))
step("get_queue_url.missing", lambda: sqs.get_queue_url(QueueName="diff-nope"))
step("list_queues.prefix", lambda: sqs.list_queues(QueueNamePrefix="diff-calls-dlq"))
step("set_queue_attributes.redrive", lambda: sqs.set_queue_attributes(QueueUrl=q["diff-calls"], Attributes={
    "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn("diff-calls-dlq"), "maxReceiveCount": 2}), "VisibilityTimeout": "60"}))
step("set_queue_attributes.fifo_redrive", lambda: sqs.set_queue_attributes(QueueUrl=q["diff-calls.fifo"], Attributes={
    "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn("diff-calls-dlq.fifo"), "maxReceiveCount": "3"})}))
step("set_queue_attributes.type_mismatch", lambda: sqs.set_queue_attributes(QueueUrl=q["diff-calls.fifo"], Attributes={
    "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn("diff-calls-dlq"), "maxReceiveCount": 3})}))
step("set_queue_attributes.out_of_range", lambda: sqs.set_queue_attributes(QueueUrl=q["diff-calls"], Attributes={"VisibilityTimeout": "43201"}))
step("set_queue_attributes.unknown", lambda: sqs.set_queue_attributes(QueueUrl=q["diff-calls"], Attributes={"Colour": "blue"}))
step("get_queue_attributes.standard", lambda: sqs.get_queue_attributes(QueueUrl=q["diff-calls"], AttributeNames=["All"]))
step("get_queue_attributes.fifo", lambda: sqs.get_queue_attributes(QueueUrl=q["diff-calls.fifo"], AttributeNames=["All"]))
step("get_queue_attributes.unknown", lambda: sqs.get_queue_attributes(QueueUrl=q["diff-calls"], AttributeNames=["Colour"]))
step("list_dead_letter_source_queues", lambda: sqs.list_dead_letter_source_queues(QueueUrl=q["diff-calls-dlq"]))
step("send_message", lambda: sqs.send_message(QueueUrl=q["diff-calls"], MessageBody='{"toolCallId":"tc_1","toolName":"web_search"}',
                                               MessageAttributes={"toolName": {"DataType": "String", "StringValue": "web_search"}}))
step("send_message.delay_out_of_range", lambda: sqs.send_message(QueueUrl=q["diff-calls"], MessageBody="x", DelaySeconds=901))
step("send_message.too_large", lambda: sqs.send_message(QueueUrl=q["diff-calls"], MessageBody="x" * (1024 * 1024 + 1)))
step("send_message.fifo", lambda: sqs.send_message(QueueUrl=q["diff-calls.fifo"], MessageBody='{"toolCallId":"tc_2"}',
                                                    MessageGroupId="sess_a", MessageDeduplicationId="tc_2"))
step("send_message.fifo_dedup", lambda: sqs.send_message(QueueUrl=q["diff-calls.fifo"], MessageBody='{"toolCallId":"tc_2"}',
                                                          MessageGroupId="sess_a", MessageDeduplicationId="tc_2"))
step("send_message.fifo_no_group", lambda: sqs.send_message(QueueUrl=q["diff-calls.fifo"], MessageBody="x", MessageDeduplicationId="d"))
step("send_message.fifo_no_dedup", lambda: sqs.send_message(QueueUrl=q["diff-calls.fifo"], MessageBody="x", MessageGroupId="g"))
step("send_message_batch", lambda: sqs.send_message_batch(QueueUrl=q["diff-calls"], Entries=[
    {"Id": "a", "MessageBody": "one"}, {"Id": "b", "MessageBody": "two", "DelaySeconds": 901}]))
step("send_message_batch.duplicate_ids", lambda: sqs.send_message_batch(QueueUrl=q["diff-calls"], Entries=[
    {"Id": "a", "MessageBody": "one"}, {"Id": "a", "MessageBody": "two"}]))
step("send_message_batch.empty", lambda: sqs.send_message_batch(QueueUrl=q["diff-calls"], Entries=[]))
received = {}


def receive(name, **kw):
    out = sqs.receive_message(QueueUrl=q[name], **kw)
    received[name] = out.get("Messages", [])
    return out


step("receive_message", lambda: receive("diff-calls", MaxNumberOfMessages=1, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]))
step("receive_message.max_11", lambda: sqs.receive_message(QueueUrl=q["diff-calls"], MaxNumberOfMessages=11))
step("receive_message.fifo", lambda: receive("diff-calls.fifo", MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]))
step("change_message_visibility", lambda: sqs.change_message_visibility(
    QueueUrl=q["diff-calls"], ReceiptHandle=received["diff-calls"][0]["ReceiptHandle"], VisibilityTimeout=0))
step("change_message_visibility.out_of_range", lambda: sqs.change_message_visibility(
    QueueUrl=q["diff-calls"], ReceiptHandle=received["diff-calls"][0]["ReceiptHandle"], VisibilityTimeout=43201))
step("delete_message", lambda: sqs.delete_message(QueueUrl=q["diff-calls.fifo"], ReceiptHandle=received["diff-calls.fifo"][0]["ReceiptHandle"]))
step("delete_message.garbled_receipt", lambda: sqs.delete_message(QueueUrl=q["diff-calls"], ReceiptHandle="garbled"))
step("delete_message_batch", lambda: sqs.delete_message_batch(QueueUrl=q["diff-calls"], Entries=[{"Id": "x", "ReceiptHandle": "garbled"}]))
step("tag_queue", lambda: sqs.tag_queue(QueueUrl=q["diff-calls"], Tags={"team": "mcp"}))
step("list_queue_tags", lambda: sqs.list_queue_tags(QueueUrl=q["diff-calls"]))
step("untag_queue", lambda: sqs.untag_queue(QueueUrl=q["diff-calls"], TagKeys=["team"]))
step("purge_queue", lambda: sqs.purge_queue(QueueUrl=q["diff-calls"]))
step("get_queue_attributes.after_purge", lambda: sqs.get_queue_attributes(QueueUrl=q["diff-calls"], AttributeNames=["ApproximateNumberOfMessages"]))
step("start_message_move_task.empty_dlq", lambda: sqs.start_message_move_task(SourceArn=arn("diff-calls-dlq")))
step("list_message_move_tasks", lambda: sqs.list_message_move_tasks(SourceArn=arn("diff-calls-dlq")))
step("delete_queue", lambda: sqs.delete_queue(QueueUrl=q["diff-calls-dlq.fifo"]))
step("delete_queue.missing", lambda: sqs.delete_queue(QueueUrl=q["diff-calls-dlq.fifo"]))

alarm = dict(AlarmName="diff-calls-dlq-depth", Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible",
             Dimensions=[{"Name": "QueueName", "Value": "diff-calls-dlq"}], Statistic="Maximum", Period=60,
             EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanOrEqualToThreshold")
step("put_metric_alarm", lambda: cw.put_metric_alarm(**alarm))
step("put_metric_alarm.bad_operator", lambda: cw.put_metric_alarm(**dict(alarm, AlarmName="diff-bad", ComparisonOperator="Sideways")))
step("describe_alarms", lambda: cw.describe_alarms(AlarmNames=["diff-calls-dlq-depth"]))
step("describe_alarms.by_state", lambda: cw.describe_alarms(StateValue="ALARM"))
step("delete_alarms.missing", lambda: cw.delete_alarms(AlarmNames=["diff-nope"]))
step("delete_alarms", lambda: cw.delete_alarms(AlarmNames=["diff-calls-dlq-depth"]))
now = datetime.datetime.now(datetime.timezone.utc)
step("get_metric_data.unknown_queue", lambda: cw.get_metric_data(
    StartTime=now - datetime.timedelta(minutes=10), EndTime=now, MetricDataQueries=[{"Id": "sent", "MetricStat": {
        "Metric": {"Namespace": "AWS/SQS", "MetricName": "NumberOfMessagesSent", "Dimensions": [{"Name": "QueueName", "Value": "diff-nope"}]},
        "Period": 60, "Stat": "Sum"}}]))
step("get_metric_data.bad_id", lambda: cw.get_metric_data(
    StartTime=now - datetime.timedelta(minutes=10), EndTime=now, MetricDataQueries=[{"Id": "Sent", "MetricStat": {
        "Metric": {"Namespace": "AWS/SQS", "MetricName": "NumberOfMessagesSent"}, "Period": 60, "Stat": "Sum"}}]))

# Issue 27: what worker code and AWS-verified cases found the simulator answering otherwise.
step("send_message.fifo_delay_zero", lambda: sqs.send_message(QueueUrl=q["diff-calls.fifo"], MessageBody="zero", MessageGroupId="g0",
                                                               MessageDeduplicationId="zero", DelaySeconds=0))
step("send_message_batch.fifo_delays", lambda: sqs.send_message_batch(QueueUrl=q["diff-calls.fifo"], Entries=[
    {"Id": "zero", "MessageBody": "z", "MessageGroupId": "g0", "MessageDeduplicationId": "z", "DelaySeconds": 0},
    {"Id": "five", "MessageBody": "f", "MessageGroupId": "g0", "MessageDeduplicationId": "f", "DelaySeconds": 5}]))
step("send_message_batch.bad_id", lambda: sqs.send_message_batch(QueueUrl=q["diff-calls"], Entries=[{"Id": "a b", "MessageBody": "x"}]))
step("send_message.queue_name_as_url", lambda: sqs.send_message(QueueUrl="diff-calls", MessageBody="by name"))
step("send_message.other_region_url", lambda: sqs.send_message(QueueUrl="https://sqs.eu-west-1.amazonaws.com/000000000000/diff-calls", MessageBody="x"))
step("add_permission", lambda: sqs.add_permission(QueueUrl=q["diff-calls"], Label="diffperm", AWSAccountIds=["000000000000", "668614515564"],
                                                  Actions=["ReceiveMessage"]))
step("add_permission.same_label", lambda: sqs.add_permission(QueueUrl=q["diff-calls"], Label="diffperm", AWSAccountIds=["000000000000"],
                                                             Actions=["ReceiveMessage"]))
step("add_permission.owner_action", lambda: sqs.add_permission(QueueUrl=q["diff-calls"], Label="other", AWSAccountIds=["000000000000"],
                                                               Actions=["DeleteQueue"]))
step("get_queue_attributes.policy", lambda: {"Policy": json.loads(sqs.get_queue_attributes(
    QueueUrl=q["diff-calls"], AttributeNames=["Policy"])["Attributes"]["Policy"])})
step("remove_permission", lambda: sqs.remove_permission(QueueUrl=q["diff-calls"], Label="diffperm"))
step("remove_permission.missing", lambda: sqs.remove_permission(QueueUrl=q["diff-calls"], Label="diffperm"))
step("get_queue_attributes.policy_removed", lambda: sqs.get_queue_attributes(QueueUrl=q["diff-calls"], AttributeNames=["Policy"]))

step("sts.get_caller_identity", lambda: sts.get_caller_identity())
step("sts.assume_role.bad_session_name", lambda: sts.assume_role(RoleArn="arn:aws:iam::000000000000:role/diff", RoleSessionName="my session!"))
# Setup, not a step: moto looks the function's role up in its IAM, which the simulator does not
# serve (it answers InvalidAction, ignored here).
try:
    session.client("iam", endpoint_url=endpoint, config=config).create_role(
        RoleName="diff-worker", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}))
except botocore.exceptions.ClientError:
    pass
step("lambda.create_function", lambda: {"FunctionArn": lam.create_function(
    FunctionName="diff-worker", Runtime="python3.12", Role="arn:aws:iam::123456789012:role/diff-worker", Handler="index.handler",
    Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})["FunctionArn"]})
step("lambda.list_functions", lambda: {"FunctionNames": [f["FunctionName"] for f in lam.list_functions()["Functions"]]})

metric_now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
span = dict(StartTime=metric_now - datetime.timedelta(minutes=5), EndTime=metric_now + datetime.timedelta(minutes=5))
tool = [{"Name": "tool", "Value": "web_search"}]
step("put_metric_data", lambda: cw.put_metric_data(Namespace="diff/mcp", MetricData=[
    {"MetricName": "calls", "Timestamp": metric_now, "Values": [1.0, 10.0], "Counts": [2, 4], "Unit": "Count"},
    {"MetricName": "latency", "Timestamp": metric_now, "Value": 250.0, "Unit": "Milliseconds", "StorageResolution": 1, "Dimensions": tool}]))
step("put_metric_data.value_and_values", lambda: cw.put_metric_data(Namespace="diff/mcp", MetricData=[
    {"MetricName": "calls", "Value": 1.5, "Values": [1.0, 10.0]}]))
step("put_metric_data.counts_of_another_size", lambda: cw.put_metric_data(Namespace="diff/mcp", MetricData=[
    {"MetricName": "calls", "Values": [1.0, 10.0], "Counts": [2, 4, 5]}]))
step("put_metric_data.aws_namespace", lambda: cw.put_metric_data(Namespace="AWS/SQS", MetricData=[{"MetricName": "calls", "Value": 1.0}]))
step("get_metric_statistics.custom", lambda: cw.get_metric_statistics(Namespace="diff/mcp", MetricName="calls", Period=60,
                                                                      Statistics=["SampleCount", "Sum", "Maximum"], **span))
step("get_metric_data.high_resolution", lambda: cw.get_metric_data(MetricDataQueries=[{"Id": "latency", "MetricStat": {
    "Metric": {"Namespace": "diff/mcp", "MetricName": "latency", "Dimensions": tool}, "Period": 1, "Stat": "Maximum"}}], **span))
step("list_metrics.custom", lambda: cw.list_metrics(Namespace="diff/mcp"))
step("put_metric_alarm.custom", lambda: cw.put_metric_alarm(AlarmName="diff-latency", Namespace="diff/mcp", MetricName="latency",
                                                            Dimensions=tool, Statistic="Maximum", Period=60, EvaluationPeriods=1,
                                                            Threshold=200.0, ComparisonOperator="GreaterThanThreshold"))
step("describe_alarms_for_metric", lambda: {"AlarmNames": [a["AlarmName"] for a in cw.describe_alarms_for_metric(
    Namespace="diff/mcp", MetricName="latency", Dimensions=tool)["MetricAlarms"]]})
math = [{"Id": "rate", "Expression": "100 * errors / calls", "Label": "error rate", "ReturnData": True},
        {"Id": "errors", "MetricStat": {"Metric": {"Namespace": "diff/mcp", "MetricName": "errors", "Dimensions": tool}, "Period": 60, "Stat": "Sum"},
         "ReturnData": False},
        {"Id": "calls", "MetricStat": {"Metric": {"Namespace": "diff/mcp", "MetricName": "calls", "Dimensions": tool}, "Period": 60, "Stat": "Sum"},
         "ReturnData": False}]
step("put_metric_alarm.metric_math", lambda: cw.put_metric_alarm(AlarmName="diff-error-rate", Metrics=math, EvaluationPeriods=1,
                                                                 Threshold=5.0, ComparisonOperator="GreaterThanThreshold"))
step("describe_alarms.metric_math", lambda: {"Metrics": cw.describe_alarms(AlarmNames=["diff-error-rate"])["MetricAlarms"][0].get("Metrics")})

json.dump(transcript, sys.stdout, indent=1, sort_keys=True)
print()
