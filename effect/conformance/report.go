package conformance

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// What a case checks of an answer, and how it shows what it got: bounded,
// on one line, never a backend's text whole.

// wantFailure requires err to be a typed failure on channel.
func wantFailure(t T, what string, err error, channel spi.Channel) *spi.Failure {
	t.Helper()
	var f *spi.Failure
	if !errors.As(err, &f) {
		t.Fatalf("%s: got %v, want a %s failure", what, errText(err), channel)
	}
	if f.Channel != channel {
		t.Fatalf("%s: got %v, want a %s failure", what, err, channel)
	}
	return f
}

func errText(err error) string {
	if err == nil {
		return "success"
	}
	return err.Error()
}

func assertSameJSON(t T, what string, got, want []byte) {
	t.Helper()
	g, err := jsontext.JCS(got)
	if err != nil {
		t.Errorf("%s is not JSON: %v (%s)", what, err, clip(got))
		return
	}
	w, err := jsontext.JCS(want)
	if err != nil {
		t.Errorf("expected %s is not JSON: %v", what, err)
		return
	}
	if string(g) != string(w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		from := max(0, i-40)
		t.Errorf("%s differs from byte %d (RFC 8785 form):\n got  …%s\n want …%s", what, i, clip(g[from:]), clip(w[from:]))
	}
}

func assertStorable(t T, what, s string, maxUnits int) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s is not valid UTF-8", what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		t.Errorf("%s holds NUL", what)
	}
	if n := len(utf16.Encode([]rune(s))); n > maxUnits {
		t.Errorf("%s is %d UTF-16 units, over %d", what, n, maxUnits)
	}
}

func clip(b []byte) string {
	const max = 160
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func show(p *string) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *p)
}

// describe says what an outcome is, in the words of docs/spi.md, "Outcomes",
// its texts clipped to one short line.
func describe(o spi.Outcome) string {
	switch {
	case o.OK:
		return "ok, value " + oneLine(string(o.Value))
	case o.Kind == spi.KindLimit:
		return fmt.Sprintf("limit %q", o.Limit)
	case o.Kind == spi.KindThrew:
		return fmt.Sprintf("threw, name %s, message %q", show(o.Name), oneLine(o.Message))
	case o.Kind == spi.KindInputTooLarge:
		return "inputTooLarge"
	case o.Kind == spi.KindInfrastructure:
		return fmt.Sprintf("infrastructure, message %q", oneLine(o.Message))
	}
	return fmt.Sprintf("of unknown kind %q", oneLine(string(o.Kind)))
}

// oneLine folds s onto one line of at most 200 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
