package quickjs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// What a run came to, in the SPI's outcome vocabulary.

// returnHint follows the parser's message for a return outside a function.
const returnHint = ": a script is global code, and its result is the value of its last expression: write `input.a`, not `return input.a`"

// toResult maps the shim's status to the SPI's outcome vocabulary, for the
// run st under the memory limit memoryBytes.
func (e *Engine) toResult(ctx context.Context, r execResult, st *runState, memoryBytes int64) (spi.Report, error) {
	if err := ctx.Err(); err != nil {
		return spi.Report{}, err // cancellation wins over whatever the run produced
	}
	if r.err != nil {
		var exit *sys.ExitError
		if errors.As(r.err, &exit) {
			return spi.Report{Outcome: spi.LimitHit(spi.LimitWallClock)}, nil
		}
		if errors.Is(r.err, errGuestMemory) {
			return spi.Report{Outcome: spi.InputTooLarge()}, nil
		}
		// Anything else is the guest's own failure (a trap, or an answer
		// outside its memory): the engine was broken from inside by the
		// script it ran, an engine fault. The first line only: wazero
		// appends the guest's stack trace.
		trap, _, _ := strings.Cut(r.err.Error(), "\n")
		return spi.Report{Outcome: spi.Infrastructure("quickjs: engine failed: " + trap), EngineFault: trap}, nil
	}
	raw := r.raw
	res := spi.Report{Logs: string(raw.logs)}
	if late(raw, st) {
		res.Outcome = spi.LimitHit(spi.LimitWallClock)
		return res, nil
	}
	switch raw.status {
	case statusOK:
		res.Outcome = okValue(raw.result, memoryBytes)
	case statusThrew:
		var name *string
		if raw.hasName {
			n := string(raw.name)
			name = &n
		}
		msg := string(raw.result)
		if raw.compileError && name != nil && *name == "SyntaxError" && msg == "return not in a function" {
			// the commonest mistake a model makes: a script is global code,
			// and its result is the value of its last expression
			msg += returnHint
		}
		res.Outcome = spi.Threw(name, msg)
	case statusLimitCPU:
		res.Outcome = spi.LimitHit(spi.LimitCPU)
	case statusLimitMemory:
		res.Outcome = spi.LimitHit(spi.LimitMemory)
	case statusLimitWallClock:
		res.Outcome = spi.LimitHit(spi.LimitWallClock)
	case statusCancelled:
		// the caller's context was done when the guest polled; ctx.Err() is
		// checked above, so this is a context that ended without an error
		return spi.Report{}, context.Canceled
	case statusInputTooLarge:
		res.Outcome = spi.InputTooLarge()
	case statusInputInvalid:
		res.Outcome = spi.Infrastructure("quickjs: input is not valid JSON: " + string(raw.result))
	default:
		res.Outcome = spi.Infrastructure(fmt.Sprintf("quickjs: the shim failed with status %d", raw.status))
	}
	return res, nil
}

// late reports whether a run that ended with the script's own outcome, its
// value or its exception, ended once its deadline had passed: such a run is
// the wall-clock limit, as it would have been had the interrupt handler
// seen the deadline (docs/spi.md, "Timing"). A run ends so when its last
// stretch was native work that never polled (one long builtin) and that
// ended within the hard kill's grace; without this, whether a caller got a
// value late or the limit would depend on the speed of the machine. The
// time is the guest's own return, taken in the process where the deadline
// was set: nothing the host does around the run (a queue, the frames to a
// worker and back, copying the result out) counts against it. A limit the
// run hit stays that limit, and an input that did not fit stays
// inputTooLarge: the script never ran.
func late(raw rawResult, st *runState) bool {
	if raw.status != statusOK && raw.status != statusThrew || raw.returned.IsZero() {
		return false
	}
	return st.passed(raw.returned)
}

// okValue is the outcome of a run whose result JSON.stringify wrote as text,
// under the memory limit memoryBytes. The value is always the text
// JSON.stringify writes for an ordinary value (docs/spi.md, "Outcomes"), so
// that what a script returns is never text the effect refuses, which would
// pass the script's own value off as a failure of the service, and so that
// both routes answer one value for one script.
func okValue(text []byte, memoryBytes int64) spi.Outcome {
	deeper, canonical := jsontext.Stringified(text, spi.MaxValueDepth)
	if deeper {
		// JSON.stringify has no depth bound short of the stack, so a result
		// whose answer would be deeper than every JSON reader downstream
		// accepts is the script's own doing: a threw RangeError, as a cycle
		// is a TypeError.
		name := "RangeError"
		return spi.Threw(&name, fmt.Sprintf("the result nests deeper than %d levels: the answer around it would be deeper than the %d levels JSON readers accept",
			spi.MaxValueDepth, jsontext.MaxDepth))
	}
	if canonical {
		return spi.OK(text)
	}
	// JSON.stringify copies a JSON.rawJSON text as it is, and that text may
	// hold what no ordinary value gives: a lone surrogate as a character,
	// which is not UTF-8 and so not JSON text, or a number not in the form
	// JSON.stringify writes (1e1000, which JSON.parse reads as Infinity; -0;
	// a million digits), which the effect's round trip would rewrite and the
	// SPI route would pass on. Its value is the ordinary one JSON.parse makes
	// of the text, written as JSON.stringify writes that.
	out, over, err := jsontext.CanonicalWTF8(text, int(max(int64(len(text)), memoryBytes)))
	switch {
	case over:
		// Longer than the engine's own text and than the run's memory:
		// JSON.stringify would have run out of memory writing the ordinary
		// value (1e20 is 21 bytes where the raw text "1e20" is 4). The bound
		// also keeps the value within what a run can make (spi.MaxValueBytes).
		return spi.LimitHit(spi.LimitMemory)
	case err != nil:
		// Not JSON at all: the engine's fault, which the effect refuses as a
		// malformed outcome.
		return spi.OK(text)
	}
	return spi.OK(out)
}
