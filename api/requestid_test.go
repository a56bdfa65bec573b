package api_test

import (
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/api"
)

// A request id is 1 to 128 of A-Z a-z 0-9 - . _ ~, and not "." or "..":
// every other byte, alone or in an id, is refused.
func TestValidRequestID(t *testing.T) {
	ids := map[string]bool{
		"a": true, "step-42": true, "loom.run_7~x": true, strings.Repeat("x", 128): true, "...": true,
		"": false, ".": false, "..": false, strings.Repeat("x", 129): false, "a b": false, "a/b": false,
		"a:b": false, "é": false, "a\r\nX-Evil: 1": false,
	}
	for b := 0; b < 256; b++ {
		c := byte(b)
		allowed := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0
		ids[string([]byte{c})] = allowed && c != '.'
		ids["x"+string([]byte{c})] = allowed
	}
	for id, want := range ids {
		if got := api.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}
