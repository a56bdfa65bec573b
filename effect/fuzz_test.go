package effect

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// FuzzShapeHash: never panics; the hash has the published form; the skeleton
// is its own RFC 8785 form; and whitespace, key order and the spelling of
// numbers and strings never change the hash (the canonical and JCS forms of a
// value hash alike). Seeds: testdata/fuzz/FuzzShapeHash.
func FuzzShapeHash(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := spi.ShapeHash(in)
		if err != nil {
			if jsontext.Validate(in) == nil {
				t.Fatalf("ShapeHash refused valid JSON %q: %v", in, err)
			}
			return
		}
		if spi.CheckShapeHash(h) != nil {
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
			if h2, err := spi.ShapeHash(other); err != nil || h2 != h {
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
