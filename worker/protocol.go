package worker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The channel between the server and a worker is a stream of frames: a
// 4-byte big-endian payload length, a 1-byte frame type, the payload.
//
//	server → worker   hello (once), run, cancel
//	worker → server   ready (once), result
//
// hello and ready are JSON (once per worker, off the request path); run,
// result and cancel are a compact binary encoding, since they are on a
// request's path and run and result carry script, input and value bytes
// exactly as they are (no escaping, no re-encoding: the guest gets the
// bytes the caller sent). Every frame is encoded and decoded in this file,
// for both sides.
type frameType byte

const (
	frameHello frameType = 1 + iota
	frameReady
	frameRun
	frameResult
	frameCancel
)

func (t frameType) String() string {
	switch t {
	case frameHello:
		return "hello"
	case frameReady:
		return "ready"
	case frameRun:
		return "run"
	case frameResult:
		return "result"
	case frameCancel:
		return "cancel"
	}
	return fmt.Sprintf("frame(%d)", byte(t))
}

const frameHeader = 5

// maxControlFrame bounds hello, ready and cancel frames.
const maxControlFrame = 64 << 10

// maxDataFrame bounds run and result frames for an engine whose memory
// maximum is maxMemory: a script and an input that fit in the guest's memory,
// or a value (at most spi.MaxValueBytes) and the capped console output
// that came out of it.
func maxDataFrame(maxMemory int64) int {
	return int(spi.MaxValueBytes(maxMemory)) + 1<<20
}

var errFrameTooLarge = errors.New("worker: frame too large")

// startFrame begins a frame of type t in buf: append the payload to the
// result, then send it with sendFrame.
func startFrame(buf []byte, t frameType) []byte {
	return append(buf[:0], 0, 0, 0, 0, byte(t))
}

// sendFrame fills in the length of a frame begun by startFrame and writes it
// in one write.
func sendFrame(w io.Writer, frame []byte) error {
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-frameHeader))
	_, err := w.Write(frame)
	return err
}

// writeFrame writes one frame with the given payload.
func writeFrame(w io.Writer, t frameType, payload []byte) error {
	return sendFrame(w, append(startFrame(nil, t), payload...))
}

// readFrame reads one frame into buf (grown as needed), refusing a payload
// over limit before reading it.
func readFrame(r io.Reader, buf []byte, limit func(frameType) int) (frameType, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, buf, err
	}
	n := int(binary.BigEndian.Uint32(h[:4]))
	t := frameType(h[4])
	if n > limit(t) {
		return t, buf, fmt.Errorf("%w: a %v frame of %d bytes, over its bound of %d", errFrameTooLarge, t, n, limit(t))
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return t, buf, err
	}
	return t, buf, nil
}

// hello is the server's first frame: everything the worker needs. A worker
// reads nothing else from its environment, which is empty.
type hello struct {
	Engine   EngineOptions `json:"engine"`
	Lockdown Lockdown      `json:"lockdown"`
	LogLevel string        `json:"logLevel"`
}

// ready is the worker's first frame: it is warm and locked down (or says
// why it is not starting).
type ready struct {
	Pid         int         `json:"pid"`
	Protections Protections `json:"protections"`
	Error       string      `json:"error,omitempty"`
}

// sendControl writes a hello or ready frame.
func sendControl(w io.Writer, t frameType, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: encoding a %v frame: %w", t, err)
	}
	return writeFrame(w, t, b)
}

// receiveControl reads the first frame of a channel, which must be a control
// frame of type want, into v.
func receiveControl(r io.Reader, want frameType, v any) error {
	t, payload, err := readFrame(r, nil, func(frameType) int { return maxControlFrame })
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("worker: want a %v frame, got %v", want, t)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("worker: a %v frame: %w", t, err)
	}
	return nil
}

// appendCancel appends the payload of a cancel frame: the run to stop.
func appendCancel(b []byte, id uint64) []byte { return binary.AppendUvarint(b, id) }

// parseCancel decodes the payload of a cancel frame.
func parseCancel(b []byte) (id uint64, err error) {
	d := decoder{b: b}
	id = d.uvarint()
	return id, d.end("cancel")
}

// runFrame is one evaluation, server → worker.
type runFrame struct {
	id     uint64
	script string
	input  string
	limits spi.Limits
	logs   bool
	// replay, when set, makes the run replayable
	replay *spi.Replay
}

// appendRun appends the payload of a run frame. sameScript says that the
// worker's last run frame carried this very script: the frame then says
// so instead of carrying the script again, which saves copying it through
// the channel and hashing it in the worker for every input of a batch.
func appendRun(b []byte, id uint64, req spi.RunRequest, sameScript bool) []byte {
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(req.Limits.WallClock))
	b = binary.AppendUvarint(b, uint64(req.Limits.MemoryBytes))
	b = appendBool(b, req.CaptureLogs)
	b = appendBool(b, req.Replay != nil)
	if r := req.Replay; r != nil {
		b = appendString(b, r.Seed)
		b = appendBool(b, !r.Now.IsZero()) // else the default instant
		if !r.Now.IsZero() {
			b = binary.AppendVarint(b, r.Now.UnixNano())
		}
	}
	b = appendBool(b, sameScript)
	if !sameScript {
		b = appendString(b, req.Script)
	}
	b = appendString(b, req.InputJSON)
	return b
}

