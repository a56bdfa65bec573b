package jsontext

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
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
			var je *Error
			if !errors.As(err, &je) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if stdOK && je.Kind != KindDuplicateKey && je.Kind != KindDepth {
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

// Keys are compared as UTF-16 code units, as JSON.parse compares them: two
// different lone surrogates are two keys, a pair and its escape are one.
func TestDuplicateKeysAreCodeUnits(t *testing.T) {
	for _, tc := range []struct {
		in  string
		dup bool
	}{
		{`{"\ud800":1,"\ud801":2}`, false},
		{`{"\ud800":1,"\udc00":2}`, false},
		{`{"\ud800":1,"\uFFFD":2}`, false},
		{`{"\ud800":1,"\uD800":2}`, true},
		{"{\"\\ud83d\\ude00\":1,\"\U0001F600\":2}", true},
		{`{"a":1,"\u0061":2}`, true},
		{`{"x":{"a":1},"y":{"a":1}}`, false},
	} {
		err := Validate([]byte(tc.in))
		var je *Error
		gotDup := errors.As(err, &je) && je.Kind == KindDuplicateKey
		if gotDup != tc.dup || (err != nil && !gotDup) {
			t.Errorf("Validate(%s) = %v, want duplicate %v", tc.in, err, tc.dup)
		}
	}
}

// An error says what is wrong, at which byte, and in which value.
func TestErrorPositionAndPath(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    Kind
		offset  int
		pointer string
		msg     string
	}{
		{`{"a":[1,{"b":tru}]}`, KindSyntax, 13, "/a/1/b", "has an invalid literal; expected true"},
		{`{"a":1,"a":2}`, KindDuplicateKey, 7, "/a", `has the key "a" twice in one object`},
		{"[\"x\xffy\"]", KindUTF8, 3, "/0", "is not valid UTF-8"},
		{"{\"a\":[1,{\"b\":\"\xff\"}]}", KindUTF8, 14, "/a/1/b", "is not valid UTF-8"},
		{"[tr\xff]", KindUTF8, 3, "", "is not valid UTF-8"}, // read up to the fault, the literal stops short of it: no path
		{"[\"x\xed\xa0\x80\"]", KindUTF8, 3, "/0", `is not valid UTF-8: it holds the lone surrogate U+D800 as a character; write it as the escape \ud800`},
		{`{"a/b~c":[01]}`, KindSyntax, 11, "/a~1b~0c", "has unexpected '1' where ',' or ']' was expected in an array"},
		{`"a\qb"`, KindSyntax, 2, "", "has an invalid escape in a string"},
		{`"a\u12x4"`, KindSyntax, 2, "", `has an invalid \u escape; expected four hex digits`},
		{"\"a\x01\"", KindSyntax, 2, "", "has an unescaped control character 0x01 in a string"},
		{`  "abc`, KindSyntax, 2, "", "ends inside a string"},
		{` `, KindSyntax, 1, "", "is empty; expected a JSON value"},
		{`1 2`, KindSyntax, 2, "", "has data after the JSON value: unexpected '2'"},
		{`[1.]`, KindSyntax, 1, "/0", "has an invalid number (no digits after the decimal point)"},
		{`{"a" 1}`, KindSyntax, 5, "/a", "has unexpected '1' where ':' was expected after an object key"},
		{strings.Repeat("[", MaxDepth+1), KindDepth, MaxDepth, strings.Repeat("/0", MaxDepth), "is nested more than 10000 levels deep"},
	} {
		err := Validate([]byte(tc.in))
		var je *Error
		if !errors.As(err, &je) {
			t.Errorf("Validate(%.40q) = %v, want an *Error", tc.in, err)
			continue
		}
		if je.Kind != tc.kind || je.Offset != tc.offset || je.Path.Pointer() != tc.pointer || je.Msg != tc.msg {
			t.Errorf("Validate(%.40q) = kind %d at %d in %.40q: %s; want kind %d at %d in %.40q: %s",
				tc.in, je.Kind, je.Offset, je.Path.Pointer(), je.Msg, tc.kind, tc.offset, tc.pointer, tc.msg)
		}
	}
}

