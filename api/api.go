// Package api is the service's wire format in Go.
//
// It sits beside api/openapi.yaml, the contract, and holds, each with its
// encoder and its decoder:
//
//   - the request bodies of the three POST routes: the server's decoders
//     read a body into the spi.Evaluation it asks for (with a batch's
//     inputs), or refuse it with the Problem the service answers, naming
//     the member and the byte offset at fault; the clients write a Request
//     (and a batch's);
//   - the answers: POST /v1/sandbox/evaluate's outcome (docs/spi.md,
//     "Outcomes"), POST /v1/evaluations' value or typed failure (which the
//     eval verb prints too), each with its report members, and POST
//     /v1/evaluations:batch's lines, an input's answer each, and its
//     summary (docs/batch.md); the JSON of
//     an outcome, of a usage and of a typed failure is package spi's own
//     (its MarshalJSON), since engines, the effect and callers write, log
//     and store those values too;
//   - the GET /v1/capabilities document, with its isolation member;
//   - the problem document of every refusal, and its types: each type's
//     status, title, retryability and Retry-After in one table
//     (problemSpecs), which docs/problems.md and openapi.yaml are checked
//     against.
//
// The handler, the Go client, the eval verb and the tests share it. It
// links no package effect (the values it shares with the effect are spi's),
// so that a client links the wire format and the SPI, never the guarantees.
//
// The golden files in testdata hold one document of each shape as the service
// writes it, answers of a later version with what today's reader keeps of
// them (docs/spi.md, "How the wire evolves"), and testdata/bounds the value
// and response bounds for a memory maximum; the Go tests and the TypeScript
// client's tests read the same files, so that the implementations cannot
// drift apart.
//
// Every decoder reads with internal/jsontext's policy: strict RFC 8259 in
// UTF-8, no key twice (keys compared as UTF-16 code units), strings decoded to
// WTF-8 so that a lone surrogate survives.
package api
