package effect

import (
	"context"
	"errors"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Sentinels for untyped failures, tested with errors.Is. An untyped failure
// is infrastructure or a bug, never a statement about the script; use
// Retryable to decide whether to run the evaluation again.
var (
	// ErrInvalidInput: the evaluation input was malformed (script reference,
	// limits or expected shape hash). Not retryable.
	ErrInvalidInput = errors.New("sandbox: invalid evaluation input")
	// ErrScriptFetch: the script could not be read from the store. Retryable
	// only when the store says it is unavailable. An integrity mismatch also
	// matches contentref.ErrIntegrity and is never retryable.
	ErrScriptFetch = errors.New("sandbox: script fetch failed")
	// ErrBackendFailed: the backend reported infrastructure or returned an
	// error instead of an outcome. Retryable, except when the error was a
	// typed Failure: a backend never decides a channel.
	ErrBackendFailed = errors.New("sandbox backend failed")
	// ErrBackendDidNotSettle: the backend did not return within the run's wall
	// clock plus the backend grace. Retryable.
	ErrBackendDidNotSettle = errors.New("sandbox backend did not settle")
	// ErrMalformedOutcome: the backend's outcome broke the closed vocabulary
	// of docs/spi.md, "Outcomes". Not retryable: the same backend will do it
	// again.
	ErrMalformedOutcome = errors.New("sandbox backend returned a malformed outcome")
	// ErrBackendPanicked: the backend panicked. Not retryable.
	ErrBackendPanicked = errors.New("sandbox backend panicked")
	// ErrNotRun: beside a cancellation, the evaluation ended before the
	// backend was called (the script was being fetched): the script did
	// not run.
	ErrNotRun = errors.New("sandbox: the script was not run")
	// ErrNoScriptStore: a script asked for by reference, of an effect
	// without a store (NoStore). Not retryable.
	ErrNoScriptStore = errors.New("sandbox: no script store: scripts are run by value only")
)

// NotRunReason says why a script never ran.
type NotRunReason string

// The ways a script never runs.
const (
	// ScriptNotFound: the store has no script under the reference. The
	// error is also the typed scriptMissing (errors.As *spi.Failure).
	ScriptNotFound NotRunReason = "scriptNotFound"
	// NoScriptStore: a script by reference, and the effect has no store.
	NoScriptStore NotRunReason = "noScriptStore"
	// StoreUnavailable: the store said it is unavailable, or did not
	// deliver by the fetch deadline. Retryable.
	StoreUnavailable NotRunReason = "storeUnavailable"
	// ScriptTooLarge: the script is over the store's maximum or
	// MaxScriptBytes (see NotRunError's Size and Limit).
	ScriptTooLarge NotRunReason = "scriptTooLarge"
	// ScriptIntegrity: the bytes do not hash to the reference.
	ScriptIntegrity NotRunReason = "scriptIntegrity"
	// StoreRefused: the store refused access (credentials, IAM).
	StoreRefused NotRunReason = "storeRefused"
	// StorePanicked: the store panicked (a bug in the store).
	StorePanicked NotRunReason = "storePanicked"
	// StoreFailed: the store failed in any other way.
	StoreFailed NotRunReason = "storeFailed"
	// Stopped: the caller's context ended before the backend was called.
	// The error also matches ctx.Err() and ErrNotRun.
	Stopped NotRunReason = "stopped"
)

// NotRunError is the error of an evaluation whose script never ran, with
// the reason: the one classification of a store's failures, which a caller
// maps to its own answers. Test for it with errors.As. Its text is the
// bounded text of the failure it wraps, which errors.Is and Retryable see
// through it (ErrScriptFetch for the store's failures, a cancellation for
// Stopped, the typed scriptMissing for ScriptNotFound).
type NotRunError struct {
	Reason NotRunReason
	// ScriptRef is the script asked for; zero for one sent by value.
	ScriptRef contentref.Ref
	// Size and Limit, for ScriptTooLarge: the script's size in bytes (-1
	// when the store found it over its limit by reading past it) and the
	// bound it is over: the store's own maximum when StoreLimit (a store
	// whose maximum is below MaxScriptBytes), else MaxScriptBytes.
	Size, Limit int64
	StoreLimit  bool
	err         error
}

func notRun(reason NotRunReason, ref contentref.Ref, err error) *NotRunError {
	return &NotRunError{Reason: reason, ScriptRef: ref, err: err}
}

func (e *NotRunError) Error() string { return e.err.Error() }
func (e *NotRunError) Unwrap() error { return e.err }

// untypedError is every failure that is not a Failure. Its text is bounded and
// storable, because the caller records it in an append-only log; the original
// error stays reachable through Unwrap, unless it would pass for a
// cancellation or a typed failure (see newUntyped).
type untypedError struct {
	text      string
	kind      error
	cause     error
	retryable bool
}

func (e *untypedError) Error() string { return e.text }

func (e *untypedError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// newUntyped builds an untyped failure of the given kind.
//
// A cause that wraps a *spi.Failure, context.Canceled or context.DeadlineExceeded
// is flattened to its text: otherwise errors.As or errors.Is on the result
// would report a channel the effect did not decide, or a cancellation that the
// caller did not ask for.
func newUntyped(kind error, detail string, cause error, retryable bool) error {
	text := kind.Error()
	if detail != "" {
		text += ": " + detail
	}
	return newUntypedText(kind, text, cause, retryable)
}

// newUntypedText is newUntyped with the text before the cause given whole.
func newUntypedText(kind error, text string, cause error, retryable bool) error {
	if cause != nil {
		causeText := cause.Error()
		text += ": " + causeText
		var f *spi.Failure
		if errors.As(cause, &f) || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
			cause = errors.New(spi.BoundText(causeText, spi.MaxMessageUnits))
		}
	}
	return &untypedError{
		text:      spi.BoundText(text, spi.MaxMessageUnits),
		kind:      kind,
		cause:     cause,
		retryable: retryable,
	}
}

// cancelled is the error for a caller who cancelled or whose deadline passed.
// It matches ctx.Err() (context.Canceled or context.DeadlineExceeded) and the
// context's cause, and ErrNotRun when notRun (the backend was never called).
func cancelled(ctx context.Context, notRun bool) error {
	err := ctx.Err()
	cause := context.Cause(ctx)
	text := "sandbox: cancelled: " + err.Error()
	if cause != nil && cause != err {
		text += ": " + cause.Error()
	} else {
		cause = nil
	}
	kind := err
	if notRun {
		kind = errors.Join(err, ErrNotRun)
	}
	return &untypedError{text: spi.BoundText(text, spi.MaxMessageUnits), kind: kind, cause: cause}
}

// Retryable reports whether err is an untyped infrastructure failure that may
// succeed if the evaluation is run again: the backend reported
// infrastructure, returned an error, or did not settle, or the script store
// was unavailable. Typed failures are outcomes of (script, input), never
// retried; cancellations, invalid input, integrity mismatches, malformed
// outcomes and panics are not retryable either.
func Retryable(err error) bool {
	var u *untypedError
	return errors.As(err, &u) && u.retryable
}