// The hooks see every member once, in order, with its path and raw value,
// and an error of theirs ends the pass unchanged.
func TestCheckHooks(t *testing.T) {
	var keys, values, elements []string
	err := Check([]byte(`{"a": {"b" : [1, {"c":"x"}]}, "d":null}`), Options{
		Element: func(path Path, at int, raw []byte) error {
			elements = append(elements, path.Pointer()+"@"+strconv.Itoa(at)+"="+string(raw))
			return nil
		},
		Key: func(path Path, keyAt int) error {
			keys = append(keys, path.Pointer()+"@"+strconv.Itoa(keyAt))
			return nil
		},
		Value: func(path Path, at int, raw []byte) error {
			values = append(values, path.Pointer()+"@"+strconv.Itoa(at)+"="+string(raw))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/a@1", "/a/b@7", "/a/b/1/c@18", "/d@30"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if want := []string{`/a/b/1/c@22="x"`, `/a/b@13=[1, {"c":"x"}]`, `/a@6={"b" : [1, {"c":"x"}]}`, `/d@34=null`}; !reflect.DeepEqual(values, want) {
		t.Errorf("values %q, want %q", values, want)
	}
	if want := []string{`/a/b/0@14=1`, `/a/b/1@17={"c":"x"}`}; !reflect.DeepEqual(elements, want) {
		t.Errorf("elements %q, want %q", elements, want)
	}
	stop := errors.New("stop")
	if err := Check([]byte(`{"a":1}`), Options{Key: func(Path, int) error { return stop }}); err != stop {
		t.Errorf("a hook's error came back as %v", err)
	}
}

func TestUnquote(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain"`:           "plain",
		`"a\nb\u00e9\/"`:    "a\nbé/",
		`"\ud800"`:          "\xed\xa0\x80",
		`"\ud83d\ude00"`:    "\U0001F600",
		`"\udc00\ud800"`:    "\xed\xb0\x80\xed\xa0\x80",
		`"'\ud800'.length"`: "'\xed\xa0\x80'.length",
	} {
		if got := Unquote([]byte(raw)); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", raw, got, want)
		}
	}
}

// AppendQuote writes what the engine hands over (WTF-8) so that any JSON
// reader gets the same JavaScript string back.
func TestAppendQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"quote \" backslash \\ nl \n tab \t cr \r nul \x00 ctl \x1f bs \b ff \f", `"quote \" backslash \\ nl \n tab \t cr \r nul \u0000 ctl \u001f bs \b ff \f"`},
		{"<&> é 𝄞", `"<&> é 𝄞"`},
		{"lone \xed\xa0\x80 high", `"lone \ud800 high"`},
		{"lone \xed\xbf\xbf low", `"lone \udfff low"`},
		{"pair \xed\xa0\xbd\xed\xb8\x80", `"pair \ud83d\ude00"`},
		{"bad \xff byte", "\"bad \uFFFD byte\""},
	} {
		got := string(AppendQuote(nil, tc.in))
		if got != tc.want {
			t.Errorf("AppendQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if err := Validate([]byte(got)); err != nil {
			t.Errorf("%s is not acceptable JSON: %v", got, err)
		}
	}
}

func TestStringifiedDepth(t *testing.T) {
	at := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	over := "[" + at + "]"
	strs := `["` + strings.Repeat("[", MaxDepth+1) + `\"` + `"]`
	deeper := func(text string, max int) bool {
		d, _ := Stringified([]byte(text), max)
		return d
	}
	if deeper(at, MaxDepth) || !deeper(over, MaxDepth) || deeper(strs, MaxDepth) || !deeper(at, MaxDepth-1) {
		t.Error("Stringified disagrees with MaxDepth")
	}
	if (Validate([]byte(at)) != nil) || Validate([]byte(over)) == nil {
		t.Error("Validate disagrees with MaxDepth")
	}
}

