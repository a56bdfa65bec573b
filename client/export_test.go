package client

import (
	"context"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// OutcomeJSON lets the external tests write outcomes as the fuzz test does.
var OutcomeJSON = outcomeJSON

// DecodeOutcomeForTest lets the external tests read a body as Evaluate does.
var DecodeOutcomeForTest = spi.DecodeOutcome

// WithSleepForTest replaces the wait between busy retries, so that a test
// sees each wait the client chose.
func WithSleepForTest(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.sleep = f }
}
