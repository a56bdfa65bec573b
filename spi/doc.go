// Package spi is the vocabulary every sandbox backend speaks, and the one
// the effect and the wire format share.
//
// It holds what docs/spi.md calls the SPI: the Backend interface and its
// optional parts (Warmer, Closer, Reporter, Timed), the Request and its
// Limits, the Outcome in its closed vocabulary, the Capabilities a backend
// declares, the bounds on a value and on text, the Bounds whose answers no
// retry can change, and the Timing that orders every deadline of a run.
// Engines (the quickjs package, the worker pool) and remote backends (the
// client package) implement it; the effect package alone decides what an
// outcome means.
//
// It holds too what the effect is asked and answers with, which the wire
// format (package api) reads and writes: the Evaluation, the typed Failure
// and its channels, and the ShapeHash an evaluation may pin. An Outcome, a
// Usage and a Failure are written and read as JSON here, once
// (AppendOutcome, DecodeOutcome, AppendUsage, ReadUsage, DecodeFailure, and
// their MarshalJSON and UnmarshalJSON): the service's answers carry them,
// so the wire format and a Go caller's json.Marshal write the same
// document.
//
// The package is a leaf: it imports nothing of this module but its JSON
// policy and the content reference, so that an engine never depends on the
// code that judges it, and a client of the wire never links the effect.
package spi
