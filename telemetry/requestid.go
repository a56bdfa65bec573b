package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request's id, which every log line
// written with ctx then carries (NewLogger).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id of ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewRequestID is a new request id: 32 random hex digits, for a request
// that brought no id of its own the service takes.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
