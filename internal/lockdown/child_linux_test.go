//go:build linux

package lockdown_test

// The probe child: the test binary re-executed with childArg. It builds a
// real engine as the worker does, warms it, optionally calls Apply, runs
// evaluations and tries the refused calls, and writes a childReport as JSON
// on stdout.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const childArg = "lockdown-test-child"

// strace's trace is read from this marker on (tools: see the allowlist).
const straceMarker = "LOCKDOWN-TEST-MARK"

type childConfig struct {
	Apply   bool             `json:"apply"`
	Options lockdown.Options `json:"options"`
	// Memories, if set, makes the child set Options.AddressSpaceBytes to
	// lockdown.AddressSpaceFor for that many linear memories, as computed
	// by its own build (none in a race build).
	Memories int `json:"memories"`
	// Rounds is how many times the evaluation set runs (0: none).
	Rounds int `json:"rounds"`
	// Probes tries the refused (and some allowed) calls.
	Probes bool `json:"probes"`
	// Dir holds "existing" and "victim", and is where files are created.
	Dir string `json:"dir"`
	// DialAddr is a TCP listener of the parent's.
	DialAddr string `json:"dialAddr"`
	// CacheDir is the engine's compilation cache.
	CacheDir string `json:"cacheDir"`
	// KillTimer runs a native runaway under the process-kill timer and waits
	// to be killed.
	KillTimer bool `json:"killTimer"`
	// Marker writes straceMarker to stderr where Apply is (or would be).
	Marker bool `json:"marker"`
	// Socket exchanges a line with the parent over fd 3 after Apply.
	Socket bool `json:"socket"`
	// trace, for the parent: run the child under strace -f, writing here.
	trace string
	// binary, for the parent: the test binary to run as the child, if not
	// this one.
	binary string
}

type evalResult struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Got  string `json:"got"`
}

type childReport struct {
	ApplyErr       string            `json:"applyErr,omitempty"`
	Options        lockdown.Options  `json:"options"` // as applied
	Status         lockdown.Status   `json:"status"`
	SecondApplyErr string            `json:"secondApplyErr,omitempty"`
	Evals          []evalResult      `json:"evals"`
	Probes         map[string]string `json:"probes"`
	Limits         string            `json:"limits"`
	Threads        []string          `json:"threads"` // Seccomp and NoNewPrivs of each thread alive at Apply
	Socket         string            `json:"socket"`
	VmPeak         uint64            `json:"vmPeak"`
	VmSize         uint64            `json:"vmSize"`
	VmHWM          uint64            `json:"vmHWM"`
	Memories       int               `json:"memories"` // most linear memories mapped at once, sampled
	Cgo            bool              `json:"cgo"`
	Race           bool              `json:"race"`
}

// procFile is a /proc file opened before Apply and read, from its start,
// after it (pread64 is allowed; openat is not).
type procFile struct{ fd int }

func openProc(path string) (procFile, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	return procFile{fd}, err
}

