package benchhost

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/proctree"
)

// Server is the service's binary serving on a free loopback port, started
// by a benchmark (StartServer): the one way every benchmark starts the
// server it measures, waits for it, and stops it.
type Server struct {
	Cmd     *exec.Cmd
	Addr    string    // 127.0.0.1:PORT, where it listens
	Base    string    // http://127.0.0.1:PORT
	LogPath string    // its standard output and error
	Started time.Time // just before its process was started
	exited  chan struct{}
}

// StartServer starts bin's serve verb with BaseEnv, env after it, and PORT
// a free loopback port, its output to logPath. Nothing of the caller's own
// environment reaches the server but what BaseEnv keeps, so that only what
// a benchmark sets differs from the service's defaults.
func StartServer(bin, logPath string, env ...string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("a free loopback port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("the server's log: %w", err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(BaseEnv(), env...), "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = f, f
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{Cmd: cmd, Addr: addr, Base: "http://" + addr, LogPath: logPath, exited: make(chan struct{})}
	s.Started = time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	go func() { _ = cmd.Wait(); f.Close(); close(s.exited) }()
	return s, nil
}

// Exited is closed once the server's process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// WaitReady waits, at most a minute, for /readyz to answer 200.
func (s *Server) WaitReady(c *http.Client) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited; see %s", s.LogPath)
		default:
		}
		if resp, err := c.Get(s.Base + "/readyz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("the server was not ready within a minute; see %s", s.LogPath)
}

// Stop ends the server with SIGTERM (SIGKILL after 15 s).
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.Cmd.Process.Kill()
		<-s.exited
	}
}

// Kill ends the server at once (a benchmark that fails midway).
func (s *Server) Kill() { _ = s.Cmd.Process.Kill() }

// Post sends body to path and reads the whole answer, timed from the send
// to its last byte.
func (s *Server) Post(c *http.Client, path string, body []byte) (*http.Response, []byte, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, s.Base+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	t := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("POST %s: %w", path, err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("POST %s: reading the answer: %w", path, err)
	}
	return resp, data, d, nil
}

// Put stores a script in the directory store with the binary's put verb
// and returns its reference.
func Put(bin, store, script string) (string, error) {
	cmd := exec.Command(bin, "put", script)
	cmd.Env = append(BaseEnv(), "STORE_URL="+store)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("put %s: %w: %s", script, err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 1 || !strings.HasPrefix(f[0], "sha256:") {
		return "", fmt.Errorf("put %s: unexpected output %q", script, out)
	}
	return f[0], nil
}

// ClockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux the service runs on.
const ClockTick = 100

// CPU is CPU time in clock ticks: a server process's own, and that of its
// descendants (the worker processes).
type CPU struct{ Server, Workers int64 }

// TreeCPU is the CPU time, user and system, the server pid and its
// descendants have used. The children a process has waited for count with
// the descendants, so a worker that ended during a phase still counts.
func TreeCPU(pid int) (CPU, error) {
	self, children, err := procCPU(pid)
	if err != nil {
		return CPU{}, fmt.Errorf("the server's CPU: %w", err)
	}
	c := CPU{Server: self, Workers: children}
	for _, d := range proctree.Descendants(pid) {
		if self, children, err := procCPU(d); err == nil { // one that exits while read is left out
			c.Workers += self + children
		}
	}
	return c, nil
}

func procCPU(pid int) (self, children int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return ParseStat(data)
}

// ParseStat reads a /proc/PID/stat line: self is utime plus stime (fields
// 14 and 15, clock ticks), children cutime plus cstime (16 and 17, those of
// the children it has waited for). The command name, field 2, is in
// parentheses and may hold spaces and parentheses itself: the fields are
// counted from the last ')'.
func ParseStat(data []byte) (self, children int64, err error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("stat %.80q: no command name", data)
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field k is f[k-3]
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("stat %.80q: %d fields after the name", data, len(f))
	}
	var v [4]int64
	for k := 14; k <= 17; k++ {
		if v[k-14], err = strconv.ParseInt(f[k-3], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("stat field %d: %w", k, err)
		}
	}
	return v[0] + v[1], v[2] + v[3], nil
}