// Stringified calls canonical exactly the texts CanonicalWTF8 leaves as they
// are: every text JSON.stringify writes for an ordinary value, and none of
// the forms only JSON.rawJSON text brings.
func TestStringifiedCanonical(t *testing.T) {
	for _, tc := range []struct {
		text      string
		canonical bool
	}{
		{`{"a":[1,-2,0.5,"x",true,false,null],"b":{}}`, true},
		{`[0,-1.5,123456789012345,999999999999999000000,0.000001,1e-7,1.5e+300,5e-324,0.30000000000000004,1.7976931348623157e+308,-0.0000033333333333333333,9007199254740992]`, true},
		{`"\u2028"`, false}, // JSON.stringify writes U+2028 as itself
		{"\"\\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\\u000b\\udfff\\udc00\\ud800 é 😀 \u2028 \x7f\"", true},
		{"\"\ud7ff\ue000\"", true}, // U+D7FF's UTF-8 starts as a surrogate's does
		// what JSON.rawJSON text may hold
		{"\"\xed\xa0\x80\"", false},
		{"[\"a\xed\xb0\x80b\"]", false},
		{`"\ud83d\ude00"`, false},
		{`"\uD800"`, false},
		{`"\u0041"`, false},
		{`"\/"`, false},
		{`"\u0008"`, false},
		{`"\u007f"`, false},
		{`-0`, false},
		{`1e1000`, false},
		{`1E400`, false},
		{`0.1e-400`, false},
		{`1.50`, false},
		{`1.0`, false},
		{`1e2`, false},
		{`1e+21`, true},
		{`1e21`, false},
		{`100000000000000000000000`, false},
		{`123456789012345678`, false},
		{`1.0000000000000000001`, false},
		{`0.30000000000000001`, false},
		{`0.0000001`, false},
		{`1` + strings.Repeat("0", 1000), false},
		{`0.` + strings.Repeat("1", 1000), false},
		// what no serialiser writes
		{`[1, 2]`, false},
		{` 1`, false},
	} {
		_, got := Stringified([]byte(tc.text), MaxDepth)
		if got != tc.canonical {
			t.Errorf("Stringified(%.60q) canonical = %v, want %v", tc.text, got, tc.canonical)
		}
		out, _, err := CanonicalWTF8([]byte(tc.text), -1)
		if err != nil {
			t.Errorf("CanonicalWTF8(%.60q): %v", tc.text, err)
			continue
		}
		if same := string(out) == tc.text; same != tc.canonical {
			t.Errorf("CanonicalWTF8(%.60q) = %.60q: same %v, want %v", tc.text, out, same, tc.canonical)
		}
	}
	// Every number FormatNumber writes reads as canonical.
	for _, f := range []float64{1, -1, 0.1, 1e21, 1e-6, 1e-7, 123e18, 1 / 3.0, 2 / 3.0, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 9007199254740993, 4.35, 0.000123456789012345} {
		if _, c := Stringified([]byte(FormatNumber(f)), MaxDepth); !c {
			t.Errorf("Stringified(%s) is not canonical", FormatNumber(f))
		}
	}
}

