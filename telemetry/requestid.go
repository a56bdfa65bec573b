package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// RequestIDHeader is the header that carries a request's id, both ways.
const RequestIDHeader = "X-Request-Id"

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

// RequestID is the id of a request that says id: id itself when it is well
// formed (ValidRequestID), so that a caller's own id ties its logs to
// ours, else a new one.
func RequestID(id string) string {
	if ValidRequestID(id) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidRequestID reports whether id can serve as a request's id: 1 to 128
// of the characters a URI may hold unescaped (letters, digits, "-", ".",
// "_", "~"), so that it is also a relative URI reference (a problem's
// instance) and cannot forge a log line or a header.
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return id != "." && id != ".."
}
