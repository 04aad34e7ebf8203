package collector

import (
	"context"
	"fmt"
)

// Prune rolls up and deletes old rows by Options.Retention (store.Prune, whose zero fields take
// the store's defaults), and forgets the failures and skips the collector remembers once they
// have expired. It runs on its own cadence so that a slow prune never delays a sample.
func (c *Collector) Prune(ctx context.Context) error {
	c.forgetExpired(c.now())
	res, err := c.store.Prune(ctx, c.now(), c.opts.Retention)
	c.tel.cycles.WithLabelValues("prune").Inc()
	if err != nil {
		return fmt.Errorf("collector: prune: %w", err)
	}
	c.log.Debug("collector: pruned", "rolled_up", res.RolledUp, "deleted", res.Deleted)
	return nil
}
