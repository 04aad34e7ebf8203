"""The seeds' MCP tool-call patterns, run with boto3 against the simulator.

The endpoint is $SQSIM_ENDPOINT; $SQSIM_CLOCK, when set, is a test-only URL that
moves the simulator's manual clock (POST ?advance=<seconds>). botocore 1.43 speaks
AWS JSON 1.0 to SQS and CloudWatch; Debian's python3-boto3 (botocore 1.29) speaks
the Query protocol to both. Prints one line per check and a closing
"N passed, N failed"; exits 1 on any failure.
"""

import datetime
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.config import Config

endpoint = os.environ["SQSIM_ENDPOINT"]
clock_url = os.environ.get("SQSIM_CLOCK")
session = boto3.session.Session(aws_access_key_id="AKIDBOTO3", aws_secret_access_key="secret", region_name="us-east-1")
config = Config(retries={"max_attempts": 1, "mode": "standard"})
sqs = session.client("sqs", endpoint_url=endpoint, config=config)
cw = session.client("cloudwatch", endpoint_url=endpoint, config=config)
sts = session.client("sts", endpoint_url=endpoint, config=config)
lam = session.client("lambda", endpoint_url=endpoint, config=config)
events = session.client("events", endpoint_url=endpoint, config=config)

passed = failed = skipped = 0


def check(name, needs=None):
    def run(fn):
        global passed, failed, skipped
        if needs and not hasattr(sqs, needs):
            skipped += 1
            print("skip %s: botocore %s has no %s" % (name, botocore.__version__, needs))
            return fn
        try:
            fn()
            passed += 1
            print("ok   " + name)
        except Exception as err:  # a failed check is reported, the others go on
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(err).__name__, err))
        return fn
    return run


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def advance(seconds):
    expect(clock_url, "no SQSIM_CLOCK to move the clock")
    urllib.request.urlopen(urllib.request.Request("%s?advance=%d" % (clock_url, seconds), method="POST")).read()


run = "%x" % int(time.time() * 1000)


def name(n):
    return "%s-%s" % (n, run)


def tool_call(session_id, seq, tool):
    return json.dumps({"toolCallId": "tc_%s_%d" % (session_id, seq), "toolName": tool, "toolArgs": {"q": "x"},
                       "sessionId": session_id, "sequenceNumber": seq})


state = {}


@check("create a FIFO DLQ and a FIFO source with a RedrivePolicy")
def _():
    state["dlq"] = sqs.create_queue(QueueName=name("tools-dlq") + ".fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    state["dlq_arn"] = sqs.get_queue_attributes(QueueUrl=state["dlq"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    state["src"] = sqs.create_queue(QueueName=name("tools") + ".fifo", Attributes={
        "FifoQueue": "true", "VisibilityTimeout": "360",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": state["dlq_arn"], "maxReceiveCount": 2})})["QueueUrl"]


@check("RedrivePolicy reads back as JSON")
def _():
    a = sqs.get_queue_attributes(QueueUrl=state["src"], AttributeNames=["All"])["Attributes"]
    p = json.loads(a["RedrivePolicy"])
    expect(p["deadLetterTargetArn"] == state["dlq_arn"] and int(p["maxReceiveCount"]) == 2, a["RedrivePolicy"])


@check("a FIFO source with a standard DLQ is refused with AWS's text")
def _():
    std = sqs.create_queue(QueueName=name("std-dlq"))["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=std, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    try:
        sqs.set_queue_attributes(QueueUrl=state["src"], Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})})
    except botocore.exceptions.ClientError as err:
        e = err.response["Error"]
        expect(e["Code"] == "InvalidParameterValue", e)
        expect(e["Message"].endswith("Reason: Dead-letter queue must be same type of queue as the source.."), e["Message"])
        return
    raise AssertionError("accepted")


