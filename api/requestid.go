package api

// RequestIDHeader carries a request's id both ways (api/openapi.yaml,
// RequestId): the caller's own when it is ValidRequestID, else one the
// service makes, which the answer names.
const RequestIDHeader = "X-Request-Id"

// ValidRequestID reports whether id can serve as a request's id: 1 to 128
// of the characters a URI holds unescaped (letters, digits, "-", ".", "_",
// "~"), and neither "." nor "..", so that it is also a relative URI
// reference (a problem's instance) and cannot forge a header or a log line.
// The service takes a caller's id by this rule, and the clients send and
// report only ids that keep it.
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}
