package jsontext

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Object is one JSON object read strictly for a decoder of a closed shape:
// each member is taken at most once with the type it must have, and Done
// reports the first problem, including a member nobody took. Messages name
// members by path: "" for the top level, else `"capabilities"."network"`.
type Object struct {
	path string
	keys []string
	vals map[string][]byte
	used map[string]bool
	err  error
}

// ParseObject reads data, which must be one acceptable JSON object; path
// names it in messages ("" for a whole document).
func ParseObject(path string, data []byte) (*Object, error) {
	o := &Object{path: path, vals: map[string][]byte{}, used: map[string]bool{}}
	err := Check(data, Options{Value: func(p Path, _ int, raw []byte) error {
		if len(p) == 1 && p[0].Index < 0 {
			o.keys = append(o.keys, p[0].Key)
			o.vals[p[0].Key] = raw
		}
		return nil
	}})
	var je *Error
	switch {
	case errors.As(err, &je) && je.Kind == KindDuplicateKey:
		member := path
		for _, s := range je.Path {
			if s.Index >= 0 {
				member += "[" + strconv.Itoa(s.Index) + "]"
			} else {
				member = join(member, s.Key)
			}
		}
		return nil, fmt.Errorf("%sduplicate member", at(member))
	case err != nil:
		return nil, fmt.Errorf("%snot JSON: %w", at(path), err)
	case data[len(data)-len(bytes.TrimLeft(data, " \t\r\n"))] != '{':
		return nil, fmt.Errorf("%sa JSON object is required", at(path))
	}
	return o, nil
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func join(path, key string) string {
	q := QuoteShort(key)
	if path == "" {
		return q
	}
	return path + "." + q
}

// Fail records a problem with the member key, unless one is recorded.
func (o *Object) Fail(key, format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%s"+format, append([]any{at(join(o.path, key))}, args...)...)
	}
}

// Take returns a member's text and marks it read; a required member that is
// absent is a problem.
func (o *Object) Take(key string, required bool) ([]byte, bool) {
	raw, ok := o.vals[key]
	if !ok {
		if required {
			o.Fail(key, "missing")
		}
		return nil, false
	}
	o.used[key] = true
	return raw, true
}

// TypeOf names the JSON type of a value's text for a message.
func TypeOf(raw []byte) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// ShowValue describes a value's text for a message that says what was sent
// instead of what was wanted: a string by its type and its contents, quoted
// once (`the string "200"`, never the literal quoted again), a number or a
// literal as written, an object or an array by its type alone. Each is cut
// as QuoteShort cuts, so that hostile text cannot make the message large.
func ShowValue(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "the string " + QuoteShort(Unquote(raw))
	case '{', '[':
		return TypeOf(raw)
	case 't', 'f', 'n':
		return string(raw)
	}
	if len(raw) <= shortBytes { // a number's text needs no quoting
		return "the number " + string(raw)
	}
	return "a number of " + strconv.Itoa(len(raw)) + " characters"
}

// Str reads a string member, decoded to WTF-8.
func (o *Object) Str(key string, required bool) (string, bool) {
	raw, ok := o.Take(key, required)
	if !ok {
		return "", false
	}
	if raw[0] != '"' {
		o.Fail(key, "must be a string, got %s", TypeOf(raw))
		return "", false
	}
	return Unquote(raw), true
}

// NonEmpty reads a required, non-empty string.
func (o *Object) NonEmpty(key string) string {
	s, present := o.Str(key, true)
	if present && s == "" {
		o.Fail(key, "must not be empty")
	}
	return s
}

// Bool reads a boolean member.
func (o *Object) Bool(key string, required bool) (bool, bool) {
	raw, ok := o.Take(key, required)
	if !ok {
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	o.Fail(key, "must be a boolean, got %s", TypeOf(raw))
	return false, false
}

// Count reads a non-negative integer written in digits.
func (o *Object) Count(key string, required bool) (int64, bool) {
	raw, ok := o.Take(key, required)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || raw[0] == '-' {
		o.Fail(key, "must be a non-negative integer, got %s", ShowValue(raw))
		return 0, false
	}
	return n, true
}

// Child reads an object member.
func (o *Object) Child(key string, required bool) (*Object, bool) {
	raw, ok := o.Take(key, required)
	if !ok {
		return nil, false
	}
	c, err := ParseObject(join(o.path, key), raw)
	if err != nil {
		if o.err == nil {
			o.err = err
		}
		return nil, false
	}
	return c, true
}

// OneOf checks that s, read from key, is one of the allowed values.
func (o *Object) OneOf(key, s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	o.Fail(key, "must be one of %s, got %s", strings.Join(allowed, ", "), QuoteShort(s))
	return false
}

// Err returns the first problem recorded so far.
func (o *Object) Err() error { return o.err }

// Adopt records err, a member's own problem, unless one is recorded or err
// is nil.
func (o *Object) Adopt(err error) {
	if o.err == nil && err != nil {
		o.err = err
	}
}

// Done returns the first problem, or a member that nothing took.
func (o *Object) Done() error {
	if o.err != nil {
		return o.err
	}
	for _, k := range o.keys {
		if !o.used[k] {
			return fmt.Errorf("%sunknown member", at(join(o.path, k)))
		}
	}
	return nil
}

// Keys returns the object's member names, in their order.
func (o *Object) Keys() []string { return append([]string(nil), o.keys...) }

// Unread reports whether the object has the member key and nothing took
// it.
func (o *Object) Unread(key string) bool {
	_, ok := o.vals[key]
	return ok && !o.used[key]
}

// Skip marks every member read, for an object whose unknown members are
// tolerated.
func (o *Object) Skip() {
	for _, k := range o.keys {
		o.used[k] = true
	}
}
