package client

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// api/testdata/bounds/response-bounds.json is the one table of the value
// and response bounds for a memory maximum; the Go formulas here and the
// TypeScript client's responseBoundFor are both checked against it.
func TestResponseBoundsTable(t *testing.T) {
	b, err := os.ReadFile("../api/testdata/bounds/response-bounds.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		MaxMemoryBytes, MaxValueBytes, MaxResponseBytes int64
	}
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("the table: %v (%d cases)", err, len(cases))
	}
	for _, c := range cases {
		if got := spi.MaxValueBytes(c.MaxMemoryBytes); got != c.MaxValueBytes {
			t.Errorf("spi.MaxValueBytes(%d) = %d, the table says %d", c.MaxMemoryBytes, got, c.MaxValueBytes)
		}
		if got := defaultMaxResponse(c.MaxMemoryBytes); got != c.MaxResponseBytes {
			t.Errorf("defaultMaxResponse(%d) = %d, the table says %d", c.MaxMemoryBytes, got, c.MaxResponseBytes)
		}
	}
}
