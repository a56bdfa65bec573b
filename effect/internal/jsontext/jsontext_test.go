package jsontext

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFormatNumber checks ECMAScript number formatting against the vectors of
// RFC 8785 Appendix B (IEEE 754 bit patterns and their serialisation).
func TestFormatNumber(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
		{0x7ff0000000000000, "null"}, // Infinity, as JSON.stringify writes it
	} {
		if got := FormatNumber(math.Float64frombits(tc.bits)); got != tc.want {
			t.Errorf("FormatNumber(%#016x) = %s, want %s", tc.bits, got, tc.want)
		}
	}
	for f, want := range map[float64]string{1: "1", 0.1: "0.1", 1e-7: "1e-7", 123e18: "123000000000000000000", 1.5e300: "1.5e+300", -42: "-42"} {
		if got := FormatNumber(f); got != want {
			t.Errorf("FormatNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{` { "b" : [ 1 , 2.50 , -0, 1E3 ] , "a" : "x" } `, `{"b":[1,2.5,0,1000],"a":"x"}`},
		{`"\u0041\/\u00e9\ud83d\ude00"`, `"A/é😀"`},
		{`"\uD800"`, `"\ud800"`},
		{`"a\udc00\ud800b"`, `"a\udc00\ud800b"`},
		{`"\ud83d"`, `"\ud83d"`},
		{`"\u0000\u001f\u007f\b\f\n\r\t\"\\"`, "\"\\u0000\\u001f\u007f\\b\\f\\n\\r\\t\\\"\\\\\""},
		{`"\u2028"`, "\"\u2028\""},
		{`1e400`, `null`},
		{`-1e400`, `null`},
		{`1e-400`, `0`},
		{`9007199254740993`, `9007199254740992`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`[{},[[]],{"":null}]`, `[{},[[]],{"":null}]`},
		{`true`, `true`},
	} {
		got, over, err := Canonical([]byte(tc.in), -1)
		if err != nil || over || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v, %v; want %s", tc.in, got, over, err, tc.want)
		}
	}
}

func TestCanonicalRejects(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `1e`, `+1`, `-`, `NaN`,
		`Infinity`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\x01b\"", "\"\xff\"",
		"\"\xed\xa0\x80\"", `{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `1 2`, `[1] x`, `'a'`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if out, _, err := Canonical([]byte(in), -1); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", in, out)
		}
		if err := Validate([]byte(in)); err == nil {
			t.Errorf("Validate(%q) accepted it", in)
		}
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if err := Validate([]byte(deep)); err != nil {
		t.Errorf("nesting of exactly MaxDepth refused: %v", err)
	}
}

func TestCanonicalBound(t *testing.T) {
	in := []byte(`{"a":"` + strings.Repeat("x", 100) + `"}`)
	canon, _, _ := Canonical(in, -1)
	if out, over, err := Canonical(in, len(canon)); err != nil || over || string(out) != string(canon) {
		t.Errorf("at exactly the bound: %s, %v, %v", out, over, err)
	}
	if out, over, err := Canonical(in, len(canon)-1); err != nil || !over || out != nil {
		t.Errorf("one byte over: %s, %v, %v", out, over, err)
	}
	// Validation still covers text after the bound was passed.
	bad := []byte(`["` + strings.Repeat("x", 100) + `", 1,]`)
	if _, _, err := Canonical(bad, 10); err == nil {
		t.Error("malformed text after the bound was accepted")
	}
}

func TestJCS(t *testing.T) {
	// RFC 8785 §3.2.3's sorting example, plus a key past the BMP sorted
	// against U+FB33 (UTF-16 order differs from code point order there).
	in := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	got, err := JCS([]byte(in))
	if err != nil || string(got) != want {
		t.Errorf("JCS = %s, %v\nwant %s", got, err, want)
	}
	// RFC 8785 §3.2.2 example.
	in = `{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`
	want = `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err = JCS([]byte(in))
	if err != nil || string(got) != want {
		t.Errorf("JCS = %s, %v\nwant %s", got, err, want)
	}
}

func TestCompareUTF16(t *testing.T) {
	lone := string(AppendWTF8(nil, 0xD83D))
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a", "b", -1}, {"b", "a", 1}, {"a", "a", 0}, {"a", "ab", -1}, {"", "", 0},
		{"\U0001F600", "\uFB33", -1}, // D83D < FB33 although U+1F600 > U+FB33
		{"\uFFFF", "\U00010000", 1},
		{lone, "\U0001F600", -1}, // D83D then end, against D83D DE00
		{lone + "z", "\U0001F600", -1},
		{"\U0001F600", "\U0001F601", -1},
	} {
		got := CompareUTF16(tc.a, tc.b)
		if (got < 0) != (tc.want < 0) || (got > 0) != (tc.want > 0) {
			t.Errorf("CompareUTF16(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSkeleton(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":[1,2],"a":"x"}`, `{"a":"string","b":["number"]}`},
		{`{"items":[{"id":1,"tags":["a"]},{"id":2,"tags":[]}],"total":2,"next":null}`,
			`{"items":[{"id":"number","tags":["string"]},{"id":"number","tags":[]}],"next":"null","total":"number"}`},
		{`[true, null, "s", 1, false, {}, []]`, `["boolean","null","number","string",[],{}]`},
		{`"\ud800"`, `"string"`},
		{`{"\ud800":1,"\ud83d\ude00":2,"\ufb33":3}`, "{\"\\ud800\":\"number\",\"\U0001F600\":\"number\",\"\uFB33\":\"number\"}"},
		{`[]`, `[]`},
	} {
		got, err := Skeleton([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("Skeleton(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{`{"a":1,"a":1}`, `[1,]`, "\"\xff\"", ``} {
		if _, err := Skeleton([]byte(in)); err == nil {
			t.Errorf("Skeleton(%q) accepted it", in)
		}
	}
}

// FuzzCanonical checks the parser against encoding/json and the canonical
// form against itself: it accepts exactly the UTF-8 JSON that encoding/json
// accepts (less duplicate keys and depth), it is idempotent, and it carries the
// same value.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,"\ud800"]}`, `"\u00e9\/"`, `1e400`, `[[[]]]`, `{"a":1,"a":2}`, `0.1e-7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, over, err := Canonical(in, -1)
		if over {
			t.Fatal("over with no bound")
		}
		stdOK := json.Valid(in) && utf8.Valid(in)
		if err == nil && !stdOK {
			t.Fatalf("accepted %q, which encoding/json refuses", in)
		}
		if err != nil {
			if stdOK && !strings.Contains(err.Error(), "duplicate") && !strings.Contains(err.Error(), "nesting") {
				t.Fatalf("refused %q, which encoding/json accepts: %v", in, err)
			}
			return
		}
		again, _, err := Canonical(out, -1)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("canonical text %q is not valid JSON", out)
		}
		// encoding/json reads lone surrogates as U+FFFD on both sides and
		// refuses numbers past float64, so it can witness everything else.
		var a, b any
		if json.Unmarshal(in, &a) == nil {
			if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("value changed: %q -> %q (%v)", in, out, err)
			}
		}
		if _, err := JCS(in); err != nil {
			t.Fatalf("JCS refused what Canonical accepted: %v", err)
		}
	})
}
