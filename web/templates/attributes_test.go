package templates

import "testing"

func TestAttributeRows(t *testing.T) {
	rows := AttributeRows(map[string]string{
		"VisibilityTimeout":     "30",
		"CreatedTimestamp":      "1796000603",
		"LastModifiedTimestamp": "not a number",
		"QueueArn":              "arn:aws:sqs:us-east-1:1:q",
		"SomethingNew":          "x",
	})
	tests := []struct {
		name, value, reading string
		help                 bool
	}{
		{"CreatedTimestamp", "1796000603", "Nov 30 2026 01:03:23 UTC", true},
		{"LastModifiedTimestamp", "not a number", "", true},
		{"QueueArn", "arn:aws:sqs:us-east-1:1:q", "", true},
		{"SomethingNew", "x", "", false},
		{"VisibilityTimeout", "30", "30 s", true},
	}
	if len(rows) != len(tests) {
		t.Fatalf("rows = %+v", rows)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rows[i] // sorted by name
			if r.Name != tt.name || r.Value != tt.value || r.Reading != tt.reading || (r.Help != "") != tt.help {
				t.Errorf("row %d = %+v, want %s=%q reading %q, help %v", i, r, tt.name, tt.value, tt.reading, tt.help)
			}
		})
	}
}
