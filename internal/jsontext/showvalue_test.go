package jsontext

import (
	"strings"
	"testing"
)

// ShowValue says what was sent in words a reader can act on, each value
// quoted once, and short whatever was sent.
func TestShowValue(t *testing.T) {
	for raw, want := range map[string]string{
		`"200"`:                              `the string "200"`,
		`"a\"b"`:                             `the string "a\"b"`,
		`"\ud800"`:                           `the string "\ud800"`,
		`1.5`:                                `the number 1.5`,
		`-0`:                                 `the number -0`,
		`true`:                               `true`,
		`null`:                               `null`,
		`{"ms":1}`:                           `an object`,
		`[1,2]`:                              `an array`,
		`"` + strings.Repeat("x", 500) + `"`: `the string "` + strings.Repeat("x", 64) + `"…`,
		strings.Repeat("9", 500):             `a number of 500 characters`,
	} {
		if got := ShowValue([]byte(raw)); got != want {
			t.Errorf("ShowValue(%.20s…) = %s, want %s", raw, got, want)
		}
	}
}
