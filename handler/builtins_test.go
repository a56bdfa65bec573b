package handler_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// builtinProbes is testdata/builtins.json: the probes behind README's script
// contract. bench/node/builtins.mjs runs the same probes on loom's reference
// backend (quickjs-emscripten) and checks the reference column.
type builtinProbes struct {
	ReferenceOnly []struct {
		Global string `json:"global"`
		Why    string `json:"why"`
	} `json:"referenceOnly"`
	Probes []struct {
		Feature   string `json:"feature"`
		Probe     string `json:"probe"`
		Here      bool   `json:"here"`
		Reference bool   `json:"reference"`
		Why       string `json:"why"`
	} `json:"probes"`
}

func readBuiltinProbes(t *testing.T) builtinProbes {
	t.Helper()
	b, err := os.ReadFile("testdata/builtins.json")
	if err != nil {
		t.Fatal(err)
	}
	var p builtinProbes
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("testdata/builtins.json: %v", err)
	}
	if len(p.Probes) < 40 {
		t.Fatalf("testdata/builtins.json has %d probes, suspiciously few", len(p.Probes))
	}
	return p
}

// What README's script contract says a script can rely on, through POST
// /v1/sandbox/evaluate on a real server: each probe of testdata/builtins.json
// (a script whose value is a boolean: a builtin's presence, and what it
// does) is exactly its `here` value. A probe that is false here says why;
// one that is true on the reference backend and false here names a global
// of `referenceOnly`, the documented exceptions to the superset.
func TestScriptContractBuiltins(t *testing.T) {
	spec := readBuiltinProbes(t)
	only := map[string]bool{}
	for _, r := range spec.ReferenceOnly {
		if r.Why == "" {
			t.Errorf("referenceOnly %s gives no reason", r.Global)
		}
		only[r.Global] = true
	}
	v := newEnv(t)
	for i, p := range spec.Probes {
		t.Run(strconv.Itoa(i)+" "+p.Feature, func(t *testing.T) {
			if !p.Here && p.Why == "" {
				t.Errorf("%q is false here and says no why", p.Probe)
			}
			if p.Reference && !p.Here && !only[p.Feature] {
				t.Errorf("%q is true on the reference backend and false here, but %q is not in referenceOnly: the superset would be false", p.Probe, p.Feature)
			}
			want := `{"ok":true,"value":` + strconv.FormatBool(p.Here) + `}`
			r := v.post("/v1/sandbox/evaluate", map[string]any{"script": p.Probe, "inputJson": "null"})
			if got := strings.TrimSpace(string(r.body)); r.status != 200 || got != want {
				t.Fatalf("%s\ngot  %d %s\nwant 200 %s", p.Probe, r.status, got, want)
			}
		})
	}
}
