package main

import (
	"context"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// conformanceUsage is the conformance verb's synopsis.
const conformanceUsage = `usage: sandbox-cloudrun conformance --url URL [flags]

Runs the backend conformance kit (docs/spi.md, "The conformance kit") against
a running service, through the service's HTTP client: a line per case, then a
summary.

exit status:
  0  every case that ran passed, and at least one ran
  1  a case failed (every case still runs), or the service could not be reached
  2  a usage error`

// conformanceCmd runs the backend conformance kit (docs/spi.md, "The
// conformance kit") against a running service through the HTTP client: the
// same cases the engine passes in-process, so a deployment proves the
// composition it actually serves. It prints one line per case and a summary,
// and fails when a case fails or when no case ran.
func conformanceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("conformance", conformanceUsage)
	url := fs.String("url", "", "base URL of the service, e.g. https://sandbox-xyz.a.run.app")
	token := fs.String("id-token-env", "", "name of an environment variable holding a Google ID token for the service (sent as a Bearer token)")
	timeout := fs.duration("timeout", 10*time.Minute, "give up after this long; the cases not yet run fail")
	caseTimeout := fs.duration("case-timeout", 2*time.Minute, "stop a case that has not finished after this long, fail it, and run the next (a service that never answers costs each case this, not the whole run)")
	grace := fs.duration("backend-grace", 10*time.Second, "how long past a run's wall clock the service may take to answer (cold start, queueing) before the run counts as not stopped")
	verbose := fs.Bool("v", false, "also print what each case logged")
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if *url == "" || len(positional) != 0 {
		return fs.usageError(stderr, "conformance: --url is required, and nothing else")
	}
	if u, err := neturl.Parse(*url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fs.usageError(stderr, "conformance: --url must be an http:// or https:// URL, got %q", *url)
	}
	if *grace <= 0 {
		return fs.usageError(stderr, "conformance: --backend-grace must be positive, got %v", *grace)
	}
	if *caseTimeout <= 0 {
		return fs.usageError(stderr, "conformance: --case-timeout must be positive, got %v", *caseTimeout)
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
	defer c.Close(context.Background())
	fmt.Fprintf(stdout, "conformance: %s (spi %s, %s %s) declares %s\n", *url, c.SPIVersion(), c.Engine().Name, c.Engine().Version, declaration(c.Capabilities()))

	kitOpts := conformance.Options{MaxWallClock: c.Limits().MaxWallClock, BackendGrace: *grace, CaseTimeout: *caseTimeout}
	results := conformance.Check(ctx, func(conformance.T) spi.Backend { return c }, kitOpts, func(r conformance.Result) {
		fmt.Fprintln(stdout, resultLine(r))
		if *verbose {
			for _, l := range r.Logs {
				fmt.Fprintln(stdout, "    "+oneLine(l, 4096))
			}
		}
	})
	s := conformance.Summarize(results)
	fmt.Fprintln(stdout, summaryLine(s))
	if !s.OK() {
		return exitError{1, errSilent}
	}
	return nil
}

// declaration is what a backend declares (docs/spi.md, "Capabilities"), as its
// members are named on the wire: name=value, a value quoted unless it is one
// word.
func declaration(c spi.Capabilities) string {
	word := func(s string) string {
		if s != "" && strings.IndexFunc(s, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._-+", r))
		}) < 0 {
			return s
		}
		return strconv.Quote(oneLine(s, 64))
	}
	return fmt.Sprintf("language=%s network=%s wallClock=%s memory=%t cpu=%t freshPerRun=%t",
		word(c.Language), word(string(c.Network)), word(string(c.WallClock)), c.Memory, c.CPU, c.FreshPerRun)
}

// resultLine is a case's line: its status, its name and how long it took,
// then why it failed or the declaration that skipped it.
func resultLine(r conformance.Result) string {
	line := fmt.Sprintf("%s %s (%v)", r.Status, r.Case, r.Elapsed.Round(time.Millisecond))
	if r.Status == conformance.Skip {
		line = fmt.Sprintf("%s %s", r.Status, r.Case)
	}
	if r.Reason != "" {
		line += ": " + oneLine(r.Reason, 4096)
	}
	return line
}

// summaryLine says whether the service passed, with the counts.
func summaryLine(s conformance.Summary) string {
	counts := fmt.Sprintf("%d passed, %d failed, %d skipped", s.Passed, s.Failed, s.Skipped)
	switch {
	case s.OK():
		return "conformance: PASS (" + counts + ")"
	case s.Ran() == 0:
		return "conformance: FAIL: no case ran (" + counts + ")"
	default:
		return fmt.Sprintf("conformance: FAIL: %d of %d cases failed (%s)", s.Failed, s.Ran()+s.Skipped, counts)
	}
}

// oneLine folds text onto one line and bounds it to max bytes, so that each
// case is one line of output whatever a message holds.
func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
