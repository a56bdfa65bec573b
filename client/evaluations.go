package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const evaluationsPath = "/v1/evaluations"

// EvaluationRequest is one call of the effect over HTTP (POST
// /v1/evaluations).
type EvaluationRequest struct {
	// ScriptRef names the script in the service's store ("sha256:…").
	ScriptRef string
	// Input is the script's input as JSON text; nil sends null.
	Input json.RawMessage
	// Limits, when set, are sent; a zero member is left out, so that the
	// service's default applies to it. Nil leaves both to the service. A
	// negative member is refused before sending (ErrInvalidLimits).
	Limits *spi.Limits
	// ExpectedOutputShapeHash, when set, asks for the shape check.
	ExpectedOutputShapeHash string
	// CaptureLogs asks for the run's bounded console output.
	CaptureLogs bool
	// Replay, when set, asks for a replayable run (docs/spi.md,
	// "Replayable runs").
	Replay *spi.Replay
}

// EvaluationResponse is the service's answer when the effect decided: either
// OK with the value, or the typed Failure (a channel and its fields, as the
// in-process effect returns them). Logs is set when the request asked for
// them and the service sent them; Usage is what the run used, as the service
// measured it.
type EvaluationResponse struct {
	api.EvaluationResponse
	// RequestID is the service's id for the request (its X-Request-Id), to
	// quote when reporting the evaluation; empty for an answer the client
	// gave without sending.
	RequestID string
}

// Evaluations runs the effect on the service. Every outcome the effect types,
// failures included, is an EvaluationResponse with a nil error. The error is
// ctx's when ctx ended, and otherwise an *Error: an untyped failure (a 5xx
// problem, whose Retryable says whether a retry can help), a request the
// service refused (4xx), a busy service that could not be waited for, a
// network failure or a malformed answer. A request the client can tell is
// invalid is refused before it is sent, with an error that wraps
// ErrInvalidLimits or ErrInvalidRequest.
//
// Answers no retry can change are the service's, as their channels
// (docs/spi.md, "Answers no retry can change"; the input is measured as it
// is sent, without insignificant white space). As in Run, a request whose
// body is over the service's maxRequestBytes is answered by the service's
// rule without sending.
func (c *Client) Evaluations(ctx context.Context, req EvaluationRequest) (EvaluationResponse, error) {
	const op = http.MethodPost + " " + evaluationsPath
	body := api.Request{
		ScriptRef:               req.ScriptRef,
		Input:                   req.Input,
		ExpectedOutputShapeHash: req.ExpectedOutputShapeHash,
		CaptureLogs:             req.CaptureLogs,
		Replay:                  req.Replay,
	}
	if err := c.checkReplay(req.Replay); err != nil {
		return EvaluationResponse{}, err
	}
	if req.ScriptRef == "" {
		return EvaluationResponse{}, fmt.Errorf("%w: ScriptRef is empty", ErrInvalidRequest)
	}
	if req.Input != nil {
		if err := jsontext.Validate(req.Input); err != nil {
			return EvaluationResponse{}, fmt.Errorf("%w: Input is not JSON text: %w", ErrInvalidRequest, err)
		}
	}
	if req.Limits != nil {
		if err := checkLimits(*req.Limits); err != nil {
			return EvaluationResponse{}, err
		}
		body.Limits = *req.Limits
	}
	if err := ctx.Err(); err != nil {
		return EvaluationResponse{}, err
	}
	if body.Input != nil {
		// the service measures the input as it arrives: compacted
		var in bytes.Buffer
		if err := json.Compact(&in, body.Input); err != nil {
			return EvaluationResponse{}, fmt.Errorf("%w: Input: %w", ErrInvalidRequest, err)
		}
		body.Input = in.Bytes()
	}
	data, err := api.AppendEvaluationRequest(nil, body)
	if err != nil {
		return EvaluationResponse{}, fmt.Errorf("client: encoding the request: %w", err)
	}
	if o, settled := c.unsendable(data, -1, body.Limits.MemoryBytes, len(body.Input)); settled {
		// the channels the effect maps the rule's outcomes to
		switch o.Kind {
		case spi.KindLimit:
			return EvaluationResponse{EvaluationResponse: api.LimitExceededAnswer(o.Limit)}, nil
		case spi.KindInputTooLarge:
			return EvaluationResponse{EvaluationResponse: api.InputTooLargeAnswer(int(c.info.Limits.MaxInputBytes))}, nil
		}
	}
	resp, err := c.do(ctx, http.MethodPost, evaluationsPath, data, c.cfg.maxResponse)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return EvaluationResponse{}, ctxErr
	}
	if err != nil {
		return EvaluationResponse{}, err
	}
	id := requestIDOf(resp.header)
	if err := requireJSON(resp); err != nil {
		return EvaluationResponse{}, &Error{Op: op, StatusCode: http.StatusOK, Reason: err.Error(), RequestID: id}
	}
	r, err := api.DecodeEvaluation(resp.body)
	if err != nil {
		return EvaluationResponse{}, &Error{Op: op, StatusCode: http.StatusOK, Reason: spi.BoundText("malformed response: "+err.Error(), maxMessageUnits), RequestID: id}
	}
	return EvaluationResponse{EvaluationResponse: r, RequestID: id}, nil
}
