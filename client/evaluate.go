package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

const evaluatePath = "/v1/sandbox/evaluate"

// wireLimits is the limits object of both POST routes.
type wireLimits struct {
	WallClockMs int64 `json:"wallClockMs,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

func toWire(l effect.Limits) wireLimits {
	ms := int64(l.WallClock / time.Millisecond)
	if l.WallClock%time.Millisecond != 0 {
		ms++ // never ask for less time than the caller gave
	}
	return wireLimits{WallClockMs: ms, MemoryBytes: l.MemoryBytes}
}

// evaluateBody is the body of POST /v1/sandbox/evaluate: exactly one of script
// and scriptRef.
type evaluateBody struct {
	Script    *string    `json:"script,omitempty"`
	ScriptRef string     `json:"scriptRef,omitempty"`
	InputJSON string     `json:"inputJson"`
	Limits    wireLimits `json:"limits"`
}

// Evaluate runs req on the service (ADR 0144 D1) and implements
// effect.Backend. Cancelling ctx cancels the HTTP request, which ends the run
// on the service, and Evaluate returns ctx's error. Everything else that goes
// wrong on the way is an infrastructure outcome saying what happened; a
// successful outcome's Value is the JSON text the service sent.
func (c *Client) Evaluate(ctx context.Context, req effect.Request) (effect.Outcome, error) {
	script := req.Script
	if !utf8.ValidString(script) {
		return infrastructure("the script is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	return c.evaluate(ctx, evaluateBody{Script: &script, InputJSON: req.InputJSON}, req.Limits)
}

// EvaluateRef is Evaluate for a script the service reads from its own store
// by content reference ("sha256:…"). A reference the service does not hold is
// an infrastructure outcome carrying the service's detail.
func (c *Client) EvaluateRef(ctx context.Context, scriptRef, inputJSON string, limits effect.Limits) (effect.Outcome, error) {
	if scriptRef == "" {
		return infrastructure("empty script reference"), nil
	}
	return c.evaluate(ctx, evaluateBody{ScriptRef: scriptRef, InputJSON: inputJSON}, limits)
}

func (c *Client) evaluate(ctx context.Context, body evaluateBody, limits effect.Limits) (effect.Outcome, error) {
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
	data, err := marshal(body)
	if err != nil {
		return infrastructure("encoding the request: " + err.Error()), nil
	}
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

// marshal encodes v without HTML escaping (the body is not HTML).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
