package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// proc is one worker process, from the server's side.
type proc struct {
	cmd  *exec.Cmd
	pid  int
	conn *os.File // the server's end of the channel
	prot Protections

	maxFrame int
	results  chan resultFrame // the reader delivers each result here
	readDone chan struct{}    // closed when the reader stops (EOF, error)
	readErr  error            // valid once readDone is closed
	exited   chan struct{}    // closed once the process has been waited for
	waitErr  error            // valid once exited is closed
	errDone  chan struct{}    // closed when its standard error is drained
	tail     tailBuffer       // the last lines of its standard error

	killed   atomic.Bool
	retiring atomic.Bool // the pool asked it to stop (Close)
	wbuf     []byte
	nextID   uint64
	// sentScript is the script of the last run frame sent (once sent is
	// set), which the worker keeps: a run of the same script names it
	// (appendRun)
	sentScript string
	sent       bool
	// compiled is what its engine's kept compiled scripts had done at its
	// last result (resultFrame.compiled)
	compiled quickjs.CompiledScriptStats
	// staged is the run sent ahead of its caller's call, if any
	staged *stagedRun
}

// spawn starts a worker, sends its hello and waits for its ready frame.
func spawn(ctx context.Context, path string, args []string, h hello, log *slog.Logger) (*proc, error) {
	fds, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("worker: socketpair: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("worker: socketpair: %w", err)
	}
	conn := os.NewFile(uintptr(fds[0]), "worker-channel")
	child := os.NewFile(uintptr(fds[1]), "worker-channel-child")
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.Close()
		child.Close()
		return nil, fmt.Errorf("worker: stderr pipe: %w", err)
	}

	cmd := exec.Command(path, args...)
	cmd.Env = []string{} // empty: no credentials, nothing of the server's
	cmd.Dir = "/"
	cmd.Stderr = errW
	cmd.ExtraFiles = []*os.File{child} // fd 3
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	// the child's ends are the child's alone: holding them would keep the
	// channel open after the child's end
	child.Close()
	errW.Close()
	if err != nil {
		conn.Close()
		errR.Close()
		return nil, fmt.Errorf("worker: start %s: %w", path, err)
	}
	p := &proc{
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		conn:     conn,
		maxFrame: maxDataFrame(h.Engine.MaxMemoryBytes),
		results:  make(chan resultFrame, 2),
		readDone: make(chan struct{}),
		exited:   make(chan struct{}),
		errDone:  make(chan struct{}),
	}
	go p.relayStderr(errR, log)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()

	fail := func(err error) (*proc, error) {
		p.kill()
		<-p.exited
		return nil, p.describeExit(err)
	}
	if err := sendControl(conn, frameHello, h); err != nil {
		return fail(fmt.Errorf("worker: sending hello: %w", err))
	}
	type readyOrErr struct {
		r   ready
		err error
	}
	got := make(chan readyOrErr, 1)
	go func() {
		var r ready
		err := receiveControl(conn, frameReady, &r)
		got <- readyOrErr{r, err}
	}()
	select {
	case g := <-got:
		if g.err != nil {
			return fail(fmt.Errorf("worker: waiting for ready: %w", g.err))
		}
		if g.r.Error != "" {
			return fail(fmt.Errorf("worker refused to start: %s", g.r.Error))
		}
		p.prot = g.r.Protections
	case <-ctx.Done():
		return fail(fmt.Errorf("worker: start-up: %w", ctx.Err()))
	}
	go p.read()
	return p, nil
}

// read delivers result frames until the channel ends.
func (p *proc) read() {
	defer close(p.readDone)
	var buf []byte
	limit := func(t frameType) int {
		if t == frameResult {
			return p.maxFrame
		}
		return maxControlFrame
	}
	// one read for a small frame's header and payload, not two
	r := bufio.NewReaderSize(p.conn, 64<<10)
	for {
		t, payload, err := readFrame(r, buf, limit)
		if err != nil {
			p.readErr = err
			return
		}
		buf = payload
		if t != frameResult {
			p.readErr = fmt.Errorf("worker: unexpected %v frame", t)
			return
		}
		var r resultFrame
		if err := r.parse(payload); err != nil {
			p.readErr = err
			return
		}
		select {
		case p.results <- r:
		default:
			p.readErr = errors.New("worker: a result nobody asked for")
			return
		}
	}
}

// sendCancel tells the worker to stop run id, or to skip it if it is
// queued and has not begun.
func (p *proc) sendCancel(id uint64) error {
	return sendFrame(p.conn, appendCancel(startFrame(nil, frameCancel), id))
}

// alive reports whether the worker can take a run.
func (p *proc) alive() bool {
	select {
	case <-p.readDone:
		return false
	case <-p.exited:
		return false
	default:
		return !p.killed.Load()
	}
}

// kill ends the worker at once (SIGKILL); the process is reaped by spawn's
// waiter.
func (p *proc) kill() {
	p.killed.Store(true)
	_ = p.cmd.Process.Kill()
	_ = p.conn.Close()
}

// retire ends an idle worker: closing its channel makes it exit; a worker
// that does not is killed at ctx's end, and retire reports false.
func (p *proc) retire(ctx context.Context) (stopped bool) {
	p.retiring.Store(true)
	_ = p.conn.Close()
	select {
	case <-p.exited:
		return true
	case <-ctx.Done():
		p.kill()
		<-p.exited
		return false
	}
}

// describeExit says how a dead worker ended: its exit status and the last
// lines of its standard error (the Go runtime's report of a crash, say).
func (p *proc) describeExit(cause error) error {
	select {
	case <-p.errDone:
	case <-time.After(200 * time.Millisecond):
	}
	msg := cause.Error()
	if p.waitErr != nil {
		msg += " (" + p.waitErr.Error() + ")"
	}
	if t := p.tail.String(); t != "" {
		msg += ": " + t
	}
	return errors.New(msg)
}

// relayStderr logs the worker's JSON log lines through the server's logger,
// at their level, and keeps the last lines for describeExit.
func (p *proc) relayStderr(r io.ReadCloser, log *slog.Logger) {
	defer close(p.errDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		p.tail.add(line)
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			log.Warn("worker output", "pid", p.pid, "line", line)
			continue
		}
		level := slog.LevelInfo
		if s, ok := rec["level"].(string); ok {
			_ = level.UnmarshalText([]byte(s))
		}
		msg, _ := rec["msg"].(string)
		attrs := []any{"pid", p.pid}
		for k, v := range rec {
			if k != "level" && k != "msg" && k != "time" {
				attrs = append(attrs, k, v)
			}
		}
		log.Log(context.Background(), level, "worker: "+msg, attrs...)
	}
	if sc.Err() != nil {
		_, _ = io.Copy(io.Discard, r) // an over-long line: keep draining
	}
}

// tailBuffer keeps the first line that is not a log record (the headline
// of a crash report: "fatal error: …", "SIGSEGV: …", "panic: …") and the
// last few lines.
type tailBuffer struct {
	mu       sync.Mutex
	headline string
	lines    []string
}

const tailLines, tailLineBytes = 8, 512

func (t *tailBuffer) add(line string) {
	if len(line) > tailLineBytes {
		line = line[:tailLineBytes] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.headline == "" && !strings.HasPrefix(line, "{") && strings.TrimSpace(line) != "" {
		t.headline = line
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := t.lines
	if t.headline != "" {
		parts = append([]string{t.headline, "…"}, parts...)
	}
	return strings.Join(parts, " | ")
}
