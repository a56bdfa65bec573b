package client

import (
	"context"
	"errors"
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

// unsendable returns the answer to a request whose body, data, is over the
// service's maxRequestBytes, which the service cannot read. Its bound holds
// any request whose script and input are within their bounds however they
// are escaped (api.MinRequestBytes), so such a body has a script or an
// input over its bound, and the service's own rule answers it
// (spi.Bounds, docs/spi.md, "Answers no retry can change"); that rule,
// not a copy, is applied here. A memory limit of zero is the service's
// default. It returns false when the rule leaves the request to a run, or
// the service publishes no maxRequestBytes: the request is then sent.
func (c *Client) unsendable(data []byte, scriptBytes int64, memoryBytes int64, inputBytes int) (spi.Outcome, bool) {
	svc := c.info.Limits
	if svc.MaxRequestBytes <= 0 || int64(len(data)) <= svc.MaxRequestBytes {
		return spi.Outcome{}, false
	}
	b := spi.Bounds{MaxScriptBytes: svc.MaxScriptBytes, MinMemoryBytes: svc.MinMemoryBytes, MaxInputBytes: svc.MaxInputBytes}
	return b.Settled(scriptBytes, memoryBytes, int64(inputBytes))
}

// Run runs req on the service and implements spi.Reporter: the outcome (a
// successful one's Value is the JSON text the service sent), the script's
// console output when req.CaptureLogs asks for it, what the run used as the
// service measured it, and the service's id for the request (its
// X-Request-Id), to quote when reporting the run. ContextWithRequestID
// makes that id the caller's own.
//
// Limits: a zero member of req.Limits is left out of the request, so the
// service's default applies to it (Limits().DefaultWallClock and
// DefaultMemoryBytes, from GET /v1/capabilities); the zero spi.Limits runs
// under both defaults. The wall clock is sent in whole milliseconds, rounded
// up. A negative member is the caller's error: Run sends nothing and
// returns an error that wraps ErrInvalidLimits.
//
// Answers no retry can change are never infrastructure, and the service
// gives them (docs/spi.md, "Answers no retry can change"). Run sends every
// request as it is, but for one whose body is over the service's
// maxRequestBytes, which only a script or an input over its bound makes:
// that one Run answers by the service's rule (spi.Bounds) without sending,
// and its Report has no usage and no request id.
//
// req.Replay asks for a replayable run (docs/spi.md, "Replayable runs"). It
// is the caller's error, and nothing is sent, when the service does not
// offer them (ErrNotReplayable) or when Replay.Check refuses it (a
// *spi.ReplayError): a run meant to be replayed must not run otherwise.
//
// Cancelling ctx cancels the HTTP request, which ends the run on the
// service, and Run returns ctx's error. Everything else that goes wrong
// on the way is an infrastructure outcome saying what happened.
func (c *Client) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	if err := checkLimits(req.Limits); err != nil {
		return spi.Report{}, err
	}
	// A lone surrogate (WTF-8, as the engine and the service hold one) is
	// sent as its escape, which the service reads back as the same code
	// unit; any other byte that is not UTF-8 has no JSON form.
	script := req.Script
	if !jsontext.ValidWTF8(script) {
		return infrastructure("the script is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	return c.run(ctx, api.Request{Script: &script, Input: []byte(req.InputJSON), Limits: req.Limits, CaptureLogs: req.CaptureLogs, Replay: req.Replay})
}

// Evaluate is Run without the console output, and implements spi.Backend.
func (c *Client) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	r, err := c.Run(ctx, spi.RunRequest{Request: req})
	return r.Outcome, err
}

// RefRequest is a run of a script the service reads from its own store.
type RefRequest struct {
	// ScriptRef names the script by content reference ("sha256:…").
	ScriptRef string
	// InputJSON is the script's input as JSON text.
	InputJSON string
	// Limits are the run's limits, as in Run.
	Limits spi.Limits
	// CaptureLogs asks for the run's console output (Report.Logs).
	CaptureLogs bool
	// Replay, when set, asks for a replayable run, as in Run.
	Replay *spi.Replay
}

// RunRef is Run for a script the service reads from its own store by
// content reference, with the same limits; the script's size is the
// service's to check. A reference the service does not hold is an
// infrastructure outcome carrying the service's detail.
func (c *Client) RunRef(ctx context.Context, req RefRequest) (spi.Report, error) {
	if err := checkLimits(req.Limits); err != nil {
		return spi.Report{}, err
	}
	if req.ScriptRef == "" {
		return infrastructure("empty script reference"), nil
	}
	return c.run(ctx, api.Request{ScriptRef: req.ScriptRef, Input: []byte(req.InputJSON), Limits: req.Limits, CaptureLogs: req.CaptureLogs, Replay: req.Replay})
}

// EvaluateRef is RunRef without the console output.
func (c *Client) EvaluateRef(ctx context.Context, scriptRef, inputJSON string, limits spi.Limits) (spi.Outcome, error) {
	r, err := c.RunRef(ctx, RefRequest{ScriptRef: scriptRef, InputJSON: inputJSON, Limits: limits})
	return r.Outcome, err
}

func (c *Client) run(ctx context.Context, body api.Request) (spi.Report, error) {
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err
	}
	if !utf8.Valid(body.Input) {
		return infrastructure("the input is not valid UTF-8, which a JSON request cannot carry"), nil
	}
	if err := c.checkReplay(body.Replay); err != nil {
		return spi.Report{}, err
	}
	data := api.AppendSandboxRequest(nil, body)
	scriptBytes := int64(-1) // by reference: the service's store bounds it
	if body.Script != nil {
		scriptBytes = int64(len(*body.Script))
	}
	if o, settled := c.unsendable(data, scriptBytes, body.Limits.MemoryBytes, len(body.Input)); settled {
		return spi.Report{Outcome: o}, nil
	}
	resp, err := c.do(ctx, http.MethodPost, evaluatePath, data, c.cfg.maxResponse)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return spi.Report{}, ctxErr // cancellation wins over whatever came back
	}
	if err != nil {
		rep := spi.Report{Outcome: spi.Infrastructure(err.Error())} // an *Error: bounded, token redacted
		var e *Error
		if errors.As(err, &e) {
			rep.RequestID = e.RequestID
		}
		return rep, nil
	}
	const op = http.MethodPost + " " + evaluatePath
	rep := spi.Report{RequestID: requestIDOf(resp.header)}
	if err := requireJSON(resp); err != nil {
		rep.Outcome = spi.Infrastructure((&Error{Op: op, StatusCode: http.StatusOK, Reason: err.Error()}).Error())
		return rep, nil
	}
	a, err := answerFromBody(op, resp.body)
	if err != nil {
		rep.Outcome = spi.Infrastructure(err.Error())
		return rep, nil
	}
	rep.Outcome = a.Outcome
	if a.Logs != nil && body.CaptureLogs {
		rep.Logs = *a.Logs
	}
	if a.Usage != nil {
		rep.Usage = *a.Usage
	}
	return rep, nil
}

func infrastructure(reason string) spi.Report {
	return spi.Report{Outcome: spi.Infrastructure(spi.BoundText("sandbox service client: "+reason, maxMessageUnits))}
}

// ErrNotReplayable is the error of a replayable run asked of a service whose
// capabilities do not offer them.
var ErrNotReplayable = errors.New("client: the service does not make runs replayable (its capabilities say determinism: false)")

// checkReplay refuses a replay the service cannot honour, or one no service
// takes, before anything is sent: a run the caller means to replay must not
// run otherwise.
func (c *Client) checkReplay(r *spi.Replay) error {
	if r == nil {
		return nil
	}
	if !c.info.Determinism {
		return ErrNotReplayable
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("client: determinism: %w", err)
	}
	return nil
}
