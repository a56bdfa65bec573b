package client

import (
	"context"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const evaluatePath = "/v1/sandbox/evaluate"

// checkLimits refuses negative limits, which no service takes; a zero member
// is the service's default.
func checkLimits(l spi.Limits) error {
	if l.WallClock < 0 || l.MemoryBytes < 0 {
		return fmt.Errorf("%w: wall clock %v and memoryBytes %d must not be negative (zero takes the service's default)",
			ErrInvalidLimits, l.WallClock, l.MemoryBytes)
	}
	return nil
}

// Evaluate runs req on the service and implements spi.Backend; a successful
// outcome's Value is the JSON text the service sent.
//
// Limits: a zero member of req.Limits is left out of the request, so the
// service's default applies to it (Limits().DefaultWallClock and
// DefaultMemoryBytes, from GET /v1/capabilities); the zero spi.Limits runs
// under both defaults. The wall clock is sent in whole milliseconds, rounded
// up. A negative member is the caller's error: Evaluate sends nothing and
// returns an error that wraps ErrInvalidLimits. Limits above the service's
// maxima, or a memory limit below its minimum, are the service's to refuse:
// an infrastructure outcome that carries its detail.
//
// Cancelling ctx cancels the HTTP request, which ends the run on the
// service, and Evaluate returns ctx's error. Everything else that goes wrong
// on the way is an infrastructure outcome saying what happened.
func (c *Client) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	// A lone surrogate (WTF-8, as the engine and the service hold one) is
	// sent as its escape, which the service reads back as the same code
	// unit; any other byte that is not UTF-8 has no JSON form.
	if err := checkLimits(req.Limits); err != nil {
		return spi.Outcome{}, err
	}
	script := req.Script
	if !jsontext.ValidWTF8(script) {
		return infrastructure("the script is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	return c.evaluate(ctx, api.Request{Script: &script, Input: []byte(req.InputJSON), Limits: req.Limits})
}

// EvaluateRef is Evaluate for a script the service reads from its own store
// by content reference ("sha256:…"), with the same limits. A reference the
// service does not hold is an infrastructure outcome carrying the service's
// detail.
func (c *Client) EvaluateRef(ctx context.Context, scriptRef, inputJSON string, limits spi.Limits) (spi.Outcome, error) {
	if err := checkLimits(limits); err != nil {
		return spi.Outcome{}, err
	}
	if scriptRef == "" {
		return infrastructure("empty script reference"), nil
	}
	return c.evaluate(ctx, api.Request{ScriptRef: scriptRef, Input: []byte(inputJSON), Limits: limits})
}

func (c *Client) evaluate(ctx context.Context, body api.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if !utf8.Valid(body.Input) {
		return infrastructure("the input is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	data := api.AppendSandboxRequest(nil, body)
	resp, err := c.do(ctx, http.MethodPost, evaluatePath, data, c.cfg.maxResponse)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return spi.Outcome{}, ctxErr // cancellation wins over whatever came back
	}
	if err != nil {
		return spi.Infrastructure(err.Error()), nil // an *Error: bounded, token redacted
	}
	const op = http.MethodPost + " " + evaluatePath
	if err := requireJSON(resp); err != nil {
		return spi.Infrastructure((&Error{Op: op, StatusCode: http.StatusOK, Reason: err.Error()}).Error()), nil
	}
	return outcomeFromBody(op, resp.body), nil
}

func infrastructure(reason string) spi.Outcome {
	return spi.Infrastructure(spi.BoundText("sandbox service client: "+reason, maxMessageUnits))
}
