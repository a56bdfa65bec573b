package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// golden returns the files of testdata/dir (valid documents) and of
// testdata/dir/invalid (documents every decoder refuses), each without its
// final newline.
func golden(t *testing.T, dir string) (valid, invalid map[string][]byte) {
	t.Helper()
	return goldenIn(t, dir), goldenIn(t, filepath.Join(dir, "invalid"))
}

// reading returns the files of testdata/dir/read: for a valid document of
// a later version, what this reader keeps of it, written again. A valid
// document without one is written again as it is.
func reading(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return goldenIn(t, filepath.Join(dir, "read"))
}

// goldenIn returns the files of testdata/d, each without its final
// newline.
func goldenIn(t *testing.T, d string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", d, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden files in testdata/%s: %v", d, err)
	}
	m := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(n)] = bytes.TrimSuffix(b, []byte("\n"))
	}
	return m
}

// Every answer of POST /v1/sandbox/evaluate (the outcome with its usage and
// logs) decodes and is written again byte for byte; an answer of a later
// version (a report member or a usage figure this reader does not know)
// decodes into what this reader knows of it, testdata/answer/read; every
// malformed one is refused.
func TestGoldenSandboxAnswers(t *testing.T) {
	valid, invalid := golden(t, "answer")
	read := reading(t, "answer")
	for name, doc := range valid {
		a, err := api.DecodeSandboxAnswer(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, later := read[name]
		if !later {
			want = doc
		}
		out, err := api.AppendSandboxAnswer(nil, a)
		if err != nil || !bytes.Equal(out, want) {
			t.Errorf("%s: written again as %s (%v), want %s", name, out, err, want)
		}
	}
	for name := range read {
		if _, ok := valid[name]; !ok {
			t.Errorf("read/%s reads no answer", name)
		}
	}
	for name, doc := range invalid {
		if a, err := api.DecodeSandboxAnswer(doc); err == nil {
			t.Errorf("%s: accepted as %+v", name, a)
		}
	}
	// the bare outcomes are answers too, and the strict outcome decoder
	// refuses an answer's extra members
	outcomes, _ := golden(t, "outcome")
	for name, doc := range outcomes {
		if _, err := api.DecodeSandboxAnswer(doc); err != nil {
			t.Errorf("outcome %s is no answer: %v", name, err)
		}
	}
	if _, err := spi.DecodeOutcome(valid["ok-logs-usage.json"]); err == nil {
		t.Error("DecodeOutcome accepted an answer's logs and usage")
	}
}

// Every answer of POST /v1/evaluations decodes and is written again byte
// for byte, an answer of a later version as what this reader knows of it
// (testdata/evaluation/read); every malformed one is refused.
func TestGoldenEvaluations(t *testing.T) {
	valid, invalid := golden(t, "evaluation")
	read := reading(t, "evaluation")
	for name, doc := range valid {
		r, err := api.DecodeEvaluation(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, later := read[name]
		if !later {
			want = doc
		}
		out, err := api.AppendEvaluation(nil, r)
		if err != nil || !bytes.Equal(out, want) {
			t.Errorf("%s: written again as %s (%v), want %s", name, out, err, want)
		}
	}
	for name := range read {
		if _, ok := valid[name]; !ok {
			t.Errorf("read/%s reads no answer", name)
		}
	}
	for name, doc := range invalid {
		if r, err := api.DecodeEvaluation(doc); err == nil {
			t.Errorf("%s: accepted as %+v", name, r)
		}
	}
}

// Every outcome decodes into the vocabulary and is written again byte for
// byte; every malformed one is refused.
func TestGoldenOutcomes(t *testing.T) {
	valid, invalid := golden(t, "outcome")
	for name, doc := range valid {
		o, err := spi.DecodeOutcome(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if o.OK && !bytes.Contains(doc, o.Value) {
			t.Errorf("%s: value %s is not the text received", name, o.Value)
		}
		out, err := spi.AppendOutcome(nil, o)
		if err != nil || !bytes.Equal(out, doc) {
			t.Errorf("%s: written again as %s (%v), want %s", name, out, err, doc)
		}
	}
	if out, err := spi.AppendOutcome(nil, spi.OK([]byte(`{"a":`))); err == nil {
		t.Errorf("an ok outcome with a value that is not JSON was written as %s", out)
	}
	for name, doc := range invalid {
		if o, err := spi.DecodeOutcome(doc); err == nil {
			t.Errorf("%s: accepted as %+v", name, o)
		}
	}
	// Strings keep their lone surrogates, as WTF-8.
	o, err := spi.DecodeOutcome(valid["threw-lone-surrogate.json"])
	if err != nil || o.Message != "half of \xed\xa0\xbd" {
		t.Errorf("lone surrogate: %q, %v", o.Message, err)
	}
}

// The capabilities document decodes and is written again byte for byte;
// what breaks the declaration is refused.
func TestGoldenCapabilities(t *testing.T) {
	valid, invalid := golden(t, "capabilities")
	doc := valid["service.json"]
	info, err := api.DecodeInfo(doc)
	if err != nil {
		t.Fatal(err)
	}
	if info.Capabilities.Network != spi.NetworkNone || !info.Idempotent || info.Limits.MaxRequestBytes != 16<<20 || info.Limits.MaxConcurrent != 1 || info.Limits.MaxBatchItems != 1000 {
		t.Errorf("decoded %+v", info)
	}
	if out := api.AppendInfo(nil, info); !bytes.Equal(out, doc) {
		t.Errorf("written again as %s, want %s", out, doc)
	}
	for name, doc := range invalid {
		if _, err := api.DecodeInfo(doc); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Members this reader does not know are kept in the document and in limits.
	more := strings.Replace(string(doc), `"limits":{`, `"later":1,"limits":{"maxSomething":2,`, 1)
	if info, err := api.DecodeInfo([]byte(more)); err != nil || !strings.Contains(string(info.Limits.Raw), "maxSomething") {
		t.Errorf("unknown members: %v, raw limits %s", err, info.Limits.Raw)
	}
}

// A failure is written as spi.Failure writes itself, and a Failure of no
// known channel is not written at all.
func TestAppendEvaluationRefuses(t *testing.T) {
	for _, r := range []api.EvaluationResponse{
		{},
		{OK: true},
		{OK: true, Value: []byte("1"), Failure: &spi.Failure{Channel: spi.ChannelInputTooLarge}},
		{Failure: &spi.Failure{Channel: "made-up"}},
	} {
		if out, err := api.AppendEvaluation(nil, r); err == nil {
			t.Errorf("%+v written as %s", r, out)
		}
	}
}

// Every problem document decodes and is written again byte for byte; what
// is not one is refused.
func TestGoldenProblems(t *testing.T) {
	valid, invalid := golden(t, "problem")
	for name, doc := range valid {
		p, err := api.DecodeProblem(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if out := api.AppendProblem(nil, p); !bytes.Equal(out, doc) {
			t.Errorf("%s: written again as %s, want %s", name, out, doc)
		}
	}
	for name, doc := range invalid {
		if p, err := api.DecodeProblem(doc); err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
		}
	}
}

// The encoders write the golden request bodies byte for byte; the handler's
// test decodes the same files, and the TypeScript client's sends one.
func TestGoldenRequests(t *testing.T) {
	const ref = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	evaluations, _ := golden(t, "request/evaluation")
	for name, r := range map[string]api.Request{
		"full.json": {ScriptRef: ref, Input: []byte(`{ "a": [1, "\ud800"] }`), Limits: spi.Limits{WallClock: 250 * time.Millisecond, MemoryBytes: 1 << 20},
			ExpectedOutputShapeHash: ref, CaptureLogs: true},
		"minimal.json": {ScriptRef: ref},
		// the mode with the service's defaults: the object alone
		"determinism.json": {ScriptRef: ref, Input: []byte(`{"a":1}`), Replay: &spi.Replay{}},
	} {
		out, err := api.AppendEvaluationRequest(nil, r)
		if err != nil || !bytes.Equal(out, evaluations[name]) {
			t.Errorf("%s: wrote %s (%v), want %s", name, out, err, evaluations[name])
		}
	}
	if _, err := api.AppendEvaluationRequest(nil, api.Request{ScriptRef: ref, Input: []byte("{")}); err == nil {
		t.Error("an input that is not JSON text was written")
	}
	sandbox, _ := golden(t, "request/sandbox")
	script := "'\xed\xa0\x80'.charCodeAt(0) + input.n" // the lone surrogate as WTF-8
	replayScript := "[Math.random(), Date.now()]"
	for name, r := range map[string]api.Request{
		"script.json": {Script: &script, Input: []byte(`{"n":1}`), Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 16 << 20}},
		"ref.json":    {ScriptRef: ref, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 32 << 20}},
		// the instant given in another offset: the wire form is UTC with the
		// shortest fraction, which a TypeScript Date writes too
		"determinism.json": {Script: &replayScript, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20},
			Replay: &spi.Replay{Seed: "flow-42/step-3", Now: time.Date(2026, 12, 2, 8, 16, 17, 5e8, time.FixedZone("", 3600))}},
	} {
		if out := api.AppendSandboxRequest(nil, r); !bytes.Equal(out, sandbox[name]) {
			t.Errorf("%s: wrote %s, want %s", name, out, sandbox[name])
		}
	}
}

// Every line of a batch's answer (docs/batch.md) decodes and is written
// again byte for byte; a line of a later version decodes into what this
// reader knows of it, testdata/batch/read; every malformed one is refused.
func TestGoldenBatchLines(t *testing.T) {
	valid, invalid := golden(t, "batch")
	read := reading(t, "batch")
	for name, doc := range valid {
		l, err := api.DecodeBatchLine(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := doc
		if r, ok := read[name]; ok {
			want = r
		}
		out, err := api.AppendBatchLine(nil, l)
		if err != nil || !bytes.Equal(bytes.TrimSuffix(out, []byte("\n")), want) || !bytes.HasSuffix(out, []byte("\n")) {
			t.Errorf("%s: written again as %q (%v), want %s", name, out, err, want)
		}
	}
	for name, doc := range invalid {
		if l, err := api.DecodeBatchLine(doc); err == nil {
			t.Errorf("%s: accepted as %+v", name, l)
		}
	}
}

// AppendOptions writes the members a batch's inputs share as the request
// writes them, after its input, as one object; none is {}.
func TestAppendOptions(t *testing.T) {
	const ref = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	for _, r := range []api.Request{
		{ScriptRef: ref, Limits: spi.Limits{WallClock: 250 * time.Millisecond, MemoryBytes: 1 << 20}, ExpectedOutputShapeHash: ref, CaptureLogs: true},
		{ScriptRef: ref, Limits: spi.Limits{WallClock: time.Second}, Replay: &spi.Replay{Seed: "s", Now: time.Date(2026, 12, 2, 8, 16, 17, 0, time.UTC)}},
		{ScriptRef: ref, Replay: &spi.Replay{}},
	} {
		req, err := api.AppendEvaluationRequest(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		opts := api.AppendOptions(nil, r)
		if !json.Valid(opts) || !bytes.HasSuffix(req, append([]byte(`"input":null,`), opts[1:]...)) {
			t.Errorf("the options %s are not the request's members after its input: %s", opts, req)
		}
	}
	if got := api.AppendOptions(nil, api.Request{ScriptRef: "sha256:x"}); string(got) != "{}" {
		t.Errorf("no options: %s, want {}", got)
	}
}