@check("FIFO send: MessageGroupId = sessionId, MessageDeduplicationId = toolCallId; a retry is deduplicated")
def _():
    ids = {}
    for session_id, seq, tool in [("sess_a", 1, "create_document"), ("sess_a", 2, "append_section"), ("sess_b", 1, "web_search")]:
        out = sqs.send_message(QueueUrl=state["src"], MessageBody=tool_call(session_id, seq, tool), MessageGroupId=session_id,
                               MessageDeduplicationId="tc_%s_%d" % (session_id, seq),
                               MessageAttributes={"toolName": {"DataType": "String", "StringValue": tool}})
        ids[(session_id, seq)] = out["MessageId"]
    again = sqs.send_message(QueueUrl=state["src"], MessageBody=tool_call("sess_a", 1, "create_document"), MessageGroupId="sess_a",
                             MessageDeduplicationId="tc_sess_a_1")
    expect(again["MessageId"] == ids[("sess_a", 1)], "deduplicated send got a new id")
    depth = sqs.get_queue_attributes(QueueUrl=state["src"], AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    expect(depth["ApproximateNumberOfMessages"] == "3", depth)


@check("receive with all attributes: one session's calls in order; a retried attempt gets the same handles")
def _():
    # A receive prefers one group's messages; asking for two gets the first session's two.
    kwargs = dict(QueueUrl=state["src"], MaxNumberOfMessages=2, AttributeNames=["All"], MessageAttributeNames=["All"],
                  ReceiveRequestAttemptId="attempt-" + run)
    first = sqs.receive_message(**kwargs).get("Messages", [])
    seqs = [json.loads(m["Body"])["sequenceNumber"] for m in first]
    groups = {m["Attributes"]["MessageGroupId"] for m in first}
    expect(len(first) == 2 and groups == {"sess_a"} and seqs == [1, 2], (len(first), groups, seqs))
    a = first[0]["Attributes"]
    expect(a["MessageDeduplicationId"] == "tc_sess_a_1" and a["ApproximateReceiveCount"] == "1" and a["SenderId"].startswith("AIDA"), a)
    expect(first[0]["MessageAttributes"]["toolName"]["StringValue"] == "create_document", first[0]["MessageAttributes"])
    again = sqs.receive_message(**kwargs).get("Messages", [])
    expect([m["ReceiptHandle"] for m in again] == [m["ReceiptHandle"] for m in first], "retry gave other handles")
    state["first"] = first


@check("the session in flight is locked; the other session is delivered")
def _():
    msgs = sqs.receive_message(QueueUrl=state["src"], MaxNumberOfMessages=10, AttributeNames=["MessageGroupId"]).get("Messages", [])
    expect([m["Attributes"]["MessageGroupId"] for m in msgs] == ["sess_b"], msgs)
    sqs.delete_message(QueueUrl=state["src"], ReceiptHandle=msgs[0]["ReceiptHandle"])


@check("receive counts grow; past maxReceiveCount the calls move to the DLQ")
def _():
    for m in state["first"]:
        sqs.change_message_visibility(QueueUrl=state["src"], ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    msgs = sqs.receive_message(QueueUrl=state["src"], MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"])["Messages"]
    expect([m["Attributes"]["ApproximateReceiveCount"] for m in msgs] == ["2", "2"], msgs)
    sqs.change_message_visibility_batch(QueueUrl=state["src"], Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0} for i, m in enumerate(msgs)])
    expect(not sqs.receive_message(QueueUrl=state["src"], MaxNumberOfMessages=10).get("Messages"), "source still delivered")
    dlq = sqs.receive_message(QueueUrl=state["dlq"], MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=0)["Messages"]
    expect([json.loads(m["Body"])["sequenceNumber"] for m in dlq] == [1, 2], dlq)
    expect(dlq[0]["Attributes"]["DeadLetterQueueSourceArn"].endswith(":" + name("tools") + ".fifo"), dlq[0]["Attributes"])


@check("move task: start, list RUNNING, cancel", needs="start_message_move_task")
def _():
    src_arn = sqs.get_queue_attributes(QueueUrl=state["src"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    handle = sqs.start_message_move_task(SourceArn=state["dlq_arn"], DestinationArn=src_arn, MaxNumberOfMessagesPerSecond=1)["TaskHandle"]
    listed = sqs.list_message_move_tasks(SourceArn=state["dlq_arn"], MaxResults=10)["Results"]
    expect(listed[0]["Status"] == "RUNNING" and listed[0]["ApproximateNumberOfMessagesToMove"] == 2, listed)
    sqs.cancel_message_move_task(TaskHandle=handle)
    after = sqs.list_message_move_tasks(SourceArn=state["dlq_arn"])["Results"]
    expect(after[0]["Status"] in ("CANCELLING", "CANCELLED"), after)


@check("a missing queue is QueueDoesNotExist")
def _():
    try:
        sqs.get_queue_url(QueueName=name("nope"))
    except sqs.exceptions.QueueDoesNotExist:
        return
    raise AssertionError("found")


@check("PutMetricAlarm and DescribeAlarms: the seeds' DLQ alarm")
def _():
    dlq_name = state["dlq"].rsplit("/", 1)[1]
    state["alarm"] = dlq_name + "-depth"
    cw.put_metric_alarm(AlarmName=state["alarm"], Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible",
                        Dimensions=[{"Name": "QueueName", "Value": dlq_name}], Statistic="Maximum", Period=60,
                        EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanOrEqualToThreshold")
    a = cw.describe_alarms(AlarmNames=[state["alarm"]])["MetricAlarms"]
    expect(len(a) == 1 and a[0]["StateValue"] == "INSUFFICIENT_DATA" and a[0]["Threshold"] == 1.0, a)


if clock_url:
    @check("the DLQ alarm goes to ALARM on the simulator's clock")
    def _():
        advance(60)
        advance(60)
        a = cw.describe_alarms(StateValue="ALARM", AlarmNamePrefix=state["alarm"])["MetricAlarms"]
        expect(len(a) == 1 and a[0]["StateReason"].startswith("Threshold Crossed: 1 datapoint [2.0"), a)
        expect(isinstance(a[0]["StateUpdatedTimestamp"], datetime.datetime), a[0]["StateUpdatedTimestamp"])

    @check("GetMetricData and GetMetricStatistics: the FIFO queue's sends")
    def _():
        now = datetime.datetime.now(datetime.timezone.utc)
        span = dict(StartTime=now - datetime.timedelta(hours=1), EndTime=now + datetime.timedelta(hours=1))
        dims = [{"Name": "QueueName", "Value": name("tools") + ".fifo"}]
        out = cw.get_metric_data(MetricDataQueries=[{"Id": "sent", "MetricStat": {
            "Metric": {"Namespace": "AWS/SQS", "MetricName": "NumberOfMessagesSent", "Dimensions": dims},
            "Period": 60, "Stat": "Sum"}}], **span)
        r = out["MetricDataResults"][0]
        expect(r["StatusCode"] == "Complete" and sum(r["Values"]) == 3, r)
        stats = cw.get_metric_statistics(Namespace="AWS/SQS", MetricName="NumberOfMessagesSent", Dimensions=dims,
                                         Period=60, Statistics=["Sum"], **span)
        expect(sum(p["Sum"] for p in stats["Datapoints"]) == 3, stats["Datapoints"])


@check("ListMetrics and a typed CloudWatch error")
def _():
    metrics = cw.list_metrics(Namespace="AWS/SQS", MetricName="NumberOfMessagesSent")["Metrics"]
    expect(any(m["Dimensions"][0]["Value"] == name("tools") + ".fifo" for m in metrics), metrics)
    try:
        cw.delete_alarms(AlarmNames=[name("missing")])
    except botocore.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "ResourceNotFound", err.response["Error"])
        return
    raise AssertionError("deleted")


@check("a FIFO send with DelaySeconds 0, as worker wrappers pass it, is accepted; a positive one is refused")
def _():
    url = sqs.create_queue(QueueName=name("zero-delay") + ".fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="one", MessageGroupId="g", DelaySeconds=0)
    out = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "zero", "MessageBody": "two", "MessageGroupId": "g", "DelaySeconds": 0},
        {"Id": "five", "MessageBody": "three", "MessageGroupId": "g", "DelaySeconds": 5}])
    expect([e["Id"] for e in out["Successful"]] == ["zero"], out)
    expect([(e["Id"], e["Code"]) for e in out["Failed"]] == [("five", "InvalidParameterValue")], out)


@check("every answer of every service has its own request id, as ResponseMetadata reads it")
def _():
    ids = [sqs.list_queues(QueueNamePrefix=name("none"))["ResponseMetadata"].get("RequestId"),
           cw.describe_alarms()["ResponseMetadata"].get("RequestId"),
           sts.get_caller_identity()["ResponseMetadata"].get("RequestId"),
           lam.list_event_source_mappings()["ResponseMetadata"].get("RequestId"),
           events.list_event_buses()["ResponseMetadata"].get("RequestId")]
    for call in (lambda: sqs.get_queue_url(QueueName=name("nope")), lambda: cw.delete_alarms(AlarmNames=[name("nope")]),
                 lambda: lam.get_function(FunctionName="nope"), lambda: events.describe_rule(Name="nope")):
        try:
            call()
        except botocore.exceptions.ClientError as err:
            ids.append(err.response["ResponseMetadata"].get("RequestId"))
    uuid = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    expect(len(ids) == 9 and all(i and uuid.match(i) for i in ids) and len(set(ids)) == 9, ids)


@check("a queue's name is taken where its URL is asked for; another region's URL is NonExistentQueue")
def _():
    queue_name = name("by-name")
    sqs.create_queue(QueueName=queue_name)
    expect(sqs.send_message(QueueUrl=queue_name, MessageBody="by name")["MessageId"], "no message id")
    try:
        sqs.send_message(QueueUrl="https://sqs.eu-west-1.amazonaws.com/000000000000/" + queue_name, MessageBody="x")
    except sqs.exceptions.QueueDoesNotExist as err:
        expect(err.response["ResponseMetadata"]["HTTPStatusCode"] == 400, err.response)
        return
    raise AssertionError("sent to another region's queue URL")


@check("the queue's URL on every host that reaches the simulator and AWS's own of its region; another region's, a trailing slash refused")
def _():
    queue_name = name("url-forms")
    own = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    port = urllib.parse.urlsplit(endpoint).port
    path = "/000000000000/" + queue_name
    forms = [own, "http://localhost:%d%s" % (port, path), "https://sqs.us-east-1.amazonaws.com" + path,
             "https://us-east-1.queue.amazonaws.com" + path, "https://queue.amazonaws.com" + path,
             "http://sqs.us-east-1.localhost.localstack.cloud:4566" + path, "http://sqs-sim:4566" + path]
    for url in forms:
        expect(sqs.send_message(QueueUrl=url, MessageBody=url)["MessageId"], url)
    missing = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")  # the Query code, the JSON one
    refused = {"https://sqs.us-west-2.amazonaws.com" + path: missing, "https://us-west-2.queue.amazonaws.com" + path: missing,
               "http://localhost:%d/111111111111/%s" % (port, queue_name): missing, own + "/": ("InvalidAddress",)}
    for url, codes in refused.items():
        try:
            sqs.purge_queue(QueueUrl=url)
        except botocore.exceptions.ClientError as err:
            expect(err.response["Error"]["Code"] in codes, (url, err.response["Error"]))
            continue
        raise AssertionError("purged through " + url)
    n = sqs.get_queue_attributes(QueueUrl=own, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"]
    expect(n == str(len(forms)), n)


@check("an MCP server's own metrics: PutMetricData read back by GetMetricStatistics, GetMetricData and ListMetrics")
def _():
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    ns = name("mcp")
    cw.put_metric_data(Namespace=ns, MetricData=[
        {"MetricName": "calls", "Timestamp": now, "Values": [1.0, 10.0], "Counts": [2, 4], "Unit": "Count"},
        {"MetricName": "latency", "Timestamp": now, "Value": 250.0, "Unit": "Milliseconds", "StorageResolution": 1,
         "Dimensions": [{"Name": "tool", "Value": "web_search"}]}])
    span = dict(StartTime=now - datetime.timedelta(minutes=1), EndTime=now + datetime.timedelta(minutes=1))
    p = cw.get_metric_statistics(Namespace=ns, MetricName="calls", Period=60, Statistics=["SampleCount", "Sum", "Maximum"], **span)["Datapoints"]
    expect(len(p) == 1 and (p[0]["SampleCount"], p[0]["Sum"], p[0]["Maximum"], p[0]["Unit"]) == (6.0, 42.0, 10.0, "Count"), p)
    r = cw.get_metric_data(MetricDataQueries=[{"Id": "latency", "MetricStat": {"Metric": {"Namespace": ns, "MetricName": "latency",
        "Dimensions": [{"Name": "tool", "Value": "web_search"}]}, "Period": 1, "Stat": "Maximum"}}], **span)["MetricDataResults"][0]
    expect(r["Values"] == [250.0] and r["Timestamps"][0] == now, r)
    metrics = cw.list_metrics(Namespace=ns)["Metrics"]
    expect(sorted(m["MetricName"] for m in metrics) == ["calls", "latency"], metrics)


@check("alarms on an MCP server's own metrics: DescribeAlarmsForMetric, a metric-math alarm's Metrics round-trip")
def _():
    ns = name("mcp-alarms")
    dims = [{"Name": "tool", "Value": "web_search"}]
    base = dict(EvaluationPeriods=1, Threshold=5.0, ComparisonOperator="GreaterThanOrEqualToThreshold")
    cw.put_metric_alarm(AlarmName=ns + "-errors", Namespace=ns, MetricName="errors", Dimensions=dims, Statistic="Sum", Period=60, **base)
    metrics = [
        {"Id": "rate", "Expression": "100 * errors / calls", "Label": "error rate", "ReturnData": True},
        {"Id": "errors", "MetricStat": {"Metric": {"Namespace": ns, "MetricName": "errors", "Dimensions": dims}, "Period": 60, "Stat": "Sum"}, "ReturnData": False},
        {"Id": "calls", "MetricStat": {"Metric": {"Namespace": ns, "MetricName": "calls", "Dimensions": dims}, "Period": 60, "Stat": "Sum"}, "ReturnData": False}]
    cw.put_metric_alarm(AlarmName=ns + "-rate", Metrics=metrics, **base)
    found = cw.describe_alarms_for_metric(Namespace=ns, MetricName="errors", Dimensions=dims)["MetricAlarms"]
    expect([a["AlarmName"] for a in found] == [ns + "-errors"], found)
    rate = cw.describe_alarms(AlarmNames=[ns + "-rate"])["MetricAlarms"]
    expect(len(rate) == 1 and rate[0]["Metrics"] == metrics and "MetricName" not in rate[0], rate)
    if clock_url:
        cw.put_metric_data(Namespace=ns, MetricData=[{"MetricName": "errors", "Dimensions": dims, "Value": 7.0}])
        advance(60)
        state = cw.describe_alarms(AlarmNames=[ns + "-errors"])["MetricAlarms"][0]
        expect(state["StateValue"] == "ALARM" and state["StateReason"].startswith("Threshold Crossed: 1 datapoint [7.0"), state)


@check("STS: GetCallerIdentity names the account; AssumeRole refuses a session name with spaces in AWS's words")
def _():
    who = sts.get_caller_identity()
    expect(who["Account"] == "000000000000" and who["Arn"] == "arn:aws:iam::000000000000:root", who)
    try:
        sts.assume_role(RoleArn="arn:aws:iam::000000000000:role/toolq", RoleSessionName="my session!")
    except botocore.exceptions.ClientError as err:
        e = err.response["Error"]
        expect(e["Code"] == "ValidationError" and e["Message"] == "1 validation error detected: Value 'my session!' at 'roleSessionName' "
               "failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*", e)
        return
    raise AssertionError("assumed")


print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if failed else 0)
