package effect_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

func TestBoundText(t *testing.T) {
	lone := "\xed\xa0\x80"    // WTF-8 lone high surrogate
	loneLow := "\xed\xb0\x80" // WTF-8 lone low surrogate
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short and clean", "hello", 10, "hello"},
		{"cut ASCII", "hello", 3, "hel"},
		{"units, not bytes", "ééé", 2, "éé"},
		{"pair fits", "ab😀", 4, "ab😀"},
		{"pair never split", "ab😀c", 3, "ab"},
		{"NUL", "a\x00b", 10, "a\uFFFDb"},
		{"lone high surrogate is one U+FFFD", "a" + lone + "b", 10, "a\uFFFDb"},
		{"lone low surrogate", loneLow + "b", 10, "\uFFFDb"},
		{"surrogate halves encoded apart stay lone", lone + loneLow, 10, "\uFFFD\uFFFD"},
		{"invalid byte", "a\xffb", 10, "a\uFFFDb"},
		{"truncated sequence", "a\xe2\x82", 10, "a\uFFFD\uFFFD"},
		{"U+FFFD kept", "\uFFFD", 1, "\uFFFD"},
		{"replacement counts one unit", lone + lone + "x", 2, "\uFFFD\uFFFD"},
		{"zero max", "abc", 0, ""},
		{"negative max", "abc", -1, ""},
		{"empty", "", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := effect.BoundText(tc.in, tc.max); got != tc.want {
				t.Errorf("BoundText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
	t.Run("5 MB", func(t *testing.T) {
		got := effect.BoundText(strings.Repeat("x😀\x00", 2<<20), effect.MaxMessageUnits)
		assertStorable(t, got, effect.MaxMessageUnits)
		if n := len(utf16.Encode([]rune(got))); n != 2048 {
			t.Errorf("%d units, want 2048", n)
		}
	})
	t.Run("clean text is not copied", func(t *testing.T) {
		s := strings.Repeat("ok ", 100)
		if n := testing.AllocsPerRun(100, func() { _ = effect.BoundText(s, 2048) }); n != 0 {
			t.Errorf("%v allocations", n)
		}
	})
}

// TestShapeHashVectors pins the published vectors (docs/shape-hash.md).
func TestShapeHashVectors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":[1,2],"a":"x"}`, "sha256:60c16c8f12cea8d002ab014292d7676112a471b84c356b7c3b499283282130b4"},
		{`{"items":[{"id":1,"tags":["a"]},{"id":2,"tags":[]}],"total":2,"next":null}`, "sha256:4d71a86f82e68a50d1bf0112c4db8cd72484a7595ce7df8c54ea39f65564b4ec"},
		// The further vectors of docs/shape-hash.md, cross-checked against an
		// independent JavaScript implementation of the definition.
		{`null`, "sha256:f072cbec3bf8841871d4284230c5e983dc211a56837aed862487148f947d1a1f"},
		{`42`, "sha256:fd1a55ee2217c1ac278ab485236d6c199517334ee91e965cf2f6b8575701cd1c"},
		{`[]`, "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
		{`{}`, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{`[3,"x",true,null,{"k":1},[1]]`, "sha256:10da3eb0c55e3d01d918d676963c6680f527c7c693f7141ff21f8ef2c609f902"},
		{`{"\ufb33":1,"\ud83d\ude00":"a","\u00e9":true}`, "sha256:35a18a2f0db65f0ad6fed532bccd9d48af9ec96015493c5b67af7dc566549303"},
		{`{"\ud800":[1,"\udc00"]}`, "sha256:616b127bc3eec31b459e240d2f1d486fafc8b8aa2099f20d8ac86ff2b56b12f4"},
		{`{"a\"b\\c\u0001":0}`, "sha256:f7bf90c4910e63604e4a151f07e44420e4ebbf046bb2beec74e4076ba3eb2148"},
	} {
		got, err := effect.ShapeHash([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("ShapeHash(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestShapeHashProperties(t *testing.T) {
	same := [][]string{
		{`{"b":[1,2],"a":"x"}`, `{"a":"other","b":[3]}`, ` { "b" : [ 1.5e3 , -0 ] , "a" : "\u00e9" } `},
		{`[1,"a",null,true]`, `[true,null,"b",2,3,false]`},
		{`{"x":[{"a":1},{"a":2},{"a":3}]}`, `{"x":[{"a":9}]}`},
	}
	for _, group := range same {
		first, err := effect.ShapeHash([]byte(group[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range group[1:] {
			if h, err := effect.ShapeHash([]byte(other)); err != nil || h != first {
				t.Errorf("%s and %s differ: %s vs %s (%v)", group[0], other, first, h, err)
			}
		}
	}
	different := []string{`{"a":1}`, `{"a":"1"}`, `{"b":1}`, `[1]`, `[]`, `{}`, `1`, `"1"`, `null`, `true`, `{"a":[1]}`, `{"a":[]}`}
	seen := map[string]string{}
	for _, in := range different {
		h, err := effect.ShapeHash([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s and %s share hash %s", prev, in, h)
		}
		seen[h] = in
	}
	for _, bad := range []string{``, `{`, `{"a":1,"a":2}`, "\"\xff\""} {
		if _, err := effect.ShapeHash([]byte(bad)); err == nil {
			t.Errorf("ShapeHash(%q) accepted it", bad)
		}
	}
}

func ExampleShapeHash() {
	h, _ := effect.ShapeHash([]byte(`{"b":[1,2],"a":"x"}`))
	fmt.Println(h)
	// Output: sha256:60c16c8f12cea8d002ab014292d7676112a471b84c356b7c3b499283282130b4
}

func ExampleBoundText() {
	fmt.Printf("%+q\n", effect.BoundText("ok\x00 😀😀", 5)) // 😀 is two UTF-16 units
	// Output: "ok\ufffd "
}
