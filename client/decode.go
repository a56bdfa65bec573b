package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
)

// object is one JSON object read strictly: each member is taken at most once
// with the kind it must have, and done reports the first problem, including a
// member nobody took. A duplicate key, another kind of value or trailing data
// is refused when the object is read.
type object struct {
	path string // for messages: "" for the top level, else "capabilities" etc.
	keys []string
	vals map[string]json.RawMessage
	used map[string]bool
	err  error
}

func parseObject(path string, data []byte) (*object, error) {
	o := &object{path: path, vals: map[string]json.RawMessage{}, used: map[string]bool{}}
	err := jsontext.Check(data, jsontext.Options{Value: func(p jsontext.Path, _ int, raw []byte) error {
		if len(p) == 1 && p[0].Index < 0 {
			o.keys = append(o.keys, p[0].Key)
			o.vals[p[0].Key] = raw
		}
		return nil
	}})
	var je *jsontext.Error
	switch {
	case errors.As(err, &je) && je.Kind == jsontext.KindDuplicateKey:
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
	q := strconv.Quote(effect.BoundText(key, 64))
	if path == "" {
		return q
	}
	return path + "." + q
}

func (o *object) fail(key, format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%s"+format, append([]any{at(join(o.path, key))}, args...)...)
	}
}

// take returns a member's raw value and marks it read; a required member that
// is absent is a problem.
func (o *object) take(key string, required bool) (json.RawMessage, bool) {
	raw, ok := o.vals[key]
	if !ok {
		if required {
			o.fail(key, "missing")
		}
		return nil, false
	}
	o.used[key] = true
	return raw, true
}

