package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Which output bound applies where: GET /v1/capabilities' maxOutputBytes
// bounds /v1/evaluations (limitExceeded{output}); /v1/sandbox/evaluate
// returns the value whole, for the caller's effect to bound (the SPI's
// outcome has no output limit), so a 5,000,023-byte value comes back exactly.
func TestOutputBoundPerRoute(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Limits.MaxOutputBytes = 1 << 20 }))
	var caps struct {
		Limits struct {
			MaxOutputBytes int `json:"maxOutputBytes"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(v.mustDo(http.MethodGet, "/v1/capabilities", nil, nil).body), &caps); err != nil || caps.Limits.MaxOutputBytes != 1<<20 {
		t.Fatalf("capabilities: %+v %v", caps, err)
	}
	const script = `"x".repeat(5000021)` // its JSON text is 5,000,023 bytes
	want := `"` + strings.Repeat("x", 5000021) + `"`

	r := v.post("/v1/sandbox/evaluate", map[string]any{"script": script, "inputJson": "null"})
	wantBody(t, r, 200, `{"ok":true,"value":`+want+`}`)

	wantBody(t, v.post("/v1/evaluations", map[string]any{"scriptRef": v.put(script)}), 200,
		`{"ok":false,"failure":{"channel":"limitExceeded","kind":"output"}}`)
}

// The SPI route's one bound on a value is what a run within the server's
// memory maximum can make (spi.MaxValueBytes): an engine that returns
// more is a malformed outcome, never sent on.
func TestSPIValueOverWhatTheMemoryCanMake(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) {
		c.Limits.MaxMemoryBytes, c.Limits.DefaultMemoryBytes = 1<<20, 1<<20
	}))
	if overlongBytes != spi.MaxValueBytes(1<<20)+1 {
		t.Fatalf("overlongBytes %d is not one over the bound %d", overlongBytes, spi.MaxValueBytes(1<<20))
	}
	r := v.post("/v1/sandbox/evaluate", map[string]any{"script": scriptOverlong, "inputJson": "null"})
	wantProblem(t, r, 500, "malformed-outcome", false, fmt.Sprint(overlongBytes))
}
