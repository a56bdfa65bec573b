package spi_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Bounds.Settled answers each row of api/testdata/bounds/settled.json, the
// table of docs/spi.md, "Answers no retry can change", that the effect's
// and both clients' tests read too.
func TestBoundsSettled(t *testing.T) {
	b, err := os.ReadFile("../api/testdata/bounds/settled.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name                                 string
		Bounds                               spi.Bounds
		ScriptBytes, MemoryBytes, InputBytes int64
		Outcome                              *struct {
			Kind, Limit, Message string
			Name                 *string
		}
	}
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("the table: %v (%d cases)", err, len(cases))
	}
	for _, c := range cases {
		var want spi.Outcome
		if o := c.Outcome; o != nil {
			want = spi.Outcome{Kind: spi.OutcomeKind(o.Kind), Limit: spi.LimitKind(o.Limit), Name: o.Name, Message: o.Message}
		}
		got, ok := c.Bounds.Settled(c.ScriptBytes, c.MemoryBytes, c.InputBytes)
		if ok != (c.Outcome != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Settled = %+v, %v; want %+v, %v", c.Name, got, ok, want, c.Outcome != nil)
		}
	}
}
