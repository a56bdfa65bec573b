package jsontext

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
)

// The texts an engine's JSON.stringify writes for ordinary values, which
// Stringified reads on every result: a document of objects and strings, an
// array of doubles (the slowest case: each double of 16 or 17 digits is
// parsed and formatted again), and non-ASCII text.
func stringifiedTexts() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	var floats strings.Builder
	floats.WriteByte('[')
	for i := range 10000 {
		if i > 0 {
			floats.WriteByte(',')
		}
		floats.WriteString(FormatNumber(r.Float64() * 1000))
	}
	floats.WriteByte(']')
	canon := func(s string) []byte {
		out, _, err := Canonical([]byte(s), -1)
		if err != nil {
			panic(err)
		}
		return out
	}
	return map[string][]byte{
		"doc256KiB":     canon(mcpdoc.Document(256 << 10)),
		"floats10k":     []byte(floats.String()),
		"unicode256KiB": canon(`"` + strings.Repeat("héllo wörld ✓ 𝄞 日本 ", 256<<10/32) + `"`),
	}
}

func BenchmarkStringified(b *testing.B) {
	for name, text := range stringifiedTexts() {
		if _, c := Stringified(text, MaxDepth); !c {
			b.Fatalf("%s is not canonical", name)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Stringified(text, MaxDepth)
			}
		})
	}
}

// BenchmarkCanonicalWTF8 is what a result that is not canonical costs on
// top: one more read and write of the text.
func BenchmarkCanonicalWTF8(b *testing.B) {
	for name, text := range stringifiedTexts() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := CanonicalWTF8(text, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
