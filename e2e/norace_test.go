//go:build !race

package e2e_test

// raceEnabled says the tests run with -race: the dashboard under test is built with it too.
const raceEnabled = false
