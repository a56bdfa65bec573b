package effect

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// FuzzBoundText: the result is storable, within the bound, and a prefix of
// the unbounded scrub, so truncation only ever drops whole characters from
// the end. Seeds: testdata/fuzz/FuzzBoundText.
func FuzzBoundText(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 4096
		got := BoundText(s, max)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("not storable: %q", got)
		}
		if n := len(utf16.Encode([]rune(got))); n > max && n > 0 {
			t.Fatalf("%d units over %d", n, max)
		}
		full := BoundText(s, 2*len(s)+1)
		if !strings.HasPrefix(full, got) {
			t.Fatalf("%q is not a prefix of %q", got, full)
		}
		if max >= 0 && unitsOver(s, max) != (len(utf16.Encode([]rune(full))) > max) {
			t.Fatalf("unitsOver(%q, %d) disagrees", s, max)
		}
	})
}

// FuzzShapeHash: never panics; the hash has the published form; the skeleton
// is its own RFC 8785 form; and whitespace, key order and the spelling of
// numbers and strings never change the hash (the canonical and JCS forms of a
// value hash alike). Seeds: testdata/fuzz/FuzzShapeHash.
func FuzzShapeHash(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := ShapeHash(in)
		if err != nil {
			if jsontext.Validate(in) == nil {
				t.Fatalf("ShapeHash refused valid JSON %q: %v", in, err)
			}
			return
		}
		if !ValidShapeHash(h) {
			t.Fatalf("malformed hash %q", h)
		}
		skel, err := jsontext.Skeleton(in)
		if err != nil {
			t.Fatal(err)
		}
		if j, err := jsontext.JCS([]byte(skel)); err != nil || !bytes.Equal(j, []byte(skel)) {
			t.Fatalf("skeleton %q is not canonical: %q, %v", skel, j, err)
		}
		canon, _, err := jsontext.Canonical(in, -1)
		if err != nil {
			t.Fatalf("Canonical refused what ShapeHash accepted: %v", err)
		}
		jcs, err := jsontext.JCS(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range [][]byte{canon, jcs} {
			if s2, _ := jsontext.Skeleton(other); s2 != skel && numberOutOfRange(in) {
				// 1E700 is a number in the text and JavaScript's Infinity as
				// a value; canonical text writes that as null, as
				// JSON.stringify does. The shape is the text's.
				continue
			}
			if h2, err := ShapeHash(other); err != nil || h2 != h {
				t.Fatalf("hash of %q changed for %q: %s vs %s (%v)", in, other, h, h2, err)
			}
		}
	})
}

// numberOutOfRange reports whether the JSON text holds a number that a
// float64 cannot represent.
func numberOutOfRange(text []byte) bool {
	var v any
	err := json.Unmarshal(text, &v)
	var ute *json.UnmarshalTypeError
	return errors.As(err, &ute) && strings.HasPrefix(ute.Value, "number")
}
