package service

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// A kind is what a variable's value is: parse reads a value or says what it
// must be, with def as the example; form says the same whatever the value.
type kind[T any] struct {
	parse func(value string, def T) (T, error)
	form  func(def T) string
}

// A reader reads a setting's text into its field of Config (apply) and
// says what a value of it is, with its default as the example (form).
type reader struct {
	apply func(field reflect.Value, name, value, def string) error
	form  func(def string) string
}

// readerOf is the reader of a field of type T, of kind k. The default is
// read first, so that a value that does not parse leaves the field at its
// default, and is reported with the variable's name.
func readerOf[T any](k kind[T]) reader {
	var zero T
	readDefault := func(name, def string) (T, error) {
		d, err := k.parse(def, zero)
		if err != nil {
			return zero, fmt.Errorf("%s's default %q is not %w", name, def, err)
		}
		return d, nil
	}
	return reader{
		apply: func(field reflect.Value, name, value, def string) error {
			f := field.Addr().Interface().(*T)
			d, err := readDefault(name, def)
			if err != nil {
				return err
			}
			*f = d
			v, err := k.parse(value, d)
			if err != nil {
				return fmt.Errorf("%s must be %w, got %s", name, err, quoteValue(value))
			}
			*f = v
			return nil
		},
		form: func(def string) string {
			d, _ := readDefault("", def)
			return k.form(d)
		},
	}
}

// readerFor is the reader of f, a field of Config, by its type; an int or
// int64 whose name ends in Bytes is a count of bytes.
func readerFor(f reflect.StructField) (reader, bool) {
	bytes := strings.HasSuffix(f.Name, "Bytes")
	switch f.Type {
	case reflect.TypeFor[string]():
		return readerOf(anyText), true
	case reflect.TypeFor[[]string]():
		return readerOf(commaList), true
	case reflect.TypeFor[bool]():
		return readerOf(boolean), true
	case reflect.TypeFor[time.Duration]():
		return readerOf(duration), true
	case reflect.TypeFor[uint64]():
		return readerOf(naturalNumber), true
	case reflect.TypeFor[int]():
		if bytes {
			return readerOf(byteCount[int]()), true
		}
		return readerOf(wholeNumber[int]()), true
	case reflect.TypeFor[int64]():
		if bytes {
			return readerOf(byteCount[int64]()), true
		}
		return readerOf(wholeNumber[int64]()), true
	}
	return reader{}, false
}

// The kinds of value. Each says, when a value does not parse, what it must
// be in the setting's words: the parser's own (strconv.ParseInt: parsing
// "abc": invalid syntax) name Go functions, not the setting. Numbers are
// read as Go writes them (0x100, 1_000), as the service always has.

// anyText takes a value as it is; what it may be, Validate checks. Without
// a default there is nothing to say of its form.
var anyText = kind[string]{
	parse: func(value, _ string) (string, error) { return value, nil },
	form: func(def string) string {
		if def == "" {
			return ""
		}
		return "a value such as " + def
	},
}

// commaList splits a value at its commas, leaving each item's spaces to
// the code that uses it; a blank value is no items.
var commaList = kind[[]string]{
	parse: func(value string, _ []string) ([]string, error) {
		if strings.TrimSpace(value) == "" {
			return nil, nil
		}
		return strings.Split(value, ","), nil
	},
	form: func([]string) string { return "a comma-separated list" },
}

var boolean = kind[bool]{
	parse: func(value string, _ bool) (bool, error) {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return false, errors.New("true or false")
		}
		return b, nil
	},
	form: func(bool) string { return "true or false" },
}

// ParseDuration reads a duration as the configuration reads one, saying
// what a value must be, with def as the example, when it is not one: the
// eval and conformance verbs read their duration flags the same way.
func ParseDuration(value string, def time.Duration) (time.Duration, error) {
	return duration.parse(value, def)
}

var duration = kind[time.Duration]{
	parse: func(value string, def time.Duration) (time.Duration, error) {
		d, err := time.ParseDuration(value)
		if err != nil {
			want := durationForm(def)
			if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
				want += "; a number alone has no unit"
			}
			return 0, errors.New(want)
		}
		return d, nil
	},
	form: durationForm,
}

func durationForm(def time.Duration) string {
	return "a duration with a unit (ms, s, m, h), such as " + shortDuration(def)
}

func wholeNumber[T int | int64]() kind[T] { return signed[T]("a whole number") }

func byteCount[T int | int64]() kind[T] { return signed[T]("a whole number of bytes") }

// signed reads a T, a whole number described as what; an int is 32 bits on
// some platforms.
func signed[T int | int64](what string) kind[T] {
	bits := 64
	if _, isInt := any(T(0)).(int); isInt {
		bits = strconv.IntSize
	}
	form := func(def T) string { return fmt.Sprintf("%s, such as %d", what, def) }
	return kind[T]{
		parse: func(value string, def T) (T, error) {
			n, err := strconv.ParseInt(value, 0, bits)
			switch {
			case errors.Is(err, strconv.ErrRange):
				return 0, fmt.Errorf("%s in [%d, %d]", what, int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
			case err != nil:
				return 0, errors.New(form(def))
			}
			return T(n), nil
		},
		form: form,
	}
}

var naturalNumber = kind[uint64]{
	parse: func(value string, def uint64) (uint64, error) {
		n, err := strconv.ParseUint(value, 0, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("a whole number, 0 or more, at most %d", uint64(math.MaxUint64))
		case err != nil:
			return 0, errors.New(naturalForm(def))
		}
		return n, nil
	},
	form: naturalForm,
}

func naturalForm(def uint64) string {
	return fmt.Sprintf("a whole number, 0 or more, such as %d", def)
}

// quoteValue quotes a variable's value in a problem, cut short when it is
// longer than any setting's (a path, a URL) needs to be.
func quoteValue(v string) string {
	const max = 256
	if len(v) > max {
		return fmt.Sprintf("%q…(%d bytes)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// shortDuration is d as a person writes it: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2] // 1m0s: 1m; 1h0m0s: 1h0m
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
