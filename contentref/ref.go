// Package contentref is the content reference of a script, sha256:<hex>,
// and the errors a script reader reports. It is a leaf: the effect, the
// clients and every store use it, and it imports nothing of theirs.
package contentref

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const refPrefix = "sha256:"

// Ref is a parsed content reference, sha256:<64 lowercase hex digits>. Its
// zero value is invalid; obtain one from ParseRef or RefOf.
type Ref struct {
	sum [sha256.Size]byte
	ok  bool
}

// ErrInvalidRef is wrapped by every ParseRef error.
var ErrInvalidRef = errors.New("invalid script reference")

// ParseRef parses "sha256:" followed by exactly 64 lowercase hex digits and
// rejects anything else with an error that says what is wrong.
func ParseRef(s string) (Ref, error) {
	fail := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%w %s: %s", ErrInvalidRef, QuoteBounded(s), why)
	}
	if s != "" && strings.TrimSpace(s) != s {
		return fail("has leading or trailing white space")
	}
	if !strings.HasPrefix(s, refPrefix) {
		if i := strings.IndexByte(s, ':'); i > 0 && i < 32 && isAlgorithmName(s[:i]) {
			if strings.EqualFold(s[:i], "sha256") {
				return fail(`the algorithm must be written "sha256", in lowercase`)
			}
			return fail(fmt.Sprintf("unsupported algorithm %q (only sha256 is accepted)", s[:i]))
		}
		return fail(`must start with "sha256:"`)
	}
	h := s[len(refPrefix):]
	if len(h) != 2*sha256.Size {
		return fail(fmt.Sprintf("digest must be 64 hex digits, got %d characters", len(h)))
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			return fail(fmt.Sprintf("digest must be lowercase hex, found %q at offset %d", c, i))
		default:
			return fail(fmt.Sprintf("digest has a non-hex character %q at offset %d", c, i))
		}
	}
	var r Ref
	if _, err := hex.Decode(r.sum[:], []byte(h)); err != nil {
		return fail(err.Error())
	}
	r.ok = true
	return r, nil
}

// MustParseRef is ParseRef for constants in tests and examples; it panics on
// an invalid reference.
func MustParseRef(s string) Ref {
	r, err := ParseRef(s)
	if err != nil {
		panic(err)
	}
	return r
}

// RefOf returns the reference of data.
func RefOf(data []byte) Ref { return Ref{sum: sha256.Sum256(data), ok: true} }

// IsZero reports whether r is the invalid zero Ref.
func (r Ref) IsZero() bool { return !r.ok }

// String returns the canonical form, sha256:<hex>.
func (r Ref) String() string {
	if !r.ok {
		return "sha256:<invalid>"
	}
	return refPrefix + hex.EncodeToString(r.sum[:])
}

// Hex returns the 64 lowercase hex digits of the digest.
func (r Ref) Hex() string { return hex.EncodeToString(r.sum[:]) }

// ObjectName is the object's name under a store prefix: <prefix>sha256/<hex>.
func (r Ref) ObjectName(prefix string) string { return prefix + "sha256/" + r.Hex() }

// Matches reports whether data hashes to r.
func (r Ref) Matches(data []byte) bool { return r.ok && sha256.Sum256(data) == r.sum }

// MarshalText implements encoding.TextMarshaler.
func (r Ref) MarshalText() ([]byte, error) {
	if !r.ok {
		return nil, fmt.Errorf("%w: zero Ref", ErrInvalidRef)
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseRef.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// isAlgorithmName reports whether s looks like a hash algorithm's name, so
// that an error can say "unsupported algorithm" only when that is what it is.
func isAlgorithmName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// QuoteBounded quotes s for an error message, cut so that a hostile value
// (a reference, a store URL) cannot make the message huge.
func QuoteBounded(s string) string {
	// %q writes a byte that is not UTF-8 as four characters (\xfd), so the
	// bound on the input is a quarter of the message budget.
	const max = 40
	if len(s) > max {
		return fmt.Sprintf("%q…(%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
