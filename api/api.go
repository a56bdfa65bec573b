// Package api is the service's wire format in Go, beside api/openapi.yaml,
// its contract: the request bodies of both POST routes (the server's
// decoders, which read a body into the effect.Evaluation it asks for or
// refuse it with the Problem the service answers, naming the member and the
// byte offset at fault, and the encoders the clients send them with), the
// answers of POST /v1/sandbox/evaluate (the outcome of docs/spi.md, "Outcomes") and POST
// /v1/evaluations (the value or the typed failure, which the eval verb
// prints too), the GET /v1/capabilities document with its isolation member,
// and the problem document of every refusal with its types (each type's
// status, title and retryability in one table, problemSpecs), each with its
// encoder and its decoder, shared by the handler, the Go client, the eval
// verb and the tests. A typed failure's JSON is effect.Failure's own
// (MarshalJSON, UnmarshalJSON), since the effect returns, logs and stores it.
//
// The golden files in testdata hold one document of each shape as the service
// writes it, and testdata/bounds the value and response bounds for a memory
// maximum; the Go tests and the TypeScript client's tests read the same
// files, so that the implementations cannot drift apart.
//
// Every decoder reads with internal/jsontext's policy: strict RFC 8259 in
// UTF-8, no key twice (keys compared as UTF-16 code units), strings decoded to
// WTF-8 so that a lone surrogate survives.
package api
