// Package ndjson reads inputs written as NDJSON, one JSON value a line, as
// eval -inputs and the bulk verb take them: each line is one input, named
// by its source (file:line) and its global index (its line's position
// across every source, from 0). A line is never skipped: one that is blank,
// not one JSON value or over the bound is an error naming it, since a
// skipped line would shift every index after it. Lines are counted without
// being parsed, so that a task can read just its range of indices across
// several sources.
package ndjson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// Source is where an input was read: its file or object, and its line
// there, from 1.
type Source struct {
	Name string
	Line int64
}

// String writes s as name:line.
func (s Source) String() string { return s.Name + ":" + strconv.FormatInt(s.Line, 10) }

// Input is one line's JSON value, without its newline and the white space
// around it.
type Input struct {
	Index  int64 // the global index
	Source Source
	Text   jsontext.Text
}

// Limit bounds a line's bytes (without its newline), named for the error
// that refuses a longer one ("MAX_REQUEST_BYTES"). Bytes <= 0 is no bound.
type Limit struct {
	Bytes int64
	Name  string
}

// LineError is a line that is not an input: blank, not one JSON value, or
// longer than the bound. It is the inputs' fault: reading them again gives
// the same error.
type LineError struct {
	Source Source
	Index  int64
	// Reason says what is wrong with the line, and Hint, when not "", what
	// the inputs look like instead (one JSON array) and how to convert
	// them.
	Reason, Hint string
	// Err is jsontext's verdict on a line that is not JSON.
	Err error
}

func (e *LineError) Error() string {
	s := fmt.Sprintf("%s (input %d): %s", e.Source, e.Index, e.Reason)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *LineError) Unwrap() error { return e.Err }

// arrayHint is said of a line that looks like a part of one JSON array
// written over several lines, the likeliest mistake in a file of inputs.
const arrayHint = `the inputs are one JSON value a line (NDJSON), and this looks like a part of one JSON array: if the file is one array of inputs, jq -c '.[]' file.json > file.ndjson writes its elements one a line`

// Count counts r's lines as a Reader reads them: its newlines, and one
// more for a last line without one. The bytes are scanned, not parsed.
func Count(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	last := byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// Reader reads the inputs of one source, a line at a time.
type Reader struct {
	br    *bufio.Reader
	name  string
	limit Limit
	line  int64 // the lines read or skipped
	first int64 // the global index of line 1
	err   error // sticky: the first error, after which nothing is read
}

// NewReader reads r, the source named name, whose line 1 is the input of
// global index first, with each line bounded by limit.
func NewReader(r io.Reader, name string, first int64, limit Limit) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), name: name, limit: limit, first: first}
}

// Next reads the next line's input. It returns io.EOF after the last
// line, a *LineError for a line that is not an input, and another error
// (naming the line) when r fails; after an error, every call returns it.
func (r *Reader) Next() (Input, error) {
	if r.err != nil {
		return Input{}, r.err
	}
	in, err := r.next()
	if err != nil {
		r.err = err
	}
	return in, err
}

func (r *Reader) next() (Input, error) {
	src := Source{r.name, r.line + 1}
	idx := r.first + r.line
	text, err := r.readLine(true)
	switch {
	case errors.Is(err, io.EOF):
		return Input{}, io.EOF
	case errors.Is(err, errTooLong):
		e := &LineError{Source: src, Index: idx, Reason: fmt.Sprintf("the line is over %d bytes, the most an input may take", r.limit.Bytes)}
		if r.limit.Name != "" {
			e.Reason += " (" + r.limit.Name + ")"
		}
		if src.Line == 1 && opensArray(text) {
			e.Hint = arrayHint
		}
		return Input{}, e
	case err != nil:
		return Input{}, fmt.Errorf("reading %s: %w", src, err)
	}
	r.line++
	value := bytes.Trim(text, jsonSpace) // as the element of a batch's inputs is
	if len(value) == 0 {
		return Input{}, &LineError{Source: src, Index: idx, Reason: "the line is blank; each line is one input, a JSON value, and a blank line would shift every index after it"}
	}
	if err := jsontext.Validate(value); err != nil {
		e := &LineError{Source: src, Index: idx, Reason: "the line is not one JSON value: " + err.Error(), Err: err}
		var je *jsontext.Error
		if errors.As(err, &je) {
			lead := len(text) - len(bytes.TrimLeft(text, jsonSpace))
			e.Reason = fmt.Sprintf("the line is not one JSON value: it %s at byte %d", je.Msg, lead+je.Offset)
		}
		if arrayPart(value, src.Line) {
			e.Hint = arrayHint
		}
		return Input{}, e
	}
	return Input{Index: idx, Source: src, Text: jsontext.Text(value)}, nil
}

