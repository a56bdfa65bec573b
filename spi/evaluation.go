package spi

import (
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Evaluation is one run as a caller asks the effect for it (package
// effect's Run; docs/spi.md, "The effect"): the script, by value or by
// reference, the input, the limits, and the answer it wants. It is what
// either of the service's request bodies asks for, which package api
// decodes into it, so that the wire format and the effect share it without
// the one linking the other.
type Evaluation struct {
	// Script is the source of a script sent by value. ScriptRef, when not
	// zero, is the reference of a script to fetch instead.
	Script    string
	ScriptRef contentref.Ref
	// Input is the input's JSON text, already checked by this module's JSON
	// reader (the request decoders' member, jsontext.Validate); empty is
	// null.
	Input jsontext.Text
	// Limits for the run; both must be positive.
	Limits Limits
	// ExpectedOutputShapeHash, when set, is the ShapeHash the value must
	// have (AnswerChannel).
	ExpectedOutputShapeHash string
	// CaptureLogs asks for the run's console output (the effect's Result.Logs), from a
	// backend that is a Reporter.
	CaptureLogs bool
	// Replay, when set, asks for a replayable run (docs/spi.md, "Replayable
	// runs"), of a backend that is a Reporter.
	Replay *Replay
	// Answer is what the effect's Run answers with.
	Answer Answer
}

// Answer is what the effect's Run answers with.
type Answer int

const (
	// AnswerChannel is the effect's decision (docs/spi.md, "The effect", steps
	// 6 to 9): the value as its canonical JSON text (the effect's Result.Value), bounded
	// by its MaxOutputBytes and checked against the expected shape, or a typed
	// *Failure as the error. POST /v1/evaluations answers with it, and so does
	// the eval verb.
	AnswerChannel Answer = iota
	// AnswerOutcome is the backend's outcome (docs/spi.md, "Outcomes") as it
	// is, validated, its value bounded by what a run within the effect's MaxMemoryBytes
	// can make (MaxValueBytes): for a caller whose own effect decides (POST
	// /v1/sandbox/evaluate).
	AnswerOutcome
)
