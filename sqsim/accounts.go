package sqsim

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Accounts serves several simulated AWS accounts on one endpoint, each a Simulator of its own
// (with its own account id in queue URLs and ARNs), and the part of AWS STS a client needs to
// reach them: AssumeRole of a role in one of the accounts, and GetCallerIdentity.
//
// A request signed with credentials that AssumeRole issued goes to the role's account; any
// other request (unsigned, or signed with keys Accounts never issued) goes to the default
// account, the first one given. STS requests are recognised by the service of their SigV4
// credential scope ("…/us-east-1/sts/aws4_request"), as AWS routes them by host.
//
// Accounts are separate worlds: a move task, an EventBridge target or a RedrivePolicy reaches
// only queues of its own account.
type Accounts struct {
	def   *Simulator
	byID  map[string]*Simulator
	clock func() time.Time

	mu       sync.Mutex
	roles    map[string]stsRole    // by role ARN
	sessions map[string]stsSession // by access key id
}

// stsRole is a role AssumeRole may assume.
type stsRole struct {
	account    string
	name       string
	externalID string // "" accepts any (or none)
}

// stsSession is one set of credentials AssumeRole issued.
type stsSession struct {
	account string
	arn     string // the assumed-role ARN, for GetCallerIdentity
	userID  string
	expires time.Time
}

// sessionDuration is how long issued credentials last, unless the caller asks for less.
const sessionDuration = time.Hour

// NewAccounts returns the front door of the simulators' accounts; def is the default account.
// Two simulators with one account id are a wiring mistake: NewAccounts panics.
func NewAccounts(def *Simulator, others ...*Simulator) *Accounts {
	a := &Accounts{def: def, byID: map[string]*Simulator{}, clock: def.clock.Now,
		roles: map[string]stsRole{}, sessions: map[string]stsSession{}}
	for _, s := range append([]*Simulator{def}, others...) {
		if _, dup := a.byID[s.accountID]; dup {
			panic("sqsim: NewAccounts: account " + s.accountID + " given twice")
		}
		a.byID[s.accountID] = s
	}
	return a
}

// AddRole lets AssumeRole assume roleARN (arn:aws:iam::ACCOUNT:role/NAME, or the ARN of
// another partition: arn:aws-cn:iam::…; ACCOUNT one of the simulators'), demanding externalID
// when it is not "".
func (a *Accounts) AddRole(roleARN, externalID string) error {
	account, name, ok := parseRoleARN(roleARN)
	if !ok {
		return fmt.Errorf("sqsim: AddRole: %q is not a role ARN (arn:aws:iam::ACCOUNT:role/NAME)", roleARN)
	}
	if a.byID[account] == nil {
		return fmt.Errorf("sqsim: AddRole: no simulated account %s", account)
	}
	a.mu.Lock()
	a.roles[roleARN] = stsRole{account: account, name: name, externalID: externalID}
	a.mu.Unlock()
	return nil
}

// Account returns the simulator of an account id, nil when there is none.
func (a *Accounts) Account(id string) *Simulator { return a.byID[id] }

func parseRoleARN(s string) (account, name string, ok bool) {
	rest, ok := strings.CutPrefix(s, "arn:")
	if !ok {
		return "", "", false
	}
	part, rest, ok := strings.Cut(rest, ":")
	if !ok || !knownPartition(part) {
		return "", "", false
	}
	if rest, ok = strings.CutPrefix(rest, "iam::"); !ok {
		return "", "", false
	}
	account, name, ok = strings.Cut(rest, ":role/")
	if !ok || len(account) != 12 || strings.Trim(account, "0123456789") != "" || name == "" {
		return "", "", false
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 { // a role path: role/path/name
		name = name[i+1:]
	}
	return account, name, name != ""
}

func (a *Accounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setRequestID(w)
	key, region, service := credentialScope(r)
	if service == "sts" {
		a.serveSTS(w, r, key, region)
		return
	}
	a.simulatorFor(key).ServeHTTP(w, r)
}

// simulatorFor returns the account a request signed with key goes to.
func (a *Accounts) simulatorFor(key string) *Simulator {
	a.mu.Lock()
	sess, ok := a.sessions[key]
	a.mu.Unlock()
	if ok {
		return a.byID[sess.account]
	}
	return a.def
}

const stsNamespace = "https://sts.amazonaws.com/doc/2011-06-15/"

// serveSTS answers the Query protocol's AssumeRole and GetCallerIdentity.
// The ARNs it gives are of the partition of the region the request is signed for
// (arn:aws-cn:sts::… in cn-north-1), that of the default account's home region when unsigned.
func (a *Accounts) serveSTS(w http.ResponseWriter, r *http.Request, key, region string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "MalformedInput", "reading the body: %v", err))
		return
	}
	form, err := url.ParseQuery(string(bytes.TrimSpace(body)))
	if err != nil {
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "MalformedInput", "the body is not a form: %v", err))
		return
	}
	part := a.def.partition
	if region != "" {
		part = partition(region)
	}
	switch form.Get("Action") {
	case "AssumeRole":
		a.assumeRole(w, form, part)
	case "GetCallerIdentity":
		a.callerIdentity(w, key, part)
	default:
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "InvalidAction",
			"Could not find operation %s for version %s", safeName(form.Get("Action")), safeName(form.Get("Version"))))
	}
}