// arrayPart reports whether value, line n of its source and not one JSON
// value, looks like a part of one JSON array written over several lines:
// its first line (an opening bracket not closed on it), an element
// followed by its comma, or the closing bracket. A line that is one whole
// array is an input like any other.
func arrayPart(value []byte, n int64) bool {
	switch {
	case n == 1 && opensArray(value):
		return true
	case bytes.Equal(value, []byte("]")):
		return true
	case len(value) > 1 && value[len(value)-1] == ',':
		return jsontext.Validate(bytes.Trim(value[:len(value)-1], jsonSpace)) == nil
	}
	return false
}

// opensArray reports whether line begins with '[', after white space and
// a byte order mark.
func opensArray(line []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(bytes.TrimPrefix(line, []byte(bom)), jsonSpace), []byte("["))
}

// Skip passes over n lines without holding or checking them. It returns
// io.ErrUnexpectedEOF when the source has fewer, and r's error (naming
// the line) when it fails.
func (r *Reader) Skip(n int64) error {
	for ; n > 0 && r.err == nil; n-- {
		if _, err := r.readLine(false); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			} else {
				err = fmt.Errorf("reading %s: %w", Source{r.name, r.line + 1}, err)
			}
			r.err = err
			return err
		}
		r.line++
	}
	return r.err
}

var errTooLong = errors.New("line too long")

// jsonSpace is the white space JSON allows around a value; bom, a byte
// order mark, which it does not, but which an editor may write first.
const (
	jsonSpace = " \t\r"
	bom       = "\xef\xbb\xbf"
)

// readLine reads one line without its newline (and a \r before it); keep
// false passes over it without holding it, and without bounding it. It
// returns io.EOF at the end, and errTooLong, with the line's first bytes,
// for a kept line over the bound.
func (r *Reader) readLine(keep bool) ([]byte, error) {
	var line []byte
	var n int64
	max := r.limit.Bytes
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += int64(len(chunk))
		if keep {
			if max > 0 && n > max+2 { // its \r\n aside
				return append(line, chunk[:min(len(chunk), 64)]...), errTooLong
			}
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if keep && max > 0 && int64(len(line)) > max {
			return line, errTooLong
		}
		return line, nil
	}
}

// ReadAll reads every input of r, the source named name, whose line 1 is
// the input of index 0, with each line bounded by limit.
func ReadAll(r io.Reader, name string, limit Limit) ([]Input, error) {
	var inputs []Input
	rd := NewReader(r, name, 0, limit)
	for {
		in, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return inputs, nil
		}
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
	}
}

// Part is one of the sources that hold the inputs, in their order: its
// name, its lines (Count's) and how to open it. The global index of its
// first line is the sum of the lines of the parts before it.
type Part struct {
	Name  string
	Lines int64
	Open  func() (io.ReadCloser, error)
}

// ErrChanged is a source with fewer lines than were counted: it changed
// between its count and its read.
var ErrChanged = errors.New("the inputs changed while they were read")

// ReadRange reads the inputs of global indices [start, end) of parts,
// opening only the parts that hold some of them and reading each no
// further than its last. Its errors are Reader's, an error of Open as it
// is, and ErrChanged (wrapped, with the counts) when a part has fewer
// lines than it was counted with.
func ReadRange(parts []Part, start, end int64, limit Limit) ([]Input, error) {
	if start < 0 || end < start {
		return nil, fmt.Errorf("ndjson: the range [%d, %d) is not one", start, end)
	}
	inputs := make([]Input, 0, min(end-start, 1<<16))
	var first int64 // the global index of the part's first line
	for _, p := range parts {
		if first >= end {
			break
		}
		if first+p.Lines <= start {
			first += p.Lines
			continue
		}
		if err := readPart(p, first, max(start, first), min(end, first+p.Lines), limit, &inputs); err != nil {
			return nil, err
		}
		first += p.Lines
	}
	if int64(len(inputs)) != end-start {
		return nil, fmt.Errorf("%w: %d of the range's %d lines were there", ErrChanged, len(inputs), end-start)
	}
	return inputs, nil
}

// readPart appends to inputs the lines of p of global indices [from, to),
// p's first line being index first.
func readPart(p Part, first, from, to int64, limit Limit, inputs *[]Input) error {
	rc, err := p.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	r := NewReader(rc, p.Name, first, limit)
	if err := r.Skip(from - first); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // fewer lines than counted: ReadRange says so
		}
		return err
	}
	for i := from; i < to; i++ {
		in, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		*inputs = append(*inputs, in)
	}
	return nil
}
