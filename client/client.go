// Package client speaks the sandbox service's HTTP API (api/openapi.yaml). A Client
// is an spi.Reporter over POST /v1/sandbox/evaluate, so that an effect (this
// module's, or loom's through the same JSON) can use a running service as its
// engine, with the script's console, what the run used and the service's
// request id beside each outcome; it also offers the effect over HTTP,
// POST /v1/evaluations.
//
// The client never guesses what a run did. An outcome comes only from a 200
// response whose body decodes into the closed vocabulary of docs/spi.md,
// "Outcomes" (report members of a later version beside it ignored:
// docs/spi.md, "How the wire evolves"), or, for a request whose body is over
// the service's maxRequestBytes, from the service's own rule for what no
// retry can change (spi.Bounds; docs/spi.md, "Answers no retry can
// change").
// Every other answer (a problem document, a 5xx, a network error, a redirect,
// a malformed or oversized body) becomes an infrastructure outcome, which the
// effect treats as untyped and retryable. Only the caller's own doing is
// returned as an error: its cancellation, limits no service takes
// (ErrInvalidLimits), and an evaluation request no service takes
// (ErrInvalidRequest). A zero limit takes the service's default.
//
// client/README.md has a complete program.
package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// DefaultMaxResponseBytes is the least bound on a response body unless
// WithMaxResponseBytes says otherwise: the bound is the larger of this and
// what a run under the service's memory maximum can make (see
// defaultMaxResponse), so that any value the service returns reaches the
// caller's effect, which applies its own, smaller output bound afterwards.
const DefaultMaxResponseBytes = 64 << 20

// defaultMaxResponse is the bound on a response body for a service whose
// maxMemoryBytes is maxMemory, unless WithMaxResponseBytes sets one: the
// longest value the SPI route returns (spi.MaxValueBytes) and a MiB for
// the outcome around it, at least DefaultMaxResponseBytes. The tests check
// it, and the TypeScript client's bound, against one table:
// api/testdata/bounds/response-bounds.json.
func defaultMaxResponse(maxMemory int64) int64 {
	return max(DefaultMaxResponseBytes, spi.MaxValueBytes(maxMemory)+1<<20)
}

// Bounds the client applies whatever the options say.
const (
	// maxProblemBytes bounds the body of a non-200 answer; a longer one is
	// reported without its problem document.
	maxProblemBytes = 64 << 10
	// maxCapabilitiesBytes bounds GET /v1/capabilities.
	maxCapabilitiesBytes = 1 << 20
	// maxMessageUnits bounds every message the client composes, in UTF-16
	// units as the effect counts them.
	maxMessageUnits = spi.MaxMessageUnits
)

// Errors from Dial, tested with errors.Is.
var (
	// ErrIncompatibleSPI: the service implements a backend SPI whose major
	// version differs from spi.SPIVersion's.
	ErrIncompatibleSPI = errors.New("client: incompatible sandbox backend SPI")
	// ErrInvalidCapabilities: GET /v1/capabilities did not return a valid
	// document.
	ErrInvalidCapabilities = errors.New("client: invalid capabilities document")
)

// ErrInvalidLimits is wrapped by the error of Run, Evaluate, RunRef,
// EvaluateRef and Evaluations for limits with a negative member, which are
// never sent.
var ErrInvalidLimits = errors.New("client: invalid limits")

// ErrInvalidRequest is wrapped by the error of Evaluations for an
// EvaluationRequest no service takes, which is never sent: an empty
// ScriptRef, or an Input that is not JSON text (the error says where).
var ErrInvalidRequest = errors.New("client: invalid evaluation request")

// Option configures a Client.
type Option func(*config)

type config struct {
	hc          *http.Client
	idToken     func(ctx context.Context, audience string) (string, error)
	audience    string
	maxResponse int64
	// maxResponseSet: WithMaxResponseBytes chose maxResponse
	maxResponseSet bool
	retryBusy      bool
	// sleep waits between busy retries; the tests watch it
	sleep func(ctx context.Context, d time.Duration) error
}

// WithHTTPClient sends requests through hc. The client keeps a copy that does
// not follow redirects (a redirect is reported, never followed, so neither the
// request body nor the ID token goes anywhere unexpected); hc itself is not
// changed. The default is a client with its own transport.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.hc = hc } }

// WithIDToken sets the hook that returns an ID token for audience (see
// WithAudience); every request carries it as "Authorization: Bearer …". The
// hook is called once per request and should cache (idtoken.NewTokenSource
// does). Tokens never appear in errors or outcome messages the client
// composes, even when a server echoes them.
func WithIDToken(f func(ctx context.Context, audience string) (string, error)) Option {
	return func(c *config) { c.idToken = f }
}

// WithAudience sets the audience passed to the WithIDToken hook. The default
// is the base URL's origin (scheme://host[:port]), which is what Cloud Run
// expects for a service URL.
func WithAudience(audience string) Option { return func(c *config) { c.audience = audience } }

// WithMaxResponseBytes bounds the body of a successful response (default:
// what a run under the service's memory maximum can make, at least
// DefaultMaxResponseBytes). A longer body is an infrastructure outcome.
func WithMaxResponseBytes(n int64) Option {
	return func(c *config) { c.maxResponse, c.maxResponseSet = n, true }
}

