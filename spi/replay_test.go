package spi

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// Without a seed of its own, a replayable run's seed is the script's and
// the input's value: every spelling of one value draws one sequence, and
// another value another. An input already in canonical form keeps the seed
// it had when the seed was taken from the exact bytes, so that a run
// recorded then replays alike.
func TestDefaultSeedIsTheInputsValue(t *testing.T) {
	const script = "[Math.random(), Math.random()]"
	seed := func(input string) uint64 { return Replay{}.Determinism(script, input).Seed }
	for _, spellings := range [][]string{
		{`{"a":1}`, `{ "a": 1 }`, "{\n\t\"a\" : 1.0\n}", `{"a":10e-1}`, `{"\u0061":1}`},
		{`1`, `1.0`, `10e-1`, ` 1 `, `0.1e1`},
		{`"é"`, `"\u00e9"`, `"\u00E9"`},
		{`"\ud800"`, `"\uD800"`},
		{`[1,"x",null]`, `[ 1 , "x" , null ]`, `[1.00,"\u0078",null]`},
	} {
		for _, s := range spellings[1:] {
			if seed(s) != seed(spellings[0]) {
				t.Errorf("%s and %s draw different sequences", spellings[0], s)
			}
		}
	}
	seen := map[uint64]string{}
	for _, input := range []string{`{"a":1}`, `{"a":2}`, `{"b":1}`, `{"a":1,"b":2}`, `{"b":2,"a":1}`, `1`, `2`, `"1"`, `[1]`, `null`, `"\ud800"`, `"\ud801"`} {
		if other, dup := seen[seed(input)]; dup {
			t.Errorf("%s and %s draw the same sequence", other, input)
		}
		seen[seed(input)] = input
	}
	for _, input := range []string{`{"a":1}`, `null`, `[1,"x"]`} {
		h := sha256.New()
		sum := sha256.Sum256([]byte(script))
		h.Write([]byte("script and input\x00"))
		h.Write(sum[:])
		h.Write([]byte(input))
		if exact := binary.LittleEndian.Uint64(h.Sum(nil)); seed(input) != exact {
			t.Errorf("the canonical input %s no longer draws what its exact bytes drew", input)
		}
	}
	if seed(`{"a":1}`) == (Replay{}).Determinism("[Math.random()]", `{"a":1}`).Seed {
		t.Error("two scripts draw the same sequence on one input")
	}
	if (Replay{Seed: "s"}).Determinism(script, `{"a":1}`).Seed != (Replay{Seed: "s"}).Determinism(script, `{"a":2}`).Seed {
		t.Error("a seed of its own depends on the input")
	}
}
