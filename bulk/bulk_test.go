package bulk

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
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

// A file being written is never seen under its name until it is whole:
// before commit the old file stands, abort leaves it and no temporary
// file, commit replaces it.
func TestBulkDirectoryWriteIsAtomic(t *testing.T) {
	dir := t.TempDir()
	d := &dirPlace{path: dir}
	final := filepath.Join(dir, "shard.ndjson")
	if err := os.WriteFile(final, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, _ := os.ReadFile(final)
		return string(b)
	}
	ctx := context.Background()
	p, err := d.create(ctx, "shard.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte(strings.Repeat("new\n", 1<<18))) // past the buffer: some reaches the file
	if got := read(); got != "old\n" {
		t.Fatalf("while the new file is written, its name holds %d bytes, not the old file", len(got))
	}
	p.abort()
	if got := read(); got != "old\n" {
		t.Fatalf("after abort, %d bytes, not the old file", len(got))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("after abort the directory holds %v", entries)
	}
	p, err = d.create(ctx, "shard.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("new\n"))
	if err := p.commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "new\n" {
		t.Fatalf("after commit: %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("after commit the directory holds %v", entries)
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
