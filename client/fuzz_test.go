package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// FuzzDecodeOutcome feeds arbitrary bodies to the outcome decoder. It must
// never panic; whatever it returns must be a well-formed outcome (docs/spi.md,
// "Outcomes"); a body it refuses must come back as infrastructure saying so;
// and an outcome it accepts must survive being written and read again. The
// seeds in testdata/fuzz/FuzzDecodeOutcome are the committed corpus.
func FuzzDecodeOutcome(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"value":{"a":[1,2,{"b":null}]}}`,
		`{"ok":false,"kind":"limit","limit":"cpu"}`,
		`{"ok":false,"kind":"threw","name":"Error","message":"boom"}`,
		`{"ok":false,"kind":"threw","message":""}`,
		`{"ok":false,"kind":"inputTooLarge"}`,
		`{"ok":false,"kind":"infrastructure","message":"m"}`,
		`{"ok":true}`,
		`{"ok":true,"ok":true,"value":1}`,
		`{"ok":false,"kind":"limit","limit":"output"}`,
		`{"ok":true,"value":1} x`,
		`{"ok":true,"value":1,"logs":"x\n","usage":{"phasesMs":{"fetch":0,"verify":0,"setup":0.1,"run":0.2,"serialise":0},"cpuMs":0.3,"cpuBudgetUsed":1,"cpuBudget":9,"peakMemoryBytes":5,"memoryLimitBytes":8}}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	const op = "POST /v1/sandbox/evaluate"
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := answerFromBody(op, body)
		o := a.Outcome
		if err != nil {
			o = spi.Infrastructure(err.Error()) // as Run reports it
		}
		if err := wellFormed(o); err != nil {
			t.Fatalf("outcome %+v is not well formed: %v", o, err)
		}
		answer, err := api.DecodeSandboxAnswer(body)
		decoded := answer.Outcome
		if err != nil {
			if o.Kind != spi.KindInfrastructure || !strings.Contains(o.Message, "malformed outcome") {
				t.Fatalf("refused body (%v) became %+v, want infrastructure saying it is malformed", err, o)
			}
			return
		}
		if o.OK && !bytes.Contains(body, o.Value) {
			t.Fatalf("value %q is not the text received", o.Value)
		}
		again, err := spi.DecodeOutcome(encode(t, decoded))
		if err != nil {
			t.Fatalf("re-reading %+v: %v", decoded, err)
		}
		if show(again) != show(decoded) {
			t.Fatalf("round trip changed %s into %s", show(decoded), show(again))
		}
	})
}

// wellFormed checks an outcome against docs/spi.md, "Outcomes", as the effect
// validates it.
func wellFormed(o spi.Outcome) error {
	switch {
	case o.OK:
		if o.Kind != "" || o.Limit != "" || o.Name != nil || o.Message != "" {
			return fmt.Errorf("ok outcome with failure fields")
		}
		if len(o.Value) == 0 || !json.Valid(o.Value) {
			return fmt.Errorf("ok value %q is not JSON", o.Value)
		}
		return nil
	case o.Value != nil:
		return fmt.Errorf("failed outcome with a value")
	}
	switch o.Kind {
	case spi.KindLimit:
		if o.Name != nil || o.Message != "" {
			return fmt.Errorf("limit with text")
		}
		switch o.Limit {
		case spi.LimitCPU, spi.LimitMemory, spi.LimitWallClock:
			return nil
		}
		return fmt.Errorf("limit %q", o.Limit)
	case spi.KindThrew:
		if o.Limit != "" {
			return fmt.Errorf("threw with a limit")
		}
		return nil
	case spi.KindInputTooLarge:
		if o.Limit != "" || o.Name != nil || o.Message != "" {
			return fmt.Errorf("inputTooLarge with fields")
		}
		return nil
	case spi.KindInfrastructure:
		if o.Limit != "" || o.Name != nil || o.Message == "" {
			return fmt.Errorf("infrastructure needs a message and nothing else")
		}
		if !utf8.ValidString(o.Message) || strings.IndexByte(o.Message, 0) >= 0 {
			return fmt.Errorf("infrastructure message is not storable")
		}
		if n := len(utf16.Encode([]rune(o.Message))); n > spi.MaxMessageUnits {
			return fmt.Errorf("infrastructure message is %d units", n)
		}
		return nil
	}
	return fmt.Errorf("kind %q", o.Kind)
}

// encode writes an outcome as the service does.
func encode(t *testing.T, o spi.Outcome) []byte {
	b, err := outcomeJSON(o)
	if err != nil {
		t.Fatalf("encoding %+v: %v", o, err)
	}
	return b
}

// outcomeJSON writes an outcome as the object of docs/spi.md, "Outcomes",
// without HTML escaping: json.Marshal would rewrite "&" in a value as
// "\u0026", the same value in other text.
func outcomeJSON(o spi.Outcome) ([]byte, error) {
	m := map[string]any{"ok": o.OK}
	switch {
	case o.OK:
		m["value"] = o.Value
	default:
		m["kind"] = o.Kind
		switch o.Kind {
		case spi.KindLimit:
			m["limit"] = o.Limit
		case spi.KindThrew, spi.KindInfrastructure:
			m["message"] = o.Message
			if o.Name != nil {
				m["name"] = *o.Name
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// show prints an outcome with its name and its value in compact form.
func show(o spi.Outcome) string {
	name := "<nil>"
	if o.Name != nil {
		name = fmt.Sprintf("%q", *o.Name)
	}
	var v bytes.Buffer
	if len(o.Value) == 0 || json.Compact(&v, o.Value) != nil {
		v.Write(o.Value)
	}
	return fmt.Sprintf("{ok %v kind %q limit %q name %s message %q value %q}", o.OK, o.Kind, o.Limit, name, o.Message, v.String())
}
