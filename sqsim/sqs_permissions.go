package sqsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"time"
)

// AddPermission and RemovePermission edit a queue's Policy attribute: each
// label is one statement that allows some accounts some actions on the
// queue, in the document SQS writes (Version 2008-10-17, Id
// <queue ARN>/SQSDefaultPolicy). The simulator keeps the policy as
// configuration; it checks no permissions.

type addPermissionInput struct {
	QueueUrl      string
	Label         string
	AWSAccountIds []string `query:"AWSAccountId"`
	Actions       []string `query:"ActionName"`
}

type removePermissionInput struct {
	QueueUrl string
	Label    string
}

// permissionActions are the actions AddPermission grants: those a queue's
// owner may share, or "*".
var permissionActions = []string{"*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
	"ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}

// maxPermissionActions is how many actions one AddPermission may grant.
const maxPermissionActions = 7

var (
	permissionLabelPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	accountIDPattern       = regexp.MustCompile(`^[0-9]{12}$`)
)

// policyDocument is a queue policy as AddPermission edits it. Statements stay
// as they were written, so that a policy set with SetQueueAttributes keeps
// its own.
type policyDocument struct {
	Version   string            `json:"Version,omitempty"`
	Id        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

// permissionStatement is the statement AddPermission writes, in SQS's order
// of members. Principal.AWS and Action are a string when there is one, a
// list otherwise, as SQS writes them.
type permissionStatement struct {
	Sid       string
	Effect    string
	Principal struct{ AWS any }
	Action    any
	Resource  string
}

func (s *Simulator) addPermission(rc *request, in *addPermissionInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	switch {
	case in.Label == "":
		return nil, errMissingParameter("Label")
	case !permissionLabelPattern.MatchString(in.Label):
		return nil, errInvalidParameterValue("Value %s for parameter Label is invalid. Reason: Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.", truncate(in.Label, 100))
	case len(in.Actions) == 0:
		return nil, errMissingParameter("Actions")
	case len(in.AWSAccountIds) == 0:
		return nil, errInvalidParameterValue("Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.")
	case len(in.Actions) > maxPermissionActions:
		return nil, newAPIError(http.StatusForbidden, "OverLimit", "OverLimit", "%d Actions were found, maximum allowed is %d.", len(in.Actions), maxPermissionActions)
	}
	for _, a := range in.Actions {
		if !slices.Contains(permissionActions, a) {
			return nil, errInvalidParameterValue("Value SQS:%s for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.", truncate(a, 100))
		}
	}
	principals := make([]string, len(in.AWSAccountIds))
	for i, id := range in.AWSAccountIds {
		if !accountIDPattern.MatchString(id) {
			return nil, errInvalidParameterValue("Value [%s] for parameter PrincipalId is invalid. Reason: Unable to verify.", truncate(id, 100))
		}
		principals[i] = "arn:" + s.partition + ":iam::" + id + ":root"
	}
	doc := q.policyDocument()
	if doc.index(in.Label) >= 0 {
		return nil, errInvalidParameterValue("Value %s for parameter Label is invalid. Reason: Already exists.", in.Label)
	}
	st := permissionStatement{Sid: in.Label, Effect: "Allow", Action: oneOrMany(prefixed("SQS:", in.Actions)), Resource: q.arn}
	st.Principal.AWS = oneOrMany(principals)
	raw, _ := json.Marshal(st)
	doc.Statement = append(doc.Statement, raw)
	q.setPolicy(doc, s.clock.Now())
	return struct{}{}, nil
}

func (s *Simulator) removePermission(rc *request, in *removePermissionInput) (any, *apiError) {
	q, err := s.queueByURL(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if in.Label == "" {
		return nil, errMissingParameter("Label")
	}
	doc := q.policyDocument()
	i := doc.index(in.Label)
	if i < 0 {
		return nil, errInvalidParameterValue("Value %s for parameter Label is invalid. Reason: can't find label.", truncate(in.Label, 100))
	}
	doc.Statement = slices.Delete(doc.Statement, i, i+1)
	q.setPolicy(doc, s.clock.Now())
	return struct{}{}, nil
}

// policyDocument returns q's policy as a document to edit: a new one when q
// has none.
func (q *queue) policyDocument() policyDocument {
	doc := policyDocument{Version: "2008-10-17", Id: q.arn + "/SQSDefaultPolicy"}
	if q.attrs.policy == "" {
		return doc
	}
	var raw struct {
		Version, Id string
		Statement   json.RawMessage
	}
	// The policy was checked as JSON when it was set; a policy that is no
	// document of statements is replaced, as SQS would refuse it.
	if json.Unmarshal([]byte(q.attrs.policy), &raw) != nil {
		return doc
	}
	doc.Version, doc.Id = raw.Version, raw.Id
	switch trimmed := bytes.TrimSpace(raw.Statement); {
	case len(trimmed) > 0 && trimmed[0] == '{':
		doc.Statement = []json.RawMessage{trimmed}
	case len(trimmed) > 0:
		json.Unmarshal(trimmed, &doc.Statement)
	}
	return doc
}

// index returns the position of the statement whose Sid is label, or -1.
func (d *policyDocument) index(label string) int {
	for i, raw := range d.Statement {
		var st struct{ Sid string }
		if json.Unmarshal(raw, &st) == nil && st.Sid == label {
			return i
		}
	}
	return -1
}

// setPolicy writes doc as q's Policy; a document without statements removes
// the attribute, as SQS does once the last permission is removed.
func (q *queue) setPolicy(doc policyDocument, now time.Time) {
	q.attrs.policy = ""
	if len(doc.Statement) > 0 {
		b, _ := json.Marshal(doc)
		q.attrs.policy = string(b)
	}
	q.modifiedAt = now
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// oneOrMany is a single value as itself and several as a list, as policies
// write them.
func oneOrMany(values []string) any {
	if len(values) == 1 {
		return values[0]
	}
	return values
}
