package spi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Replay asks for a replayable run (docs/spi.md, "Replayable runs"): one
// whose outcome is a pure function of its script, input, limits and these
// two values, so that a flow replayed from a durable log gets the same
// answer. The zero value asks for the defaults: a seed derived from the
// script and the input's value, and the instant DefaultReplayNow.
type Replay struct {
	// Seed seeds Math.random; "" derives it from the script and the input's
	// value (its canonical text), so that the same script on the same input
	// draws the same numbers, however the input is spelt.
	Seed string
	// Now is the instant every clock the guest can read reads, frozen for
	// the run; zero is DefaultReplayNow.
	Now time.Time
}

// DefaultReplayNow is the instant a replayable run's clocks read when the
// request names none (RFC 3339).
const DefaultReplayNow = "2000-01-01T00:00:00Z"

// MaxReplaySeedBytes bounds a replay's seed: a name, not data.
const MaxReplaySeedBytes = 128

// The instants a replayable run's clocks can read: the guest's clock counts
// nanoseconds since 1970 in 64 bits, and the host's time in a signed 64.
var (
	minReplayNow = time.Unix(0, 0).UTC()
	maxReplayNow = time.Unix(0, 1<<63-1).UTC().Truncate(time.Second)
)

// ReplayError says which member of a Replay is wrong, and why.
type ReplayError struct {
	Field  string // "seed" or "now"
	Reason string
}

func (e *ReplayError) Error() string { return e.Field + " " + e.Reason }

// Check says what is wrong with r, as a *ReplayError, or nil: a seed of at
// most MaxReplaySeedBytes of text with no control character, and an
// instant from 1970 to the last second a 64-bit nanosecond clock holds.
func (r Replay) Check() error {
	bad := func(field, format string, args ...any) error {
		return &ReplayError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if len(r.Seed) > MaxReplaySeedBytes {
		return bad("seed", "is %d bytes, over the %d a seed may have", len(r.Seed), MaxReplaySeedBytes)
	}
	if !utf8.ValidString(r.Seed) {
		return bad("seed", "is not valid UTF-8")
	}
	for _, c := range r.Seed {
		if c < 0x20 || c == 0x7f {
			return bad("seed", "has the control character %U", c)
		}
	}
	if !r.Now.IsZero() && (r.Now.Before(minReplayNow) || r.Now.After(maxReplayNow)) {
		return bad("now", "%s is outside %s to %s, the instants a run's clock can read",
			r.Now.UTC().Format(time.RFC3339Nano), minReplayNow.Format(time.RFC3339), maxReplayNow.Format(time.RFC3339))
	}
	return nil
}

// Determinism is a replayable run as an engine runs it: the seed of
// Math.random and the frozen instant, resolved from a Replay for one script
// and one input.
type Determinism struct {
	Seed uint64
	Now  time.Time
}

// Determinism resolves r for a run of script on input: the seed named, or
// one derived from the script's bytes and the input's canonical text; the
// instant named, or DefaultReplayNow. A seed is hashed, so that any name
// spreads over the generator's whole state.
//
// The input's canonical text is what JSON.stringify(JSON.parse(input))
// writes (jsontext.CanonicalWTF8): {"a":1}, { "a": 1 } and {"a":1.0} are
// one value to the script, and draw one sequence, whoever wrote them and
// whichever route or client carried them. Members keep their order, which
// the script can see. An input already in that form draws what it drew
// when the seed was taken from the exact bytes.
func (r Replay) Determinism(script, input string) Determinism {
	h := sha256.New()
	if r.Seed != "" {
		h.Write([]byte("seed\x00"))
		h.Write([]byte(r.Seed))
	} else {
		sum := sha256.Sum256([]byte(script))
		h.Write([]byte("script and input\x00"))
		h.Write(sum[:])
		h.Write(canonicalInput(input))
	}
	d := Determinism{Seed: binary.LittleEndian.Uint64(h.Sum(nil)), Now: r.Now}
	if d.Now.IsZero() {
		d.Now, _ = time.Parse(time.RFC3339, DefaultReplayNow)
	}
	return d
}

// canonicalInput is input's canonical text, or input as it is when it is
// not JSON text, which no run is given (the effect and both routes refuse
// it before a run).
func canonicalInput(input string) []byte {
	out, _, err := jsontext.CanonicalWTF8([]byte(input), -1)
	if err != nil {
		return []byte(input)
	}
	return out
}

// rfc3339 is RFC 3339's date-time, which time.Parse takes more loosely (a
// one-digit hour, a comma before the fraction, an offset of 24 hours): the
// instant must be one that every client and the OpenAPI document's
// date-time agree on. time.Parse checks the ranges of the fields.
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)

// ParseReplayNow reads a replay's instant as the wire writes it: an RFC
// 3339 date-time, strictly. Its error says what the instant must be, for a
// caller to put after the name it reads it by (the request's
// determinism.now, the eval verb's -now).
func ParseReplayNow(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !rfc3339.MatchString(s) {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 instant such as %q, got %s", DefaultReplayNow, jsontext.QuoteShort(s))
	}
	return t, nil
}
