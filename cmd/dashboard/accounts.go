package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/toolq/toolq/internal/arn"
)

// accountConfig is one AWS account `serve` watches: an --account flag or an entry of
// --accounts-file.
type accountConfig struct {
	// Name is the account's short label (prod, tools-staging): what the pages, the API and
	// ?account= call it.
	Name string `json:"name"`
	// RoleARN is the role toolq assumes in the account; "": the ambient credentials' own account.
	RoleARN string `json:"roleArn,omitempty"`
	// ExternalID is passed to AssumeRole when the role's trust policy demands one.
	ExternalID string `json:"externalId,omitempty"`
	// Regions are the account's regions; empty: the --region list (or the chain's region).
	Regions []string `json:"regions,omitempty"`
	// accountID is the role ARN's account, "" without a role.
	accountID string
}

// accountNamePattern is what an account's name may be: short, and safe in a URL, a label and a
// sight scope (NAME/REGION).
var accountNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// regionPattern is what an AWS region's name looks like.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// parseAccountFlags reads the --account values: NAME=ROLE_ARN[,external-id=ID], or NAME alone
// for the ambient credentials' account. The list flag splits on commas, so an item
// "external-id=ID" belongs to the account before it.
func parseAccountFlags(items []string) ([]accountConfig, error) {
	var out []accountConfig
	for _, item := range items {
		if id, ok := strings.CutPrefix(item, "external-id="); ok {
			if len(out) == 0 || out[len(out)-1].RoleARN == "" || out[len(out)-1].ExternalID != "" {
				return nil, fmt.Errorf("--account: %q must follow NAME=ROLE_ARN, once", item)
			}
			out[len(out)-1].ExternalID = id
			continue
		}
		name, role, _ := strings.Cut(item, "=")
		out = append(out, accountConfig{Name: name, RoleARN: role})
	}
	return out, nil
}

// readAccountsFile reads --accounts-file: a JSON array of accounts,
// [{"name":"prod","roleArn":"arn:aws:iam::111111111111:role/toolq","externalId":"…","regions":["us-east-1"]}].
func readAccountsFile(path string) ([]accountConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--accounts-file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out []accountConfig
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("--accounts-file %s: %w", path, err)
	}
	return out, nil
}

// checkAccounts validates the accounts and fills in their ids: a valid name, each once; a valid
// role ARN; valid regions. Two accounts of one role are one account twice.
func checkAccounts(accounts []accountConfig) ([]accountConfig, error) {
	names := map[string]bool{}
	roles := map[string]string{}
	ambient := ""
	for i, a := range accounts {
		if !accountNamePattern.MatchString(a.Name) {
			return nil, fmt.Errorf("account %q: a name is 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit (NAME=ROLE_ARN)", a.Name)
		}
		if names[a.Name] {
			return nil, fmt.Errorf("account %q is given twice", a.Name)
		}
		names[a.Name] = true
		switch {
		case a.RoleARN == "":
			if a.ExternalID != "" {
				return nil, fmt.Errorf("account %q: an external id without a role ARN", a.Name)
			}
			if ambient != "" {
				return nil, fmt.Errorf("accounts %q and %q both name the ambient credentials' account (no role ARN)", ambient, a.Name)
			}
			ambient = a.Name
		default:
			r, err := arn.ParseRole(a.RoleARN)
			if err != nil {
				return nil, fmt.Errorf("account %q: %w", a.Name, err)
			}
			if other, dup := roles[a.RoleARN]; dup {
				return nil, fmt.Errorf("accounts %q and %q assume the same role %s", other, a.Name, a.RoleARN)
			}
			roles[a.RoleARN] = a.Name
			accounts[i].accountID = r.Account
		}
		for _, region := range a.Regions {
			if !regionPattern.MatchString(region) {
				return nil, fmt.Errorf("account %q: %q is not a region name", a.Name, region)
			}
		}
	}
	return accounts, nil
}
