package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Each line is one input, named by its source and index: \n or \r\n, the
// last newline optional, the white space around a value dropped, a line
// that is one whole array an input like any other.
func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"empty", "", nil},
		{"one, no newline", `{"a":1}`, []string{`{"a":1}`}},
		{"one, newline", "1\n", []string{"1"}},
		{"CRLF", "1\r\n\"two\"\r\n[3]", []string{"1", `"two"`, "[3]"}},
		{"spacing", " \t{\"a\" : 1} \r\n", []string{`{"a" : 1}`}},
		{"arrays, a line each", "[1,2]\n[]\n[{\"a\":[3]}]\n", []string{"[1,2]", "[]", `[{"a":[3]}]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadAll(strings.NewReader(tc.data), "in.ndjson", Limit{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("read %d inputs, want %d: %v", len(got), len(tc.want), got)
			}
			for i, in := range got {
				want := Input{Index: int64(i), Source: Source{"in.ndjson", int64(i + 1)}, Text: jsontext.Text(tc.want[i])}
				if in.Index != want.Index || in.Source != want.Source || string(in.Text) != string(want.Text) {
					t.Errorf("input %d: %+v, want %+v", i, in, want)
				}
			}
			if n, err := Count(strings.NewReader(tc.data)); err != nil || n != int64(len(tc.want)) {
				t.Errorf("counted %d lines (%v), read %d", n, err, len(tc.want))
			}
		})
	}
}

// A line that is not an input is an error naming its source, line and
// index, and what is wrong, with a hint where the inputs look like one
// JSON array; reading ends there.
func TestLineErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		limit      Limit
		line       int64
		want       []string
		hint       bool
	}{
		{"blank", "1\n\n2\n", Limit{}, 2, []string{"in:2 (input 1): the line is blank"}, false},
		{"white space only", "1\n \t\r\n", Limit{}, 2, []string{"blank"}, false},
		{"not JSON", "1\n{\n", Limit{}, 2, []string{"in:2 (input 1): the line is not one JSON value: it has unexpected end of JSON where an object key was expected at byte 1"}, false},
		{"a space JSON does not allow", " \u00a01\n", Limit{}, 1, []string{"not one JSON value: it has unexpected '\\u00a0' where a value was expected at byte 1"}, false},
		{"over the bound", "1\n12345\n", Limit{4, "MAX_REQUEST_BYTES"}, 2, []string{"in:2 (input 1): the line is over 4 bytes, the most an input may take (MAX_REQUEST_BYTES)"}, false},
		{"over the bound, CRLF", "1234\r\n12345\r\n", Limit{4, ""}, 2, []string{"over 4 bytes, the most an input may take"}, false},
		// the likeliest mistake: a file that is one JSON array
		{"a pretty array", "[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n", Limit{}, 1, []string{"in:1 (input 0)", "one JSON value a line (NDJSON)", `jq -c '.[]' file.json > file.ndjson`}, true},
		{"an array begun on line 1", "[{\"a\":1},\n{\"a\":2}]\n", Limit{}, 1, []string{"jq -c '.[]'"}, true},
		{"an array after a byte order mark", "\ufeff[\n1\n]", Limit{}, 1, []string{"jq -c '.[]'"}, true},
		{"a one-line array over the bound", `[{"a":1},{"a":2},{"a":3}]`, Limit{8, "MAX_REQUEST_BYTES"}, 1, []string{"over 8 bytes", "jq -c '.[]'"}, true},
		{"an element and its comma", "1\n  {\"a\": 2},\n", Limit{}, 2, []string{"jq -c '.[]'"}, true},
		{"the closing bracket", "1\n]\n", Limit{}, 2, []string{"jq -c '.[]'"}, true},
		{"an array's start past line 1", "1\n[1,\n", Limit{}, 2, []string{"not one JSON value"}, false},
		{"an object over lines", "{\n\"a\":1}\n", Limit{}, 1, []string{"not one JSON value"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.data), "in", 0, tc.limit)
			var err error
			for n := int64(1); n < tc.line; n++ {
				if _, err = r.Next(); err != nil {
					t.Fatalf("line %d: %v", n, err)
				}
			}
			_, err = r.Next()
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LineError", err)
			}
			if le.Source != (Source{"in", tc.line}) || le.Index != tc.line-1 || (le.Hint != "") != tc.hint {
				t.Errorf("%+v: want line %d, hint %v", le, tc.line, tc.hint)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if _, again := r.Next(); again != err {
				t.Errorf("read on after the error: %v", again)
			}
		})
	}
}

// A source that fails is an error naming the line being read, and no
// LineError: reading again may help.
func TestReadFailure(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("1\n2"), iotest.ErrReader(boom)), "gs://b/in", 10, Limit{})
	if in, err := r.Next(); err != nil || in.Index != 10 {
		t.Fatalf("line 1: %+v, %v", in, err)
	}
	_, err := r.Next()
	var le *LineError
	if !errors.Is(err, boom) || errors.As(err, &le) || !strings.Contains(err.Error(), "reading gs://b/in:2") {
		t.Errorf("got %v, want boom naming line 2", err)
	}
	if _, err := Count(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("Count: %v", err)
	}
}

// A line is read whole however long, within the bound; a line skipped is
// neither held nor bounded.
func TestLongLines(t *testing.T) {
	long := `"` + strings.Repeat("a", 100<<10) + `"` // over the reader's buffer
	data := "{\"a\":1}\r\n" + strings.Repeat("x", 200<<10) + "\n" + long + "\r\n" + long + "x\n"
	r := NewReader(strings.NewReader(data), "in", 0, Limit{Bytes: int64(len(long)), Name: "MAX"})
	if in, err := r.Next(); err != nil || string(in.Text) != `{"a":1}` {
		t.Fatalf("line 1: %+v, %v", in, err)
	}
	if err := r.Skip(1); err != nil {
		t.Fatalf("skipping line 2, over the bound: %v", err)
	}
	if in, err := r.Next(); err != nil || string(in.Text) != long || in.Source.Line != 3 {
		t.Fatalf("line 3, at the bound: %d bytes, line %d, %v", len(in.Text), in.Source.Line, err)
	}
	var le *LineError
	if _, err := r.Next(); !errors.As(err, &le) || le.Source.Line != 4 || !strings.Contains(err.Error(), fmt.Sprintf("over %d bytes", len(long))) {
		t.Fatalf("line 4, a byte over the bound: %v", err)
	}
	if err := NewReader(strings.NewReader("1\n"), "in", 0, Limit{}).Skip(2); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("skipping past the end: %v", err)
	}
}

// parts splits data into parts at each of cuts (byte offsets), each
// counted.
func parts(t testing.TB, name string, data []byte, cuts ...int) []Part {
	var ps []Part
	from := 0
	for i, c := range append(cuts, len(data)) {
		b := data[from:c]
		n, err := Count(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, Part{Name: fmt.Sprintf("%s-%d", name, i), Lines: n, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(b)), nil
		}})
		from = c
	}
	return ps
}

// A range of global indices across parts is the same inputs as the parts
// read whole, each named by its part and line; a part that holds none of
// the range is not opened; a part shorter than counted is ErrChanged.
func TestReadRange(t *testing.T) {
	data := []byte("0\n1\n2\n3\n4\r\n5\n6")
	ps := parts(t, "p", data, 4, 4, 11) // "0\n1\n", "", "2\n3\n4\r\n", "5\n6"
	opened := map[string]int{}
	for i := range ps {
		open := ps[i].Open
		ps[i].Open = func() (io.ReadCloser, error) { opened[ps[i].Name]++; return open() }
	}
	got, err := ReadRange(ps, 3, 6, Limit{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Input{{3, Source{"p-2", 2}, jsontext.Text("3")}, {4, Source{"p-2", 3}, jsontext.Text("4")}, {5, Source{"p-3", 1}, jsontext.Text("5")}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if fmt.Sprint(opened) != "map[p-2:1 p-3:1]" {
		t.Errorf("opened %v", opened)
	}
	if got, err := ReadRange(ps, 7, 7, Limit{}); err != nil || len(got) != 0 {
		t.Errorf("an empty range: %v, %v", got, err)
	}
	ps[3].Lines = 3 // counted before a line went
	if _, err := ReadRange(ps, 0, 8, Limit{}); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "7 of the range's 8 lines") {
		t.Errorf("a part shorter than counted: %v", err)
	}
	boom := errors.New("boom")
	ps[0].Open = func() (io.ReadCloser, error) { return nil, boom }
	if _, err := ReadRange(ps, 0, 1, Limit{}); !errors.Is(err, boom) {
		t.Errorf("a part that does not open: %v", err)
	}
}

// model is what reading data means, written plainly: its lines, split at
// each \n (the last one's optional) with a \r before it dropped, each
// within max bytes and, without JSON's white space around it, one JSON
// value. It returns the values and the line (from 1) of the first that is
// not one, 0 for none.
func model(data []byte, max int64) (values []string, bad int64, lines int64) {
	if len(data) == 0 {
		return nil, 0, 0
	}
	split := bytes.Split(data, []byte("\n"))
	if len(split[len(split)-1]) == 0 {
		split = split[:len(split)-1]
	}
	for i, l := range split {
		l = bytes.TrimSuffix(l, []byte("\r"))
		v := bytes.Trim(l, " \t\r")
		if (max > 0 && int64(len(l)) > max) || len(v) == 0 || jsontext.Validate(v) != nil {
			if bad == 0 {
				bad = int64(i + 1)
			}
			continue
		}
		if bad == 0 {
			values = append(values, string(v))
		}
	}
	return values, bad, int64(len(split))
}

// The reader is the model: it never panics, every input it accepts is
// valid JSON with its source and index in step with the lines read, its
// first error is a *LineError naming the model's first bad line, Count
// counts the model's lines, and any range of indices across any split of
// the data into parts reads as that range of the whole.
func FuzzReader(f *testing.F) {
	for _, s := range []struct {
		data       string
		cut, start uint16
		end        uint16
		max        uint8
	}{
		{"1\n2\n3\n", 2, 1, 3, 0},
		{"{\"a\":1}\r\n[1,2]\r\n\"x\"", 9, 0, 3, 0},
		{"[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n", 0, 0, 4, 0},
		{"1\n\n2", 1, 0, 3, 0},
		{"123456789\n1\n", 3, 1, 2, 4},
		{" \t1 \r\n\"\\u00e9\"\n[]", 5, 0, 3, 0},
		{"\xff\n1", 0, 1, 2, 0},
		{"1\r", 0, 0, 1, 0},
	} {
		f.Add([]byte(s.data), s.cut, s.start, s.end, s.max)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut, start, end uint16, max uint8) {
		limit := Limit{Bytes: int64(max), Name: "MAX"}
		values, bad, lines := model(data, limit.Bytes)

		if n, err := Count(bytes.NewReader(data)); err != nil || n != lines {
			t.Fatalf("Count = %d, %v; the model has %d lines", n, err, lines)
		}
		got, err := ReadAll(bytes.NewReader(data), "f", limit)
		var le *LineError
		switch {
		case bad == 0 && err != nil:
			t.Fatalf("refused what the model reads: %v", err)
		case bad != 0 && (!errors.As(err, &le) || le.Source != (Source{"f", bad}) || le.Index != bad-1 || !strings.HasPrefix(err.Error(), fmt.Sprintf("f:%d (input %d): ", bad, bad-1))):
			t.Fatalf("got %v, want the error of line %d", err, bad)
		case bad == 0 && len(got) != len(values):
			t.Fatalf("read %d inputs, the model %d", len(got), len(values))
		}
		for i, in := range got {
			if jsontext.Validate(in.Text) != nil || string(in.Text) != values[i] || in.Index != int64(i) || in.Source != (Source{"f", int64(i + 1)}) {
				t.Fatalf("input %d is %+v, the model's %q", i, in, values[i])
			}
		}

		// a range across two parts, cut anywhere
		c := int(cut) % (len(data) + 1)
		ps := parts(t, "p", data, c)
		var whole []Input
		for _, p := range ps {
			rc, _ := p.Open()
			part, err := ReadAll(rc, p.Name, limit)
			if err != nil {
				return // a part's own fault: the ranges are checked on parts that read
			}
			whole = append(whole, part...)
		}
		total := ps[0].Lines + ps[1].Lines
		if int64(len(whole)) != total {
			t.Fatalf("parts read %d inputs of %d counted", len(whole), total)
		}
		s, e := int64(start)%(total+1), int64(end)%(total+1)
		if s > e {
			s, e = e, s
		}
		rng, err := ReadRange(ps, s, e, limit)
		if err != nil {
			t.Fatalf("range [%d, %d): %v", s, e, err)
		}
		for i, in := range rng {
			w := whole[s+int64(i)]
			w.Index = s + int64(i)
			if in.Index != w.Index || in.Source != w.Source || !bytes.Equal(in.Text, w.Text) {
				t.Fatalf("range [%d, %d) input %d is %+v, the whole's %+v", s, e, i, in, w)
			}
		}
	})
}
