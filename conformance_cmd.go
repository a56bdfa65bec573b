package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
)

// conformanceCmd runs the backend conformance kit (ADR 0144 D5) against a
// running service through the HTTP client: the same kit the engine passes
// in-process, so a deployment proves the composition it actually serves.
func conformanceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("conformance", stderr)
	url := fs.String("url", "", "base URL of the service, e.g. https://sandbox-xyz.a.run.app")
	token := fs.String("id-token-env", "", "name of an environment variable holding a Google ID token for the service (sent as a Bearer token)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return exitError{2, err}
	}
	if *url == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitError{2, fmt.Errorf("conformance: --url is required")}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var opts []client.Option
	if *token != "" {
		tok := os.Getenv(*token)
		if tok == "" {
			return exitError{2, fmt.Errorf("conformance: $%s is empty", *token)}
		}
		opts = append(opts, client.WithIDToken(func(context.Context, string) (string, error) { return tok, nil }))
	}
	c, err := client.Dial(ctx, *url, opts...)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	defer c.Close(ctx)
	caps := c.Capabilities()
	fmt.Fprintf(stdout, "conformance: %s (spi %s, %s %s) declares %+v\n", *url, c.SPIVersion(), c.Engine().Name, c.Engine().Version, caps)

	// The kit is written against *testing.T; run it through the testing
	// package's own runner so its reporting and skips behave as under go test.
	testing.Init()
	_ = flag.Set("test.v", "true")
	ok := testing.RunTests(func(_, _ string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: "Conformance",
		F: func(t *testing.T) {
			conformance.Run(t, func(*testing.T) effect.Backend { return c }, conformance.Options{MaxWallClock: c.Limits().MaxWallClock})
		},
	}})
	if !ok {
		return exitError{1, fmt.Errorf("conformance: the service failed the kit")}
	}
	fmt.Fprintln(stdout, "conformance: PASS")
	return nil
}