// parse decodes b; last is the script of the last run frame parsed on the
// channel (nil before the first), which a frame may name instead of
// carrying its script again.
func (f *runFrame) parse(b []byte, last *string) error {
	d := decoder{b: b}
	f.id = d.uvarint()
	f.limits.WallClock = time.Duration(d.uvarint())
	f.limits.MemoryBytes = int64(d.uvarint())
	f.logs = d.bool()
	f.replay = nil
	if d.bool() {
		r := &spi.Replay{Seed: string(d.bytes())}
		if d.bool() {
			r.Now = time.Unix(0, d.varint()).UTC()
		}
		f.replay = r
	}
	if d.bool() {
		if last == nil && d.err == nil {
			d.err = errors.New("worker: a run frame names the last run's script, and there was none")
		}
		if last != nil {
			f.script = *last // the same string: the engine knows it at once
		}
	} else {
		f.script = string(d.bytes()) // copies: the frame's buffer is reused
	}
	f.input = string(d.bytes())
	return d.end("run")
}

// result statuses
const (
	resultOutcome   byte = iota // the run produced an outcome
	resultCancelled             // the caller cancelled (a cancel frame) and the run stopped
)

// resultFrame is what one evaluation gave, worker → server.
type resultFrame struct {
	id      uint64
	status  byte
	outcome spi.Outcome
	logs    string
	usage   spi.Usage
	// fault is the run's engine fault (spi.Report.EngineFault), if any
	fault string
	// retire: the worker cannot serve another run (its engine abandoned a
	// run still inside the guest) and exits after this frame.
	retire bool
	// compiled is what the worker's kept compiled scripts did so far, all
	// its runs together: the pool counts what each result adds
	compiled quickjs.CompiledScriptStats
}

func (f *resultFrame) append(b []byte) []byte {
	o := &f.outcome
	b = binary.AppendUvarint(b, f.id)
	b = append(b, f.status)
	b = appendBool(b, f.retire)
	b = appendBool(b, o.OK)
	b = appendBytes(b, []byte(o.Kind))
	b = appendBytes(b, []byte(o.Limit))
	b = appendBool(b, o.Name != nil)
	if o.Name != nil {
		b = appendBytes(b, []byte(*o.Name))
	}
	b = appendBytes(b, []byte(o.Message))
	b = appendBool(b, o.Value != nil)
	if o.Value != nil {
		b = appendBytes(b, o.Value)
	}
	b = appendString(b, f.logs)
	b = appendString(b, f.fault)
	u := &f.usage
	for _, v := range [...]uint64{uint64(u.Setup), uint64(u.Compile), uint64(u.Run), uint64(u.Serialise), uint64(u.CPU),
		u.CPUBudgetUsed, u.CPUBudget, uint64(u.PeakMemoryBytes), uint64(u.MemoryLimitBytes),
		f.compiled.Hits, f.compiled.Misses, f.compiled.Evictions} {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// parse decodes b; the outcome's byte fields are copies (b is reused).
func (f *resultFrame) parse(b []byte) error {
	d := decoder{b: b}
	f.id = d.uvarint()
	f.status = d.byte()
	f.retire = d.bool()
	o := spi.Outcome{}
	o.OK = d.bool()
	o.Kind = spi.OutcomeKind(d.bytes())
	o.Limit = spi.LimitKind(d.bytes())
	if d.bool() {
		n := string(d.bytes())
		o.Name = &n
	}
	o.Message = string(d.bytes())
	if d.bool() {
		o.Value = append([]byte{}, d.bytes()...)
	}
	f.outcome = o
	f.logs = string(d.bytes())
	f.fault = string(d.bytes())
	u := &f.usage
	u.Setup, u.Compile = time.Duration(d.uvarint()), time.Duration(d.uvarint())
	u.Run, u.Serialise, u.CPU = time.Duration(d.uvarint()), time.Duration(d.uvarint()), time.Duration(d.uvarint())
	u.CPUBudgetUsed, u.CPUBudget = d.uvarint(), d.uvarint()
	u.PeakMemoryBytes, u.MemoryLimitBytes = int64(d.uvarint()), int64(d.uvarint())
	f.compiled = quickjs.CompiledScriptStats{Hits: d.uvarint(), Misses: d.uvarint(), Evictions: d.uvarint()}
	return d.end("result")
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads the binary encoding; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("worker: truncated or malformed frame at %s", what)
	}
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("a number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("a number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("a byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("a flag")
	return false
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("a byte string")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("worker: %d bytes after the end of a %s frame", len(d.b), what)
	}
	return d.err
}
