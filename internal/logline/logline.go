// Package logline is how the service writes the log lines that others
// read (Terraform's log-based metrics and alerts, an operator's queries):
// a line is a value of a struct type whose fields carry a `log` tag, the
// name of the field in the line, and omitempty to leave the field out when
// it holds its type's zero value. A nil pointer is always left out. An
// embedded struct, or an embedded pointer to one that is not nil, writes
// its fields in line. A field whose type is a FieldSet writes the fields it
// names itself. Attrs writes a line and Fields lists every name its type
// can write, from one reading of the tags, so that what the readers are
// told the service writes (Line) is what it writes.
package logline

import (
	"log/slog"
	"reflect"
	"strings"
	"time"
)

// FieldSet is a field of a line that writes several fields under names it
// makes itself (the phases of a run, each a field of its own).
type FieldSet interface {
	// LogAttrs are the fields as the line writes them.
	LogAttrs() []slog.Attr
	// LogFields is every name LogAttrs writes, whatever the value.
	LogFields() []string
}

var fieldSetType = reflect.TypeFor[FieldSet]()

// Attrs are the fields of line, a struct or a pointer to one, in the order
// of its type's fields.
func Attrs(line any) []slog.Attr {
	var out []slog.Attr
	walk(reflect.ValueOf(line), false, func(name string, v reflect.Value, omitEmpty bool) {
		switch {
		case v.Kind() == reflect.Pointer && v.IsNil():
		case v.Type().Implements(fieldSetType):
			out = append(out, v.Interface().(FieldSet).LogAttrs()...)
		case omitEmpty && v.IsZero():
		default:
			out = append(out, attr(name, reflect.Indirect(v)))
		}
	})
	return out
}

// Fields is every name a line of line's type can write, in the order of its
// type's fields; line may be its zero value.
func Fields(line any) []string {
	var out []string
	walk(reflect.New(reflect.TypeOf(line)).Elem(), true, func(name string, v reflect.Value, _ bool) {
		if v.Type().Implements(fieldSetType) {
			out = append(out, v.Interface().(FieldSet).LogFields()...)
			return
		}
		out = append(out, name)
	})
	return out
}

// walk calls field for each tagged field of the struct v (or of what the
// pointer v points to), in order, going into embedded structs; for names
// (Fields), into embedded pointers that are nil too, and a field of a
// pointer type is passed as its zero element.
func walk(v reflect.Value, names bool, field func(name string, v reflect.Value, omitEmpty bool)) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			if !names {
				return
			}
			v = reflect.New(v.Type().Elem()).Elem()
			continue
		}
		v = v.Elem()
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		fv := v.Field(i)
		if f.Anonymous && indirectKind(f.Type) == reflect.Struct && !f.Type.Implements(fieldSetType) {
			walk(fv, names, field)
			continue
		}
		tag, ok := f.Tag.Lookup("log")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for names && fv.Kind() == reflect.Pointer {
			fv = reflect.New(fv.Type().Elem()).Elem()
		}
		field(name, fv, opts == "omitempty")
	}
}

func indirectKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

var durationType = reflect.TypeFor[time.Duration]()

// attr is the field name holding v.
func attr(name string, v reflect.Value) slog.Attr {
	switch {
	case v.Type() == durationType:
		return slog.Duration(name, time.Duration(v.Int()))
	case v.CanInt():
		return slog.Int64(name, v.Int())
	case v.CanUint():
		return slog.Uint64(name, v.Uint())
	case v.CanFloat():
		return slog.Float64(name, v.Float())
	case v.Kind() == reflect.String:
		return slog.String(name, v.String())
	case v.Kind() == reflect.Bool:
		return slog.Bool(name, v.Bool())
	}
	return slog.Any(name, v.Interface())
}

// OfScript names the script a line is about by its content reference
// (sha256:<hex>), by which an operator fetches it from the store: the one
// name of that field in every line that names a script.
type OfScript struct {
	ScriptSHA256 string `log:"scriptSha256,omitempty"`
}

// Line describes a line the service writes, as a reader of its log
// selects and reads it: by its message (Cloud Logging's
// jsonPayload.message), its severity, and the values of its fields.
type Line struct {
	// Message is the line's message.
	Message string
	// Level is the least level the line is written at.
	Level slog.Level
	// Fields are the names of every field the line may carry besides its
	// message (and the request's trace and id, which every line of a
	// request carries); none for a line whose fields are no part of what
	// its readers may read.
	Fields []string
	// Values are the fields the line always carries with one value (the
	// name of an event), by name.
	Values map[string]string
}

// Describe describes the line written with message, at level or above,
// from values of proto's type, every one of which carries the string
// fields proto sets (an event's name). A nil proto describes a line whose
// fields are no part of what its readers may read.
func Describe(message string, level slog.Level, proto any) Line {
	l := Line{Message: message, Level: level}
	if proto == nil {
		return l
	}
	l.Fields = Fields(proto)
	for _, a := range Attrs(proto) {
		if a.Value.Kind() == slog.KindString && a.Value.String() != "" {
			if l.Values == nil {
				l.Values = map[string]string{}
			}
			l.Values[a.Key] = a.Value.String()
		}
	}
	return l
}
