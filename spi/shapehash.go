package spi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

const shapeHashPrefix = "sha256:"

// ShapeHash returns the shape hash of JSON text, as docs/shape-hash.md
// defines it so that other languages can compute the same value: "sha256:"
// and the lowercase hex SHA-256 of the RFC 8785 canonical text of the value's
// skeleton.
//
// A caller pins the hash of the shape it expects (docs/spi.md, "The effect",
// step 8); the effect compares it with the hash of the script's output and
// fails with shapeMismatch when they differ. text must be JSON without
// duplicate keys.
func ShapeHash(text []byte) (string, error) {
	skel, err := jsontext.Skeleton(text)
	if err != nil {
		return "", fmt.Errorf("sandbox: shape hash: %w", err)
	}
	sum := sha256.Sum256([]byte(skel))
	return shapeHashPrefix + hex.EncodeToString(sum[:]), nil
}

// CheckShapeHash returns nil when s has the form ShapeHash returns, and
// otherwise the error that says what an expectedOutputShapeHash must be: the
// one text of that rule, for the effect and the request decoders alike.
func CheckShapeHash(s string) error {
	if validShapeHash(s) {
		return nil
	}
	return fmt.Errorf(`expectedOutputShapeHash must be "sha256:" and 64 lowercase hex digits (see docs/shape-hash.md), got %s`, jsontext.QuoteShort(s))
}

// validShapeHash reports whether s has the form ShapeHash returns
// ("sha256:" and 64 lowercase hex digits): what an expectedOutputShapeHash
// must be, wherever it is checked.
func validShapeHash(s string) bool {
	if len(s) != len(shapeHashPrefix)+2*sha256.Size || s[:len(shapeHashPrefix)] != shapeHashPrefix {
		return false
	}
	for _, c := range []byte(s[len(shapeHashPrefix):]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
