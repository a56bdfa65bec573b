package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

const evaluatePath = "/v1/sandbox/evaluate"

// toWire writes limits as the service reads them, in whole milliseconds.
func toWire(l effect.Limits) api.RequestLimits {
	ms := int64(l.WallClock / time.Millisecond)
	if l.WallClock%time.Millisecond != 0 {
		ms++ // never ask for less time than the caller gave
	}
	return api.RequestLimits{WallClockMs: ms, MemoryBytes: l.MemoryBytes}
}

// Evaluate runs req on the service (ADR 0144 D1) and implements
// effect.Backend. Cancelling ctx cancels the HTTP request, which ends the run
// on the service, and Evaluate returns ctx's error. Everything else that goes
// wrong on the way is an infrastructure outcome saying what happened; a
// successful outcome's Value is the JSON text the service sent.
func (c *Client) Evaluate(ctx context.Context, req effect.Request) (effect.Outcome, error) {
	// A lone surrogate (WTF-8, as the engine and the service hold one) is
	// sent as its escape, which the service reads back as the same code
	// unit; any other byte that is not UTF-8 has no JSON form.
	script := req.Script
	if !jsontext.ValidWTF8(script) {
		return infrastructure("the script is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	return c.evaluate(ctx, api.SandboxRequest{Script: &script, InputJSON: req.InputJSON}, req.Limits)
}

// EvaluateRef is Evaluate for a script the service reads from its own store
// by content reference ("sha256:…"). A reference the service does not hold is
// an infrastructure outcome carrying the service's detail.
func (c *Client) EvaluateRef(ctx context.Context, scriptRef, inputJSON string, limits effect.Limits) (effect.Outcome, error) {
	if scriptRef == "" {
		return infrastructure("empty script reference"), nil
	}
	return c.evaluate(ctx, api.SandboxRequest{ScriptRef: scriptRef, InputJSON: inputJSON}, limits)
}

func (c *Client) evaluate(ctx context.Context, body api.SandboxRequest, limits effect.Limits) (effect.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return effect.Outcome{}, err
	}
	// A zero limit is refused here rather than sent: the service must never
	// read it as "use the default".
	if limits.WallClock <= 0 || limits.MemoryBytes <= 0 {
		return infrastructure(fmt.Sprintf("invalid limits: wall clock %v and memoryBytes %d must be positive", limits.WallClock, limits.MemoryBytes)), nil
	}
	if !utf8.ValidString(body.InputJSON) {
		return infrastructure("the input is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	body.Limits = toWire(limits)
	data := api.AppendSandboxRequest(nil, body)
	resp, err := c.do(ctx, http.MethodPost, evaluatePath, data, c.cfg.maxResponse)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return effect.Outcome{}, ctxErr // cancellation wins over whatever came back
	}
	if err != nil {
		return effect.Infrastructure(err.Error()), nil // an *Error: bounded, token redacted
	}
	const op = http.MethodPost + " " + evaluatePath
	if err := requireJSON(resp); err != nil {
		return effect.Infrastructure((&Error{Op: op, StatusCode: http.StatusOK, Reason: err.Error()}).Error()), nil
	}
	return outcomeFromBody(op, resp.body), nil
}

func infrastructure(reason string) effect.Outcome {
	return effect.Infrastructure(effect.BoundText("sandbox service client: "+reason, maxMessageUnits))
}
