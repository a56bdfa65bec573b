package api

import (
	"regexp"
	"strconv"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Info is the GET /v1/capabilities document: the SPI version, the backend's
// declaration (docs/spi.md, "Capabilities"), the service's own promises and limits, and the
// engine build.
type Info struct {
	SPIVersion   string
	Capabilities spi.Capabilities
	// Idempotent: a retried run gives the same outcome (no network, a fresh
	// engine per run).
	Idempotent bool
	// ScriptStore: POST /v1/evaluations and scriptRef are served.
	ScriptStore bool
	// Determinism: a request's determinism member makes its run
	// replayable (docs/spi.md, "Replayable runs").
	Determinism bool
	Limits      Limits
	Engine      Engine
	// Isolation, when not nil, is the "isolation" member.
	Isolation *Isolation
}

// Isolation is the "isolation" member of the capabilities document: which
// layers stand between a guest and the host beyond WebAssembly.
type Isolation struct {
	// Process: guests run in worker processes, never in the server.
	Process bool
	// EmptyEnvironment: a worker has no environment variables.
	EmptyEnvironment bool
	// NoNewPrivs: no_new_privs is set in a worker.
	NoNewPrivs bool
	// ResourceLimits: a worker's address space, open files, core dumps and
	// file sizes are limited, and it is not dumpable.
	ResourceLimits bool
	// Seccomp: a worker's system-call filter is installed.
	Seccomp bool
}

// isolationMembers are the members of the isolation object, in the order
// they are written.
func (i *Isolation) members() []struct {
	name string
	v    *bool
} {
	return []struct {
		name string
		v    *bool
	}{
		{"process", &i.Process}, {"emptyEnvironment", &i.EmptyEnvironment}, {"noNewPrivs", &i.NoNewPrivs},
		{"resourceLimits", &i.ResourceLimits}, {"seccomp", &i.Seccomp},
	}
}

// Limits are the service's limits. A member the decoder does not know is
// still readable in Raw, the whole object as received (nil when encoding).
type Limits struct {
	DefaultWallClock   time.Duration // defaultWallClockMs
	MaxWallClock       time.Duration // maxWallClockMs
	DefaultMemoryBytes int64         // defaultMemoryBytes
	MinMemoryBytes     int64         // minMemoryBytes
	MaxMemoryBytes     int64         // maxMemoryBytes
	MaxInputBytes      int64         // maxInputBytes
	MaxOutputBytes     int64         // maxOutputBytes
	MaxScriptBytes     int64         // maxScriptBytes
	MaxRequestBytes    int64         // maxRequestBytes
	MaxHeaderBytes     int64         // maxHeaderBytes
	MaxConcurrent      int64         // maxConcurrent
	MaxBatchItems      int64         // maxBatchItems
	RequestTimeout     time.Duration // requestTimeoutMs
	Raw                []byte
}

// Engine identifies the service's engine build.
type Engine struct {
	Name       string
	Version    string
	WasmSHA256 string
}

// AppendInfo writes the document after dst, its members in a fixed order.
func AppendInfo(dst []byte, in Info) []byte {
	str := func(name, v string) {
		dst = jsontext.AppendQuote(append(append(append(dst, '"'), name...), `":`...), v)
	}
	boolean := func(name string, v bool) {
		dst = strconv.AppendBool(append(append(append(dst, '"'), name...), `":`...), v)
	}
	num := func(name string, v int64) {
		dst = strconv.AppendInt(append(append(append(dst, '"'), name...), `":`...), v, 10)
	}
	c, l := in.Capabilities, in.Limits
	dst = append(dst, '{')
	str("spiVersion", in.SPIVersion)
	dst = append(dst, `,"capabilities":{`...)
	str("language", c.Language)
	dst = append(dst, ',')
	str("network", string(c.Network))
	dst = append(dst, ',')
	str("wallClock", string(c.WallClock))
	dst = append(dst, ',')
	boolean("memory", c.Memory)
	dst = append(dst, ',')
	boolean("cpu", c.CPU)
	dst = append(dst, ',')
	boolean("freshPerRun", c.FreshPerRun)
	dst = append(dst, "},"...)
	boolean("idempotent", in.Idempotent)
	dst = append(dst, ',')
	boolean("scriptStore", in.ScriptStore)
	dst = append(dst, ',')
	boolean("determinism", in.Determinism)
	dst = append(dst, `,"limits":{`...)
	for i, m := range []struct {
		name string
		v    int64
	}{
		{"defaultWallClockMs", l.DefaultWallClock.Milliseconds()}, {"maxWallClockMs", l.MaxWallClock.Milliseconds()},
		{"defaultMemoryBytes", l.DefaultMemoryBytes}, {"minMemoryBytes", l.MinMemoryBytes}, {"maxMemoryBytes", l.MaxMemoryBytes},
		{"maxInputBytes", l.MaxInputBytes}, {"maxOutputBytes", l.MaxOutputBytes}, {"maxScriptBytes", l.MaxScriptBytes},
		{"maxRequestBytes", l.MaxRequestBytes}, {"maxHeaderBytes", l.MaxHeaderBytes},
		{"maxConcurrent", l.MaxConcurrent}, {"requestTimeoutMs", l.RequestTimeout.Milliseconds()},
		{"maxBatchItems", l.MaxBatchItems},
	} {
		if i > 0 {
			dst = append(dst, ',')
		}
		num(m.name, m.v)
	}
	dst = append(dst, `},"engine":{`...)
	str("name", in.Engine.Name)
	dst = append(dst, ',')
	str("version", in.Engine.Version)
	dst = append(dst, ',')
	str("wasmSha256", in.Engine.WasmSHA256)
	dst = append(dst, '}')
	if in.Isolation != nil {
		dst = append(dst, `,"isolation":{`...)
		for i, m := range in.Isolation.members() {
			if i > 0 {
				dst = append(dst, ',')
			}
			boolean(m.name, *m.v)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// DecodeInfo reads the document. The declaration ("capabilities", the closed
// set of docs/spi.md, "Capabilities") and "engine" are read strictly: a member not known there
// is refused, because a capability a client cannot vouch for must not be
// dropped silently. The document itself and "limits" may carry members not
// known here: a later minor SPI version may add some, and none of them
// weakens the declaration. Whether the SPI version is one the reader
// implements is the reader's to decide.
func DecodeInfo(body []byte) (Info, error) {
	obj, err := jsontext.ParseObject("", body)
	if err != nil {
		return Info{}, err
	}
	var info Info
	info.SPIVersion, _ = obj.Str("spiVersion", true)
	if c, ok := obj.Child("capabilities", true); ok {
		caps := &info.Capabilities
		caps.Language = c.NonEmpty("language")
		if s, ok := c.Str("network", true); ok && c.OneOf("network", s, string(spi.NetworkNone), string(spi.NetworkAllowlist), string(spi.NetworkOpen)) {
			caps.Network = spi.Network(s)
		}
		if s, ok := c.Str("wallClock", true); ok && c.OneOf("wallClock", s, string(spi.WallClockHard), string(spi.WallClockSoft)) {
			caps.WallClock = spi.WallClock(s)
		}
		caps.Memory, _ = c.Bool("memory", true)
		caps.CPU, _ = c.Bool("cpu", true)
		caps.FreshPerRun, _ = c.Bool("freshPerRun", true)
		obj.Adopt(c.Done())
	}
	info.Idempotent, _ = obj.Bool("idempotent", false)
	info.ScriptStore, _ = obj.Bool("scriptStore", false)
	info.Determinism, _ = obj.Bool("determinism", false)
	if l, ok := obj.Child("limits", true); ok {
		lim := &info.Limits
		ms := func(key string) time.Duration {
			n, _ := l.Count(key, false)
			if n > int64(1<<63-1)/int64(time.Millisecond) {
				l.Fail(key, "is too large")
				return 0
			}
			return time.Duration(n) * time.Millisecond
		}
		lim.DefaultWallClock = ms("defaultWallClockMs")
		lim.MaxWallClock = ms("maxWallClockMs")
		lim.DefaultMemoryBytes, _ = l.Count("defaultMemoryBytes", false)
		lim.MinMemoryBytes, _ = l.Count("minMemoryBytes", false)
		lim.MaxMemoryBytes, _ = l.Count("maxMemoryBytes", false)
		lim.MaxInputBytes, _ = l.Count("maxInputBytes", false)
		lim.MaxOutputBytes, _ = l.Count("maxOutputBytes", false)
		lim.MaxScriptBytes, _ = l.Count("maxScriptBytes", false)
		lim.MaxRequestBytes, _ = l.Count("maxRequestBytes", false)
		lim.MaxHeaderBytes, _ = l.Count("maxHeaderBytes", false)
		lim.MaxConcurrent, _ = l.Count("maxConcurrent", false)
		lim.MaxBatchItems, _ = l.Count("maxBatchItems", false)
		lim.RequestTimeout = ms("requestTimeoutMs")
		l.Skip()
		raw, _ := obj.Take("limits", false)
		lim.Raw = append([]byte(nil), raw...)
		obj.Adopt(l.Done())
	}
	if e, ok := obj.Child("engine", true); ok {
		info.Engine.Name = e.NonEmpty("name")
		info.Engine.Version = e.NonEmpty("version")
		if s, ok := e.Str("wasmSha256", true); ok {
			if !sha256RE.MatchString(s) {
				e.Fail("wasmSha256", "must be 64 lowercase hex digits")
			}
			info.Engine.WasmSHA256 = s
		}
		obj.Adopt(e.Done())
	}
	if o, ok := obj.Child("isolation", false); ok {
		info.Isolation = &Isolation{}
		for _, m := range info.Isolation.members() {
			*m.v, _ = o.Bool(m.name, true)
		}
		obj.Adopt(o.Done())
	}
	obj.Skip()
	if err := obj.Done(); err != nil {
		return Info{}, err
	}
	return info, nil
}
