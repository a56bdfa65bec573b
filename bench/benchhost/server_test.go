package benchhost

import "testing"

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