// The number check without parsing agrees with formatting the number again:
// on the text of random doubles, which JSON.stringify writes, and on random
// decimals of up to 20 digits, which only JSON.rawJSON text may hold.
func TestCanonicalNumber(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := FormatNumber(f)
		if !canonicalNumber([]byte(s)) {
			t.Fatalf("%s (%#x) is not canonical", s, math.Float64bits(f))
		}
		// Its neighbours in the last digit: mostly another double's text,
		// sometimes a longer text of the same double.
		mant, _, _ := strings.Cut(s, "e")
		if i := strings.LastIndexAny(mant, "0123456789"); s[i] > '0' && s[i] < '9' {
			for _, d := range []byte{s[i] - 1, s[i] + 1} {
				b := []byte(s)
				b[i] = d
				g, _ := strconv.ParseFloat(string(b), 64)
				if got, want := canonicalNumber(b), FormatNumber(g) == string(b); got != want {
					t.Fatalf("canonicalNumber(%s) = %v, want %v", b, got, want)
				}
			}
		}
	}
	for range 200000 {
		var b []byte
		if r.IntN(4) == 0 {
			b = append(b, '-')
		}
		b = strconv.AppendUint(b, r.Uint64N(1<<r.UintN(63)), 10)
		if r.IntN(2) == 0 {
			b = append(b, '.')
			for n := 1 + r.IntN(20); n > 0; n-- {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		if r.IntN(4) == 0 {
			b = append(b, []string{"e", "E", "e+", "e-"}[r.IntN(4)]...)
			b = strconv.AppendInt(b, int64(r.IntN(700)), 10)
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			continue
		}
		if got, want := canonicalNumber(b), FormatNumber(f) == string(b); got != want {
			t.Fatalf("canonicalNumber(%s) = %v, want %v", b, got, want)
		}
	}
}

// CanonicalWTF8 reads lone surrogates held as characters (WTF-8), as an
// engine's serialiser writes a JSON.rawJSON text that holds one, and writes
// them as escapes; Canonical still refuses them.
func TestCanonicalWTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\"\xed\xa0\x80\"", `"\ud800"`},
		{"[\"a\xed\xb0\x80b\",-0,1E400]", `["a\udc00b",0,null]`},
		{"\"\xed\xa0\xbd\\ude00\"", "\"\U0001F600\""},      // raw high, escaped low: one character
		{"\"\\ud83d\xed\xb8\x80\"", "\"\U0001F600\""},      // escaped high, raw low
		{"\"\xed\xa0\xbd\xed\xb8\x80\"", "\"\U0001F600\""}, // two raw halves (CESU-8)
		{"\"\xed\xb8\x80\xed\xa0\xbd\"", `"\ude00\ud83d"`}, // low then high: two lone
		{"{\"\xed\xa0\x80\":1}", `{"\ud800":1}`},
		{"\"\xed\x9f\xbf\"", "\"\ud7ff\""}, // U+D7FF: its UTF-8 starts as a surrogate's does
	} {
		got, over, err := CanonicalWTF8([]byte(tc.in), -1)
		if err != nil || over || string(got) != tc.want {
			t.Errorf("CanonicalWTF8(%q) = %q, %v, %v; want %q", tc.in, got, over, err, tc.want)
		}
		if utf8.Valid([]byte(tc.in)) {
			continue
		}
		if _, _, err := Canonical([]byte(tc.in), -1); err == nil {
			t.Errorf("Canonical(%q) accepted WTF-8", tc.in)
		}
	}
	for _, in := range []string{
		"\"\xff\"", "\"\xed\xa0\"", "\xed\xa0\x80", "[\xed\xa0\x80]", `{"a":1,"a":2}`,
		"{\"\xed\xa0\xbd\\ude00\":1,\"\U0001F600\":2}", // one key, written twice
	} {
		if out, _, err := CanonicalWTF8([]byte(in), -1); err == nil {
			t.Errorf("CanonicalWTF8(%q) = %q, want an error", in, out)
		}
	}
}

// FuzzStringified holds Stringified to CanonicalWTF8: a text it calls
// canonical is one CanonicalWTF8 leaves as it is, and what CanonicalWTF8
// writes it calls canonical, so that a result already in that form is never
// rewritten.
func FuzzStringified(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,"\ud800"]}`, "\"\xed\xa0\x80\"", `"\u0041\/"`, `1e400`, `[[[]]]`, `0.1e-7`, `1e21`, `-0.000001`, `123456789012345678`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _, err := CanonicalWTF8(in, -1)
		if err != nil {
			return
		}
		if _, c := Stringified(in, MaxDepth); c && string(out) != string(in) {
			t.Fatalf("Stringified calls %q canonical; CanonicalWTF8 writes %q", in, out)
		}
		if _, c := Stringified(out, MaxDepth); !c {
			t.Fatalf("Stringified calls CanonicalWTF8's %q not canonical", out)
		}
		if !utf8.Valid(out) {
			t.Fatalf("CanonicalWTF8 wrote %q, not UTF-8", out)
		}
		if again, _, err := Canonical(out, -1); err != nil || string(again) != string(out) {
			t.Fatalf("Canonical(%q) = %q, %v", out, again, err)
		}
	})
}

func TestQuoteShort(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                    `"plain"`,
		"a\"b\n":                   `"a\"b\n"`,
		"x\xed\xa0\x80y":           `"x\ud800y"`,
		"\xed\xb0\x80\xed\xa0\x80": `"\udc00\ud800"`,
		"bad \xff":                 `"bad \xff"`,
		strings.Repeat("é", 40):    `"` + strings.Repeat("é", 32) + `"…`,
	} {
		if got := QuoteShort(in); got != want {
			t.Errorf("QuoteShort(%q) = %s, want %s", in, got, want)
		}
	}
}
