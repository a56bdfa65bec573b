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