// WithRetryBusy says whether a 429 (the service is running another
// evaluation) is retried, within the context's life (the default), or
// reported at once. The retries back off from 16 ms, doubling, each wait at
// most the answer's Retry-After (a second without one), so that a slot
// freed within milliseconds is taken within milliseconds.
func WithRetryBusy(on bool) Option { return func(c *config) { c.retryBusy = on } }

// Client is a connection to one sandbox service. It is safe for concurrent
// use. It implements spi.Reporter (so spi.Backend), spi.Warmer and
// spi.Closer.
type Client struct {
	base string // scheme://host[:port][/path], no trailing slash
	cfg  config
	info Info
}

var (
	_ spi.Reporter = (*Client)(nil)
	_ spi.Warmer   = (*Client)(nil)
	_ spi.Closer   = (*Client)(nil)
)

// Info is the service's GET /v1/capabilities document, as validated by Dial.
type Info = api.Info

// Limits are the service's limits as GET /v1/capabilities reports them. The
// members the client knows are decoded into the fields (each must be a
// non-negative integer when present; an absent one is zero); Raw holds the
// whole object as received, so a member this client does not know is still
// readable.
type Limits = api.Limits

// Engine identifies the service's engine build.
type Engine = api.Engine

// Dial reads the service's GET /v1/capabilities once, validates it and keeps a
// frozen copy. It refuses a service whose spiVersion has a major version other
// than spi.SPIVersion's (ErrIncompatibleSPI) and a document that does not
// decode strictly (ErrInvalidCapabilities).
func Dial(ctx context.Context, baseURL string, opts ...Option) (*Client, error) {
	cfg := config{maxResponse: DefaultMaxResponseBytes, retryBusy: true, sleep: sleep}
	for _, o := range opts {
		o(&cfg)
	}
	base, origin, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	if cfg.maxResponse <= 0 {
		return nil, fmt.Errorf("client: WithMaxResponseBytes must be positive, got %d", cfg.maxResponse)
	}
	if cfg.audience == "" {
		cfg.audience = origin
	}
	var hc http.Client
	if cfg.hc != nil {
		hc = *cfg.hc
	} else {
		hc.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.hc = &hc

	c := &Client{base: base, cfg: cfg}
	info, err := c.readInfo(ctx)
	if err != nil {
		hc.CloseIdleConnections()
		return nil, err
	}
	c.info = info
	if !cfg.maxResponseSet {
		c.cfg.maxResponse = defaultMaxResponse(info.Limits.MaxMemoryBytes)
	}
	return c, nil
}

func (c *Client) readInfo(ctx context.Context) (Info, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/capabilities", nil, maxCapabilitiesBytes)
	if err != nil {
		return Info{}, fmt.Errorf("client: dial %s: %w", c.base, err)
	}
	if err := requireJSON(resp); err != nil {
		return Info{}, fmt.Errorf("%w: %w (from %s)", ErrInvalidCapabilities, err, c.base)
	}
	info, err := decodeInfo(resp.body)
	if err != nil {
		return Info{}, fmt.Errorf("%w (from %s)", err, c.base)
	}
	return info, nil
}

// parseBase checks the service URL and returns it without a trailing slash,
// and its origin.
func parseBase(raw string) (base, origin string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("client: base URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "", fmt.Errorf("client: base URL %q: scheme must be http or https", raw)
	case u.Host == "":
		return "", "", fmt.Errorf("client: base URL %q has no host", raw)
	case u.User != nil:
		return "", "", errors.New("client: base URL must not carry credentials (use WithIDToken)")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "", fmt.Errorf("client: base URL %q must not have a query or fragment", raw)
	}
	origin = u.Scheme + "://" + u.Host
	return origin + strings.TrimRight(u.EscapedPath(), "/"), origin, nil
}

// Capabilities returns the copy of the service's declaration that Dial
// validated (docs/spi.md, "Capabilities"); it never changes.
func (c *Client) Capabilities() spi.Capabilities { return c.info.Capabilities }

// Limits returns the service's limits as Dial read them.
func (c *Client) Limits() Limits {
	l := c.info.Limits
	l.Raw = append([]byte(nil), l.Raw...)
	return l
}

// Engine returns the service's engine identity as Dial read it.
func (c *Client) Engine() Engine { return c.info.Engine }

// SPIVersion returns the backend SPI version the service reported.
func (c *Client) SPIVersion() string { return c.info.SPIVersion }

// Replayable reports whether the service makes a run replayable when asked
// (its capabilities' determinism): a Replay asked of one that does not is
// ErrNotReplayable, so that a caller can choose before it asks.
func (c *Client) Replayable() bool { return c.info.Determinism }

// Warm asks the service whether it is ready (GET /readyz): an instance that
// answers has compiled and warmed its engine. It returns nil on 200.
func (c *Client) Warm(ctx context.Context) error {
	if _, err := c.do(ctx, http.MethodGet, "/readyz", nil, maxProblemBytes); err != nil {
		return err
	}
	return nil
}

// Close releases the client's idle connections. The client stays usable; a
// later request opens a new connection.
func (c *Client) Close(context.Context) error {
	c.cfg.hc.CloseIdleConnections()
	return nil
}
