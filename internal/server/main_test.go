package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestMain runs the tests (and stops the PostgreSQL server the benchmarks on PostgreSQL started,
// if any), or, when BenchmarkFleetPushTo1000Websockets starts this binary again with
// wsClientsEnv set, the benchmark's websocket clients in a process of their own.
func TestMain(m *testing.M) {
	if spec := os.Getenv(wsClientsEnv); spec != "" {
		if err := runWebsocketClients(spec); err != nil {
			fmt.Fprintln(os.Stderr, "websocket clients:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}