func (p procFile) read() (string, error) {
	buf := make([]byte, 256<<10)
	n, err := syscall.Pread(p.fd, buf, 0)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func field(text, name string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func kB(text, name string) uint64 {
	v, _ := strconv.ParseUint(strings.TrimSuffix(field(text, name), " kB"), 10, 64)
	return v << 10
}

// memoriesMapped counts the guests' linear memories in /proc/self/maps:
// each is one mapping of exactly size bytes, but adjacent ones show as one
// (the kernel merges mappings of the same kind), so a multiple counts as
// that many.
func memoriesMapped(maps string, size uint64) int {
	n := 0
	for _, line := range strings.Split(maps, "\n") {
		r, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && (b-a)%size == 0 && strings.Contains(line, " rw-p 00000000 00:00 0") {
			n += int((b - a) / size)
		}
	}
	return n
}

func runChild(arg string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(arg), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child: config:", err)
		return 2
	}
	rep := childReport{Probes: map[string]string{}, Cgo: cgoEnabled, Race: raceEnabled}
	if cfg.Memories > 0 && !raceEnabled {
		cfg.Options.AddressSpaceBytes = lockdown.AddressSpaceFor(quickjs.LinearMemoryBytes(testMaxMemory), cfg.Memories)
	}
	rep.Options = cfg.Options
	ctx := context.Background()

	// The worker's start-up: everything that needs the outside world.
	opts := []quickjs.Option{
		quickjs.WithMaxMemoryBytes(testMaxMemory),
		quickjs.WithPoolSize(2),
		quickjs.WithProcessKill(true),
		quickjs.WithCPUBudget(testCPUBudget),
	}
	if cfg.CacheDir != "" {
		opts = append(opts, quickjs.WithCompilationCache(cfg.CacheDir))
	}
	// The kill timer fires at a run's deadline + 2 × grace: soon in the
	// test of it, and otherwise late enough that a busy machine's stalls
	// never reach it.
	grace := 10 * time.Second
	if cfg.KillTimer {
		grace = 50 * time.Millisecond
	}
	opts = append(opts, quickjs.WithHardKill(quickjs.HardKillWatchdog, grace))
	e, err := quickjs.New(ctx, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: engine:", err)
		return 2
	}
	if err := e.Warm(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child: warm:", err)
		return 2
	}
	var server *os.File
	if cfg.Socket {
		// as the worker would: non-blocking, so that reads park in the
		// netpoller (whose epoll instance is created here, before Apply)
		if err := syscall.SetNonblock(3, true); err != nil {
			fmt.Fprintln(os.Stderr, "child: fd 3:", err)
			return 2
		}
		server = os.NewFile(3, "server")
	}
	limitsFile, err1 := openProc("/proc/self/limits")
	statusFile, err2 := openProc("/proc/self/status")
	mapsFile, err3 := openProc("/proc/self/maps")
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintln(os.Stderr, "child: /proc:", err)
		return 2
	}
	threads := openThreads()

	_ = time.Local.String() // as Apply does, so that the trace without Apply matches
	if cfg.Marker {
		_, _ = syscall.Write(2, []byte(straceMarker+"\n"))
	}
	if cfg.Apply {
		st, err := lockdown.Apply(cfg.Options)
		rep.Status = st
		if err != nil {
			rep.ApplyErr = err.Error() // and on, to show what still works
		} else if _, err := lockdown.Apply(cfg.Options); err != nil {
			rep.SecondApplyErr = err.Error()
		}
	}
	for _, t := range threads {
		text, err := t.read()
		if err != nil {
			rep.Threads = append(rep.Threads, "read: "+err.Error())
			continue
		}
		rep.Threads = append(rep.Threads, fmt.Sprintf("Seccomp:%s NoNewPrivs:%s", field(text, "Seccomp"), field(text, "NoNewPrivs")))
	}

	if cfg.KillTimer {
		fmt.Println("armed") // the parent expects SIGKILL after this
		_, _ = e.Evaluate(ctx, spi.Request{Script: nativeRunaway, InputJSON: "null",
			Limits: spi.Limits{WallClock: 100 * time.Millisecond, MemoryBytes: 128 << 20}})
		time.Sleep(time.Minute)
		fmt.Println("not killed")
		return 3
	}

	stopSampling := sampleMemories(mapsFile, &rep.Memories)
	for i := 0; i < cfg.Rounds; i++ {
		rep.Evals = append(rep.Evals, runEvals(e)...)
		churn()
	}
	stopSampling()
	if cfg.Socket {
		rep.Socket = exchange(server)
	}
	if cfg.Probes {
		for _, p := range probes(cfg) {
			if p.control == "skip" && !rep.Status.Seccomp { // it would really happen
				continue
			}
			rep.Probes[p.name] = outcome(p.run())
		}
	}
	if text, err := limitsFile.read(); err == nil {
		rep.Limits = text
	} else {
		rep.Limits = "read: " + err.Error()
	}
	if text, err := statusFile.read(); err == nil {
		rep.VmPeak, rep.VmSize, rep.VmHWM = kB(text, "VmPeak"), kB(text, "VmSize"), kB(text, "VmHWM")
	}
	return writeReport(rep)
}

// sampleMemories records in *most the most linear memories mapped at once,
// reading maps every few milliseconds until the returned function is called.
func sampleMemories(maps procFile, most *int) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if text, err := maps.read(); err == nil {
				*most = max(*most, memoriesMapped(text, reservation))
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

func writeReport(rep childReport) int {
	b, err := json.Marshal(rep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: report:", err)
		return 2
	}
	b = append(b, '\n')
	if _, err := os.Stdout.Write(b); err != nil {
		return 2
	}
	return 0
}

// openThreads opens the status file of every thread alive now.
func openThreads() []procFile {
	d, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var files []procFile
	for _, t := range d {
		if f, err := openProc("/proc/self/task/" + t.Name() + "/status"); err == nil {
			files = append(files, f)
		}
	}
	return files
}

// churn makes garbage and collects it, so that the runtime's allocator,
// scavenger and collector all run under the filter.
func churn() {
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 1<<20)
		b[i] = byte(i)
		if i%8 == 0 {
			keep = append(keep, b)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	runtime.KeepAlive(keep)
}

// exchange writes a line to the parent over fd 3 and reads its answer.
func exchange(f *os.File) string {
	if _, err := f.Write([]byte("ping\n")); err != nil {
		return "write: " + err.Error()
	}
	_ = f.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 64)
	var got []byte
	for !bytes.Contains(got, []byte("\n")) {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil && err != io.EOF {
			return "read: " + err.Error()
		}
		if err == io.EOF {
			break
		}
	}
	return strings.TrimSpace(string(got))
}

// outcome names an error: "ok", an errno's name, or the error's text.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if name := errnoName(en); name != "" {
			return name
		}
		return fmt.Sprintf("errno %d", int(en))
	}
	return err.Error()
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EBADF:
		return "EBADF"
	case syscall.EFAULT:
		return "EFAULT"
	case syscall.ESRCH:
		return "ESRCH"
	case syscall.ECHILD:
		return "ECHILD"
	case syscall.ENOTTY:
		return "ENOTTY"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	case syscall.EMFILE:
		return "EMFILE"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.E2BIG:
		return "E2BIG"
	}
	return ""
}
