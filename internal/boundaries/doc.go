// Package boundaries holds the tests of toolq's import rules (the shape of the project's STYLE.md
// and of the README's layout), checked over `go list` so that a change that breaks them fails
// `make test`.
package boundaries
