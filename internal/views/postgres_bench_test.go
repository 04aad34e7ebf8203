package views

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestMain stops the PostgreSQL server the benchmarks on PostgreSQL started, if any.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// BenchmarkOverviewOnPostgres is BenchmarkOverview with the store on PostgreSQL (skipped where
// no server can be started): the read every replica's overview makes after each change. It runs
// at 200 queues only: writing the 1,000-queue fixture's 241,000 depth samples one transaction at
// a time, as the collector would, takes minutes on PostgreSQL.
func BenchmarkOverviewOnPostgres(b *testing.B) {
	for _, pairs := range []int{benchPairs} {
		b.Run(fmt.Sprintf("queues=%d", 2*pairs), func(b *testing.B) {
			f := benchFixtureAt(b, pairs, pgtest.DB(b))
			for b.Loop() {
				ov, err := f.svc.Overview(f.ctx)
				if err != nil || len(ov.Queues) != 2*pairs {
					b.Fatalf("Overview = %d queues, %v", len(ov.Queues), err)
				}
			}
		})
	}
}
