package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const batchPath = "/v1/evaluations:batch"

// BatchRequest is one script over many inputs (POST
// /v1/evaluations:batch, docs/batch.md): EvaluationRequest's members, with
// Inputs for its Input.
type BatchRequest struct {
	// ScriptRef names the script in the service's store ("sha256:…"); it
	// is fetched and verified once for the batch.
	ScriptRef string
	// Inputs are the inputs, each JSON text (nil sends null), each run in
	// a fresh run of its own; at most the service's maxBatchItems
	// (Limits().MaxBatchItems).
	Inputs []json.RawMessage
	// Limits, ExpectedOutputShapeHash, CaptureLogs and Replay apply to
	// each input's run, as EvaluationRequest's do to its one.
	Limits                  *spi.Limits
	ExpectedOutputShapeHash string
	CaptureLogs             bool
	Replay                  *spi.Replay
}

// BatchLine is one line of a batch's answer: an input's answer (Answer,
// as Evaluations would give it for that input alone), the problem that
// input alone would get (Problem), an input not run (NotRun, to be sent
// again), or the summary that ends a whole answer (Summary).
type BatchLine = api.BatchLine

// BatchSummary is a batch's last line.
type BatchSummary = api.BatchSummary

// Batch runs the script over each input on the service and returns the
// answer's lines as they arrive: one per input, in the inputs' order
// (Index 0, 1, …), then the summary. Iteration may stop at any line; the
// rest of the answer is then not read, and the connection is closed, which
// stops the batch's runs on the service.
//
// An error ends the sequence, yielded with a zero line: ctx's when ctx
// ended, an error wrapping ErrInvalidRequest or ErrInvalidLimits for a
// request never sent, or an *Error: the service refused the batch (a
// problem, as Evaluations gets one), or the answer was cut before its
// summary or is malformed. A cut answer is Retryable: the inputs with no
// line were not answered, and sent again they run as if for the first
// time.
func (c *Client) Batch(ctx context.Context, req BatchRequest) iter.Seq2[BatchLine, error] {
	return func(yield func(BatchLine, error) bool) {
		res, err := c.openBatch(ctx, req)
		if err != nil {
			yield(BatchLine{}, err)
			return
		}
		defer res.Body.Close()
		op := http.MethodPost + " " + batchPath
		id := requestIDOf(res.Header)
		fail := func(retryable bool, format string, args ...any) {
			if ctx.Err() != nil {
				yield(BatchLine{}, ctx.Err())
				return
			}
			reason := spi.BoundText(fmt.Sprintf(format, args...), maxMessageUnits)
			yield(BatchLine{}, &Error{Op: op, StatusCode: http.StatusOK, Reason: reason, RequestID: id, retryable: retryable})
		}
		mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
		if err != nil || mt != api.BatchContentType {
			fail(false, "response Content-Type is %q, want %s", spi.BoundText(res.Header.Get("Content-Type"), 64), api.BatchContentType)
			return
		}
		lines := bufio.NewReaderSize(res.Body, 64<<10)
		for n := 0; ; n++ {
			raw, err := readLine(lines, c.cfg.maxResponse)
			switch {
			case errors.Is(err, io.EOF):
				fail(true, "the answer was cut after %d of %d inputs' lines, before its summary; those without a line were not answered", min(n, len(req.Inputs)), len(req.Inputs))
				return
			case err != nil:
				fail(true, "reading the answer after %d lines: %v", n, err)
				return
			}
			l, err := api.DecodeBatchLine(raw)
			if err != nil {
				fail(false, "malformed line %d: %v", n+1, err)
				return
			}
			switch {
			case n < len(req.Inputs) && (l.Summary != nil || l.Index != n):
				fail(false, "line %d is not input %d's", n+1, n)
				return
			case n == len(req.Inputs) && (l.Summary == nil || l.Summary.Items != n):
				fail(false, "line %d is not the summary of %d inputs", n+1, n)
				return
			}
			if !yield(l, nil) || l.Summary != nil {
				return
			}
		}
	}
}

// readLine reads one line without its newline; a line over limit bytes is
// an error, and so is one the answer ends inside.
func readLine(r *bufio.Reader, limit int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if int64(len(line)) > limit+1 {
			return nil, fmt.Errorf("a line exceeds the client's limit of %d bytes", limit)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// openBatch checks and sends a batch, and returns its 200 answer, still
// to be read.
func (c *Client) openBatch(ctx context.Context, req BatchRequest) (*http.Response, error) {
	if err := c.checkReplay(req.Replay); err != nil {
		return nil, err
	}
	if req.ScriptRef == "" {
		return nil, fmt.Errorf("%w: ScriptRef is empty", ErrInvalidRequest)
	}
	for i, in := range req.Inputs {
		if in == nil {
			continue // sent as null
		}
		if err := jsontext.Validate(in); err != nil {
			return nil, fmt.Errorf("%w: Inputs[%d] is not JSON text: %w", ErrInvalidRequest, i, err)
		}
	}
	body := api.BatchRequest{Request: api.Request{
		ScriptRef:               req.ScriptRef,
		ExpectedOutputShapeHash: req.ExpectedOutputShapeHash,
		CaptureLogs:             req.CaptureLogs,
		Replay:                  req.Replay,
	}, Inputs: req.Inputs}
	if req.Limits != nil {
		if err := checkLimits(*req.Limits); err != nil {
			return nil, err
		}
		body.Limits = *req.Limits
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := api.AppendBatchRequest(nil, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	res, _, err := c.open(ctx, http.MethodPost, batchPath, data)
	return res, err
}
