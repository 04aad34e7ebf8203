package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestMain runs the tests (and stops the PostgreSQL server the benchmarks on PostgreSQL started,
// if any), or, when BenchmarkFleetPushTo1000Websockets starts this binary again with
// wsClientsEnv set, the benchmark's websocket clients in a process of their own, or, when
// TestStatusAfterTheLeaderIsKilled starts it with replicaEnv set, a replica to kill.
func TestMain(m *testing.M) {
	if spec := os.Getenv(replicaEnv); spec != "" {
		if err := runReplica(spec); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(wsClientsEnv); spec != "" {
		if err := runWebsocketClients(spec); err != nil {
			fmt.Fprintln(os.Stderr, "websocket clients:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}
