package api_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// marshalled checks that encoding/json writes v as the service writes it,
// want: exactly with an Encoder that does not escape HTML, and with
// json.Marshal's escapes otherwise (the same strings); and that
// json.Unmarshal of want gives back v.
func marshalled[T any](t *testing.T, name string, v T, want []byte) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil || !bytes.Equal(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), want) {
		t.Errorf("%s: encoded as %s (%v), want %s", name, buf.Bytes(), err, want)
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, want)
	if got, err := json.Marshal(v); err != nil || !bytes.Equal(got, escaped.Bytes()) {
		t.Errorf("%s: json.Marshal wrote %s (%v), want %s", name, got, err, escaped.Bytes())
	}
	var back T
	if err := json.Unmarshal(want, &back); err != nil || !reflect.DeepEqual(back, v) {
		t.Errorf("%s: json.Unmarshal read %+v (%v), want %+v", name, back, err, v)
	}
}

// A Go value of the wire vocabulary marshals to the document the service
// writes, byte for byte, and unmarshals back: an outcome of every kind, the
// usage, and both answers, whose MarshalJSON and UnmarshalJSON are the
// encoders and decoders the service and the clients use.
func TestMarshalIsTheWireForm(t *testing.T) {
	outcomes, invalidOutcomes := golden(t, "outcome")
	kinds := map[spi.OutcomeKind]bool{}
	for name, doc := range outcomes {
		o, err := spi.DecodeOutcome(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kinds[o.Kind] = true
		marshalled(t, "outcome "+name, o, doc)
		marshalled(t, "outcome pointer "+name, &o, doc)
	}
	for _, k := range []spi.OutcomeKind{"", spi.KindLimit, spi.KindThrew, spi.KindInputTooLarge, spi.KindInfrastructure} {
		if !kinds[k] {
			t.Errorf("no golden outcome of kind %q", k)
		}
	}
	for name, doc := range invalidOutcomes {
		var o spi.Outcome
		if err := json.Unmarshal(doc, &o); err == nil {
			t.Errorf("outcome %s: json.Unmarshal accepted it as %+v", name, o)
		}
	}
	if b, err := json.Marshal(spi.OK([]byte(`{"a":`))); err == nil {
		t.Errorf("an ok outcome whose value is not JSON marshalled as %s", b)
	}

	answers, _ := golden(t, "answer")
	read := reading(t, "answer")
	usages := 0
	for name, doc := range answers {
		if later, ok := read[name]; ok {
			doc = later
		}
		a, err := api.DecodeSandboxAnswer(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		marshalled(t, "answer "+name, a, doc)
		if a.Usage != nil {
			var members map[string]json.RawMessage
			if err := json.Unmarshal(doc, &members); err != nil {
				t.Fatal(err)
			}
			marshalled(t, "usage of "+name, *a.Usage, []byte(members["usage"]))
			usages++
		}
	}
	if usages == 0 {
		t.Error("no golden answer with a usage")
	}

	evaluations, _ := golden(t, "evaluation")
	read = reading(t, "evaluation")
	for name, doc := range evaluations {
		if later, ok := read[name]; ok {
			doc = later
		}
		r, err := api.DecodeEvaluation(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		marshalled(t, "evaluation "+name, r, doc)
	}
}