// STS's constraints on AssumeRole, from its API reference; AWS words a
// broken one as "1 validation error detected: Value '…' at '…' failed to
// satisfy constraint: Member must …".
var (
	roleSessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]*$`)
	externalIDPattern      = regexp.MustCompile(`^[\w+=,.@:/-]*$`)
)

const (
	minSessionDuration = 900
	maxSessionDuration = 43200
	// roleMaxSession is a role's MaxSessionDuration: IAM's default, one hour.
	roleMaxSession = time.Hour
)

func (a *Accounts) assumeRole(w http.ResponseWriter, form url.Values, part string) {
	roleARN, session := form.Get("RoleArn"), form.Get("RoleSessionName")
	if roleARN == "" || session == "" {
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "MissingParameter",
			"The request must contain the parameters RoleArn and RoleSessionName"))
		return
	}
	duration, err := checkAssumeRole(form)
	if err != nil {
		writeSTSError(w, err)
		return
	}
	if !wellFormedARN(roleARN) {
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "ValidationError", "%s is invalid", safeName(roleARN)))
		return
	}
	if policy, ok := form["Policy"]; ok && !wellFormedPolicy(policy[0]) {
		// A session policy narrows the credentials; taking one that cannot be read would hand
		// out credentials the caller meant to restrict.
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "MalformedPolicyDocument",
			"The policy is not in the valid JSON format."))
		return
	}
	a.mu.Lock()
	role, ok := a.roles[roleARN]
	a.mu.Unlock()
	// AWS says the same whether the role is missing, does not trust the caller or wants
	// another external id: nothing to tell the roles apart by.
	if !ok || (role.externalID != "" && form.Get("ExternalId") != role.externalID) {
		writeSTSError(w, newAPIError(http.StatusForbidden, "", "AccessDenied",
			"User is not authorized to perform: sts:AssumeRole on resource: %s", safeName(roleARN)))
		return
	}
	if duration > roleMaxSession {
		writeSTSError(w, newAPIError(http.StatusBadRequest, "", "ValidationError",
			"The requested DurationSeconds exceeds the MaxSessionDuration set for this role."))
		return
	}
	now := a.clock()
	keyID := "ASIA" + randomBase32(16)
	sess := stsSession{
		account: role.account,
		arn:     "arn:" + part + ":sts::" + role.account + ":assumed-role/" + role.name + "/" + session,
		userID:  roleID(roleARN) + ":" + session,
		expires: now.Add(duration).UTC().Truncate(time.Second),
	}
	a.mu.Lock()
	// Expired sessions go, so that a client assuming roles in a loop does
	// not grow the map without end.
	for k, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, k)
		}
	}
	a.sessions[keyID] = sess
	a.mu.Unlock()
	var buf bytes.Buffer
	buf.WriteString(`<AssumeRoleResult><Credentials>`)
	writeElement(&buf, "AccessKeyId", keyID)
	writeElement(&buf, "SecretAccessKey", randomBase32(40))
	writeElement(&buf, "SessionToken", "FwoGZXIvYXdzE"+randomBase32(64))
	writeElement(&buf, "Expiration", sess.expires.Format(time.RFC3339))
	buf.WriteString(`</Credentials><AssumedRoleUser>`)
	writeElement(&buf, "AssumedRoleId", sess.userID)
	writeElement(&buf, "Arn", sess.arn)
	buf.WriteString(`</AssumedRoleUser></AssumeRoleResult>`)
	writeSTS(w, "AssumeRole", buf.Bytes())
}

// checkAssumeRole applies STS's constraints to AssumeRole's parameters and
// returns the session's duration.
func checkAssumeRole(form url.Values) (time.Duration, *apiError) {
	var v validation
	session := form.Get("RoleSessionName")
	if !roleSessionNamePattern.MatchString(session) {
		v.add(session, "roleSessionName", `Member must satisfy regular expression pattern: [\w+=,.@-]*`)
	}
	v.length(session, "roleSessionName", 2, 64)
	v.length(form.Get("RoleArn"), "roleArn", 20, 2048)
	if policy, ok := form["Policy"]; ok {
		v.length(policy[0], "policy", 1, 2048)
	}
	if id, ok := form["ExternalId"]; ok {
		if !externalIDPattern.MatchString(id[0]) {
			v.add(id[0], "externalId", `Member must satisfy regular expression pattern: [\w+=,.@:\/-]*`)
		}
		v.length(id[0], "externalId", 2, 1224)
	}
	duration := sessionDuration
	if text := form.Get("DurationSeconds"); text != "" {
		secs, err := strconv.Atoi(text)
		switch {
		case err != nil:
			v.add(text, "durationSeconds", "Member must be an integer")
		case secs < minSessionDuration:
			v.add(text, "durationSeconds", fmt.Sprintf("Member must have value greater than or equal to %d", minSessionDuration))
		case secs > maxSessionDuration:
			v.add(text, "durationSeconds", fmt.Sprintf("Member must have value less than or equal to %d", maxSessionDuration))
		}
		duration = time.Duration(secs) * time.Second
	}
	return duration, v.err()
}

// validation gathers the broken constraints of one request, for STS's
// ValidationError.
type validation []string

func (v *validation) add(value, member, constraint string) {
	*v = append(*v, fmt.Sprintf("Value '%s' at '%s' failed to satisfy constraint: %s", safeName(value), member, constraint))
}

// length checks a member's length in characters.
func (v *validation) length(value, member string, min, max int) {
	switch n := utf8.RuneCountInString(value); {
	case n < min:
		v.add(value, member, fmt.Sprintf("Member must have length greater than or equal to %d", min))
	case n > max:
		v.add(value, member, fmt.Sprintf("Member must have length less than or equal to %d", max))
	}
}

// err is the ValidationError listing every broken constraint, or nil.
func (v validation) err() *apiError {
	switch len(v) {
	case 0:
		return nil
	case 1:
		return newAPIError(http.StatusBadRequest, "", "ValidationError", "1 validation error detected: %s", v[0])
	}
	return newAPIError(http.StatusBadRequest, "", "ValidationError", "%d validation errors detected: %s", len(v), strings.Join(v, "; "))
}

// wellFormedARN reports whether s has an ARN's six parts, with a partition,
// a service and a resource: what STS checks of a RoleArn before it looks
// for the role ("arn:a:b:::something/test-role" passes).
func wellFormedARN(s string) bool {
	parts := strings.SplitN(s, ":", 6)
	return len(parts) == 6 && parts[0] == "arn" && parts[1] != "" && parts[2] != "" && parts[5] != ""
}

// wellFormedPolicy reports whether a session policy is an IAM policy document as far as STS
// reads one before evaluating it: a JSON object with a Statement, one statement or a list.
func wellFormedPolicy(s string) bool {
	var doc struct {
		Statement json.RawMessage
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return false
	}
	st := bytes.TrimSpace(doc.Statement)
	return len(st) > 0 && (st[0] == '{' || st[0] == '[')
}

// roleID is the unique id of a role, as IAM gives one ("AROA" and 17
// characters), derived from its ARN so that every session of the role shows
// the same.
func roleID(roleARN string) string {
	sum := sha256.Sum256([]byte(roleARN))
	return "AROA" + base32.StdEncoding.EncodeToString(sum[:])[:17]
}

func (a *Accounts) callerIdentity(w http.ResponseWriter, key, part string) {
	a.mu.Lock()
	sess, ok := a.sessions[key]
	a.mu.Unlock()
	account, arn, userID := a.def.accountID, "arn:"+part+":iam::"+a.def.accountID+":root", a.def.accountID
	if ok {
		account, arn, userID = sess.account, sess.arn, sess.userID
	}
	var buf bytes.Buffer
	buf.WriteString(`<GetCallerIdentityResult>`)
	writeElement(&buf, "Arn", arn)
	writeElement(&buf, "UserId", userID)
	writeElement(&buf, "Account", account)
	buf.WriteString(`</GetCallerIdentityResult>`)
	writeSTS(w, "GetCallerIdentity", buf.Bytes())
}

func writeSTS(w http.ResponseWriter, op string, result []byte) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s">`, op, stsNamespace)
	buf.Write(result)
	fmt.Fprintf(&buf, `<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`, requestIDOf(w), op)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func writeSTSError(w http.ResponseWriter, e *apiError) {
	writeXMLError(w, e, stsNamespace, "")
}

// safeName bounds a caller's value quoted back in an error.
func safeName(s string) string {
	if len(s) > 256 {
		s = s[:256]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func randomBase32(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)[:n]
}