func kindOf(raw json.RawMessage) string {
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

func (o *object) str(key string, required bool) (string, bool) {
	raw, ok := o.take(key, required)
	if !ok {
		return "", false
	}
	if raw[0] != '"' {
		o.fail(key, "must be a string, got %s", kindOf(raw))
		return "", false
	}
	return jsontext.Unquote(raw), true
}

func (o *object) boolean(key string, required bool) (bool, bool) {
	raw, ok := o.take(key, required)
	if !ok {
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	o.fail(key, "must be a boolean, got %s", kindOf(raw))
	return false, false
}

// count reads a non-negative integer.
func (o *object) count(key string, required bool) (int64, bool) {
	raw, ok := o.take(key, required)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || raw[0] == '-' {
		o.fail(key, "must be a non-negative integer, got %s", effect.BoundText(string(raw), 32))
		return 0, false
	}
	return n, true
}

func (o *object) child(key string, required bool) (*object, bool) {
	raw, ok := o.take(key, required)
	if !ok {
		return nil, false
	}
	c, err := parseObject(join(o.path, key), raw)
	if err != nil {
		if o.err == nil {
			o.err = err
		}
		return nil, false
	}
	return c, true
}

// oneOf checks that a string read from key is one of the allowed values.
func (o *object) oneOf(key, s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	o.fail(key, "must be one of %s, got %s", strings.Join(allowed, ", "), strconv.Quote(effect.BoundText(s, 64)))
	return false
}

// done returns the first problem, or a member that nothing took.
func (o *object) done() error {
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

// skip marks every member read (for objects whose unknown members are
// tolerated).
func (o *object) skip() {
	for _, k := range o.keys {
		o.used[k] = true
	}
}

// outcomeFromBody decodes a 200 body of POST /v1/sandbox/evaluate. A body
// that is not exactly one outcome of ADR 0144 D2 becomes an infrastructure
// outcome that says what is wrong with it.
func outcomeFromBody(op string, body []byte) effect.Outcome {
	o, err := decodeOutcome(body)
	if err != nil {
		return effect.Infrastructure((&Error{Op: op, StatusCode: 200, Reason: "malformed outcome: " + err.Error()}).Error())
	}
	return o
}

// decodeOutcome reads one outcome in ADR 0144 D2's closed vocabulary, with no
// other members. A threw message may be empty (the script threw ""); an
// infrastructure message may not (effect.Outcome cannot tell an empty message
// from a missing one). The value is returned as the JSON text received.
func decodeOutcome(body []byte) (effect.Outcome, error) {
	obj, err := parseObject("", body)
	if err != nil {
		return effect.Outcome{}, err
	}
	ok, _ := obj.boolean("ok", true)
	var out effect.Outcome
	switch {
	case obj.err != nil:
	case ok:
		value, _ := obj.take("value", true)
		out = effect.OK(value)
	default:
		kind, _ := obj.str("kind", true)
		switch effect.OutcomeKind(kind) {
		case effect.KindLimit:
			limit, present := obj.str("limit", true)
			if present && obj.oneOf("limit", limit, string(effect.LimitCPU), string(effect.LimitMemory), string(effect.LimitWallClock)) {
				out = effect.LimitHit(effect.LimitKind(limit))
			}
		case effect.KindThrew:
			var name *string
			if n, present := obj.str("name", false); present {
				name = &n
			}
			message, _ := obj.str("message", true) // may be empty: `throw ""`
			out = effect.Threw(name, message)
		case effect.KindInputTooLarge:
			out = effect.InputTooLarge()
		case effect.KindInfrastructure:
			out = effect.Infrastructure(effect.BoundText(nonEmpty(obj, "message"), maxMessageUnits))
		default:
			if obj.err == nil {
				obj.oneOf("kind", kind, string(effect.KindLimit), string(effect.KindThrew), string(effect.KindInputTooLarge), string(effect.KindInfrastructure))
			}
		}
	}
	if err := obj.done(); err != nil {
		return effect.Outcome{}, err
	}
	return out, nil
}

// nonEmpty reads a required, non-empty string.
func nonEmpty(obj *object, key string) string {
	s, present := obj.str(key, true)
	if present && s == "" {
		obj.fail(key, "must not be empty")
	}
	return s
}

var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// major returns a semantic version's major number.
func major(v string) (string, bool) {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// decodeInfo reads GET /v1/capabilities. The declaration ("capabilities",
// ADR 0144 D4's closed set) and "engine" are read strictly: a member this
// client does not know there is refused, because a capability it cannot
// vouch for must not be dropped silently. The document itself and "limits"
// may carry members this client does not know (the service adds
// "idempotent" and "scriptStore", for example): a later minor SPI version may
// add some, and none of them weakens the declaration.
func decodeInfo(body []byte) (Info, error) {
	obj, err := parseObject("", body)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %w", ErrInvalidCapabilities, err)
	}
	var info Info
	info.SPIVersion, _ = obj.str("spiVersion", true)
	if c, ok := obj.child("capabilities", true); ok {
		caps := &info.Capabilities
		caps.Language = nonEmpty(c, "language")
		if s, ok := c.str("network", true); ok && c.oneOf("network", s, string(effect.NetworkNone), string(effect.NetworkAllowlist), string(effect.NetworkOpen)) {
			caps.Network = effect.Network(s)
		}
		if s, ok := c.str("wallClock", true); ok && c.oneOf("wallClock", s, string(effect.WallClockHard), string(effect.WallClockSoft)) {
			caps.WallClock = effect.WallClock(s)
		}
		caps.Memory, _ = c.boolean("memory", true)
		caps.CPU, _ = c.boolean("cpu", true)
		caps.FreshPerRun, _ = c.boolean("freshPerRun", true)
		if err := c.done(); err != nil && obj.err == nil {
			obj.err = err
		}
	}
	if l, ok := obj.child("limits", true); ok {
		lim := &info.Limits
		ms := func(key string) time.Duration {
			n, _ := l.count(key, false)
			if n > int64(1<<63-1)/int64(time.Millisecond) {
				l.fail(key, "is too large")
				return 0
			}
			return time.Duration(n) * time.Millisecond
		}
		lim.DefaultWallClock = ms("defaultWallClockMs")
		lim.MaxWallClock = ms("maxWallClockMs")
		lim.DefaultMemoryBytes, _ = l.count("defaultMemoryBytes", false)
		lim.MaxMemoryBytes, _ = l.count("maxMemoryBytes", false)
		lim.MaxInputBytes, _ = l.count("maxInputBytes", false)
		lim.MaxOutputBytes, _ = l.count("maxOutputBytes", false)
		lim.MaxScriptBytes, _ = l.count("maxScriptBytes", false)
		l.skip()
		lim.Raw = append([]byte(nil), obj.vals["limits"]...)
		if err := l.done(); err != nil && obj.err == nil {
			obj.err = err
		}
	}
	if e, ok := obj.child("engine", true); ok {
		info.Engine.Name = nonEmpty(e, "name")
		info.Engine.Version = nonEmpty(e, "version")
		if s, ok := e.str("wasmSha256", true); ok {
			if !sha256RE.MatchString(s) {
				e.fail("wasmSha256", "must be 64 lowercase hex digits")
			}
			info.Engine.WasmSHA256 = s
		}
		if err := e.done(); err != nil && obj.err == nil {
			obj.err = err
		}
	}
	obj.skip()
	if err := obj.done(); err != nil {
		return Info{}, fmt.Errorf("%w: %w", ErrInvalidCapabilities, err)
	}
	got, ok := major(info.SPIVersion)
	if !ok {
		return Info{}, fmt.Errorf("%w: spiVersion %s is not a semantic version", ErrInvalidCapabilities, strconv.Quote(effect.BoundText(info.SPIVersion, 64)))
	}
	want, _ := major(effect.SPIVersion)
	if got != want {
		return Info{}, fmt.Errorf("%w: the service implements %s, this client %s", ErrIncompatibleSPI, info.SPIVersion, effect.SPIVersion)
	}
	return info, nil
}
