package collector

import (
	"context"
	"fmt"
	"time"
)

// Prune rolls up and deletes old rows by Options.Retention (store.Prune, whose zero fields take
// the store's defaults), deletes the archived messages older than Options.ArchiveRetention
// (logged), and forgets the failures and skips the collector remembers once they
// have expired. It runs on its own cadence so that a slow prune never delays a sample.
func (c *Collector) Prune(ctx context.Context) error {
	c.forgetExpired(c.now())
	res, err := c.store.Prune(ctx, c.now(), c.opts.Retention)
	c.tel.cycles.WithLabelValues("prune").Inc()
	if err != nil {
		return fmt.Errorf("collector: prune: %w", err)
	}
	c.log.Debug("collector: pruned", "rolled_up", res.RolledUp, "deleted", res.Deleted)
	if c.opts.ArchiveRetention > 0 {
		cutoff := c.now().Add(-c.opts.ArchiveRetention)
		n, err := c.store.PruneArchive(ctx, cutoff)
		if err != nil {
			return fmt.Errorf("collector: prune the archive: %w", err)
		}
		if n > 0 {
			// Deleting what operators discarded is worth a line in the log, always.
			c.log.Info("collector: archived messages deleted after the archive's retention",
				"deleted", n, "discarded_before", cutoff.UTC().Format(time.RFC3339), "retention", c.opts.ArchiveRetention.String())
		}
	}
	return nil
}
