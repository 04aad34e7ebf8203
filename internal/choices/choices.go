// Package choices says, in an error about a choice that names nothing (a dimension, a queue, a
// destination, a tool, a rule, a metric), which values would have named something: all of them
// when they are few, else the closest to the one given. A person has the page's lists to pick
// from; an agent or a script has only the error.
package choices

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Listed is how many values a hint names at most.
const Listed = 8

// maxCompared bounds how much of a value is compared: names are short, and what a client gives
// may not be.
const maxCompared = 256

// Error is a choice that names nothing: Err, the sentinel the callers branch on
// (views.ErrUnknownDimension), and the hint that says what to choose instead.
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + " (" + e.Hint + ")"
}

func (e *Error) Unwrap() error { return e.Err }

// Wrap returns err with the hint for given among valid, or err itself when valid is empty.
func Wrap(err error, given string, valid []string) error {
	hint := Hint(given, valid)
	if hint == "" {
		return err
	}
	return &Error{Err: err, Hint: hint}
}

// Hint says which of valid to give instead of given: "valid: a, b, c" when they are Listed or
// fewer, else "closest: a, b, … (of 1,000)", the closest first; "" when valid is empty. The
// values are the caller's own (configured names, watched queues), never the given text, which
// the hint does not repeat.
func Hint(given string, valid []string) string {
	switch {
	case len(valid) == 0:
		return ""
	case len(valid) <= Listed:
		return "valid: " + strings.Join(valid, ", ")
	}
	return fmt.Sprintf("closest: %s (of %d)", strings.Join(Closest(given, valid, Listed), ", "), len(valid))
}

// Closest returns up to n distinct values of valid, the closest to given first, case ignored:
// the value given, then those it begins or ends (a missing -dlq or .fifo), then those holding it,
// each tier by how many pairs of letters they share with it (Sørensen-Dice on bigrams, which
// finds a typo and a word out of order), ties by name. Each comparison is linear in the lengths,
// so a fleet of thousands of queues is ranked in a few milliseconds.
func Closest(given string, valid []string, n int) []string {
	if len(given) > maxCompared {
		given = given[:maxCompared]
	}
	given = strings.ToLower(given)
	want := bigrams(given)
	type scored struct {
		value string
		score float64
	}
	ranked := make([]scored, 0, len(valid))
	for _, v := range valid {
		lower := strings.ToLower(v)
		score := dice(want, bigrams(lower))
		switch {
		case lower == given:
			score += 3
		case given != "" && (strings.HasPrefix(lower, given) || strings.HasSuffix(lower, given)):
			score += 2
		case given != "" && strings.Contains(lower, given):
			score++
		}
		ranked = append(ranked, scored{v, score})
	}
	slices.SortFunc(ranked, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.value, b.value))
	})
	out := make([]string, 0, n)
	for _, r := range ranked {
		if len(out) == n {
			break
		}
		if len(out) == 0 || out[len(out)-1] != r.value {
			out = append(out, r.value)
		}
	}
	return out
}

// bigrams counts the pairs of adjacent letters of s, with its ends marked so that a one-letter
// value still has pairs.
func bigrams(s string) map[[2]rune]int {
	if len(s) > maxCompared {
		s = s[:maxCompared]
	}
	pairs := make(map[[2]rune]int, utf8.RuneCountInString(s)+1)
	prev := '^'
	for _, r := range s {
		pairs[[2]rune{prev, r}]++
		prev = r
	}
	pairs[[2]rune{prev, '$'}]++
	return pairs
}

// dice is the Sørensen-Dice coefficient of two multisets of pairs: 1 for equal, 0 for disjoint.
func dice(a, b map[[2]rune]int) float64 {
	var shared, total int
	for p, n := range a {
		shared += min(n, b[p])
		total += n
	}
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return 0
	}
	return 2 * float64(shared) / float64(total)
}
