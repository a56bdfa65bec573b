package benchhost

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A process's CPU is its user and system time, and apart its waited-for
// children's, counted from after the command name, which may hold spaces
// and parentheses.
func TestParseStat(t *testing.T) {
	// fields 3 to 17: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
	line := "4242 (sandbox (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 120 35 7 2 20 0 9 0\n"
	self, children, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if self != 120+35 || children != 7+2 {
		t.Errorf("ParseStat = %d, %d; want utime+stime 155, cutime+cstime 9", self, children)
	}
	for _, bad := range []string{
		"4242 sandbox S 1",                        // no name in parentheses
		"4242 (sandbox) S 1 4242 4242 0 -1",       // cut short
		"4242 (s) S 1 2 3 0 -1 0 0 0 0 0 x 1 1 1", // not a number
	} {
		if _, _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) did not fail", bad)
		}
	}
}

// A benchmark's server gets the bench's base environment and what the
// benchmark sets, never the caller's own variables: a STORE_URL or a limit
// left in the shell that runs the benchmark would change what it measures.
func TestStartServerPassesNoCallersVariables(t *testing.T) {
	t.Setenv("BENCHHOST_CANARY", "leaked")
	t.Setenv("MAX_CONCURRENT_EVALUATIONS", "7")
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	// a stand-in for the binary: it prints the environment it got and exits
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec env\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := StartServer(bin, filepath.Join(dir, "server.log"), "STORE_URL=none")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(http.DefaultClient); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("WaitReady on a server that exited: %v", err)
	}
	<-s.Exited()
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if _, ok := env["BENCHHOST_CANARY"]; ok {
		t.Error("the caller's BENCHHOST_CANARY reached the server")
	}
	if v, ok := env["MAX_CONCURRENT_EVALUATIONS"]; ok {
		t.Errorf("the caller's MAX_CONCURRENT_EVALUATIONS=%s reached the server", v)
	}
	if env["STORE_URL"] != "none" || env["PORT"] == "" || env["LOG_LEVEL"] != "info" || s.Base != "http://"+s.Addr || !strings.HasSuffix(s.Addr, ":"+env["PORT"]) {
		t.Errorf("the server got STORE_URL=%q PORT=%q LOG_LEVEL=%q, listening at %s (%s)", env["STORE_URL"], env["PORT"], env["LOG_LEVEL"], s.Addr, s.Base)
	}
}
