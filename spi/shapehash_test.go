package spi_test

import (
	"fmt"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

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
		got, err := spi.ShapeHash([]byte(tc.in))
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
		first, err := spi.ShapeHash([]byte(group[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range group[1:] {
			if h, err := spi.ShapeHash([]byte(other)); err != nil || h != first {
				t.Errorf("%s and %s differ: %s vs %s (%v)", group[0], other, first, h, err)
			}
		}
	}
	different := []string{`{"a":1}`, `{"a":"1"}`, `{"b":1}`, `[1]`, `[]`, `{}`, `1`, `"1"`, `null`, `true`, `{"a":[1]}`, `{"a":[]}`}
	seen := map[string]string{}
	for _, in := range different {
		h, err := spi.ShapeHash([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s and %s share hash %s", prev, in, h)
		}
		seen[h] = in
	}
	for _, bad := range []string{``, `{`, `{"a":1,"a":2}`, "\"\xff\""} {
		if _, err := spi.ShapeHash([]byte(bad)); err == nil {
			t.Errorf("ShapeHash(%q) accepted it", bad)
		}
	}
}

func ExampleShapeHash() {
	h, _ := spi.ShapeHash([]byte(`{"b":[1,2],"a":"x"}`))
	fmt.Println(h)
	// Output: sha256:60c16c8f12cea8d002ab014292d7676112a471b84c356b7c3b499283282130b4
}

func ExampleBoundText() {
	fmt.Printf("%+q\n", spi.BoundText("ok\x00 😀😀", 5)) // 😀 is two UTF-16 units
	// Output: "ok\ufffd "
}
