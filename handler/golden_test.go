package handler

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/api"
)

// The SPI route writes every outcome of api/testdata byte for byte as the
// golden file holds it, which the Go and TypeScript clients decode.
func TestGoldenOutcomesEncode(t *testing.T) {
	names, err := filepath.Glob("../api/testdata/outcome/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden outcomes: %v", err)
	}
	for _, n := range names {
		doc, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		doc = bytes.TrimSuffix(doc, []byte("\n"))
		o, err := api.DecodeOutcome(doc)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		got, _, _, p := encodeOutcome(o)
		if p != nil || !bytes.Equal(got, doc) {
			t.Errorf("%s: the handler writes %s (%v), want %s", filepath.Base(n), got, p, doc)
		}
	}
}
