package bulk

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// The tasks' ranges cover every index once, in order, each shard within
// one of the others' size, whatever the total and the count.
func TestBulkRangesPartition(t *testing.T) {
	for _, total := range []int64{0, 1, 2, 7, 25, 1000, 1<<40 + 3} {
		for _, count := range []int{1, 2, 3, 7, 64, 10000} {
			var next, least, most int64 = 0, -1, 0
			for k := range count {
				s, e := Task{Index: k, Count: count}.Range(total)
				if s != next || e < s {
					t.Fatalf("total %d, task %d of %d: [%d, %d), want it to begin at %d", total, k, count, s, e, next)
				}
				if least < 0 || e-s < least {
					least = e - s
				}
				most = max(most, e-s)
				next = e
			}
			if next != total || most-least > 1 {
				t.Errorf("total %d over %d tasks: covered [0, %d), sizes %d to %d", total, count, next, least, most)
			}
		}
	}
}

// Lines end at \n or \r\n or the end; a kept line over the bound is an
// error, a skipped one is not held.
func TestBulkReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("{\"a\":1}\r\n"+strings.Repeat("x", 100)+"\n[2]"), 16)
	var got []string
	for _, keep := range []bool{true, false, true} {
		l, err := readLine(br, keep, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l))
	}
	if strings.Join(got, "|") != `{"a":1}||[2]` {
		t.Errorf("lines %q", got)
	}
	if _, err := readLine(br, true, 10); !errors.Is(err, io.EOF) {
		t.Errorf("at the end: %v", err)
	}
	br = bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\n"), 16)
	if _, err := readLine(br, true, 10); !errors.Is(err, errLineTooLong) {
		t.Errorf("a line over the bound: %v", err)
	}
}
