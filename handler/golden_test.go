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

// The handler reads the golden request bodies the Go and TypeScript clients
// write, and refuses the malformed ones with a problem of a documented type.
func TestGoldenRequestsDecode(t *testing.T) {
	read := func(pattern string) map[string][]byte {
		names, err := filepath.Glob(pattern)
		if err != nil || len(names) == 0 {
			t.Fatalf("no golden files %s: %v", pattern, err)
		}
		m := map[string][]byte{}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			m[filepath.Base(n)] = b
		}
		return m
	}
	for name, body := range read("../api/testdata/request/evaluation/*.json") {
		if _, p := decodeEvaluation(body, fuzzLimits); p != nil {
			t.Errorf("evaluation/%s: %s", name, p.detail)
		}
	}
	for name, body := range read("../api/testdata/request/sandbox/*.json") {
		req, p := decodeSandboxEvaluate(body, fuzzLimits)
		if p != nil {
			t.Errorf("sandbox/%s: %s", name, p.detail)
		}
		if name == "script.json" && req.Script != "'\xed\xa0\x80'.charCodeAt(0) + input.n" {
			t.Errorf("sandbox/script.json: the script reads as %q, not as sent", req.Script)
		}
	}
	for name, body := range read("../api/testdata/request/evaluation/invalid/*.json") {
		if _, p := decodeEvaluation(body, fuzzLimits); p == nil || p.status != 400 || problemTitles[p.slug] == "" {
			t.Errorf("evaluation/invalid/%s: %+v", name, p)
		}
	}
	for name, body := range read("../api/testdata/request/sandbox/invalid/*.json") {
		if _, p := decodeSandboxEvaluate(body, fuzzLimits); p == nil || p.status != 400 || problemTitles[p.slug] == "" {
			t.Errorf("sandbox/invalid/%s: %+v", name, p)
		}
	}
}
