package worker

import (
	"log/slog"
	"os"
	"syscall"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

// residentExecutable is how much of this process's executable is resident,
// over the mappings releaseExecutablePages would release.
func residentExecutable(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range executableMappings(b, exe) {
		n += m.rss
	}
	return n
}

// Releasing drops the resident pages of the executable's read-only
// mappings, and the process runs on (they come back from the page cache).
func TestReleaseExecutablePages(t *testing.T) {
	// A freshly linked test binary's pages are dirty in the page cache
	// until written back, and only clean pages are released (a deployed
	// image's are).
	syscall.Sync()
	before := residentExecutable(t)
	released, err := releaseExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	after := residentExecutable(t)
	t.Logf("resident: %d KiB before, %d KiB after; %d KiB released", before>>10, after>>10, released>>10)
	if released == 0 || after*2 > before {
		t.Fatalf("resident %d KiB before and %d KiB after releasing (%d KiB released): the pages were not released",
			before>>10, after>>10, released>>10)
	}
}

// A worker releases its start-up pages before it serves.
func TestWorkerReleasesItsStartUpPages(t *testing.T) {
	syscall.Sync()
	var logs servicetest.Logs
	p := newPool(t, func(o *Options) {
		o.Spares = 0
		o.LogLevel = "debug"
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if got := describe(run(t, p, `input.n + 1`, `{"n":41}`, generous)); got != "ok 42" {
		t.Fatalf("a run in the worker: %s", got)
	}
	lines := logs.Lines("worker: released the executable's start-up pages")
	if len(lines) == 0 {
		t.Fatalf("the worker did not say it released its start-up pages; its log:\n%s", logs.String())
	}
	if n, _ := lines[0]["bytes"].(float64); n <= 0 {
		t.Fatalf("the worker released %v bytes", lines[0]["bytes"])
	}
}

func TestExecutableMappings(t *testing.T) {
	const exe = "/srv/sandbox"
	smaps := `00400000-01458000 r-xp 00000000 08:01 1234 /srv/sandbox
Size:              16736 kB
Rss:               14048 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
01458000-02ac0000 r--p 01058000 08:01 1234 /srv/sandbox
Rss:                 100 kB
Private_Dirty:         4 kB
02ac0000-02c39000 rw-p 026c0000 08:01 1234 /srv/sandbox
Rss:                1508 kB
Private_Dirty:         0 kB
02c39000-02c40000 r--p 00000000 08:01 99 /usr/lib/libc.so.6
Rss:                  28 kB
7fa508067000-7fa50838c000 rw-p 00000000 00:00 0
Rss:                3220 kB
Anonymous:          3220 kB
03000000-03001000 r--p 00000000 08:01 1234 /srv/sandbox
Rss:                   4 kB
Shared_Dirty:          4 kB
`
	got := executableMappings([]byte(smaps), exe)
	// only the clean, read-only mapping of the executable: the written
	// one, the writable one, another file's and anonymous memory are kept
	if len(got) != 1 || got[0].start != 0x400000 || got[0].end != 0x1458000 || got[0].rss != 14048<<10 {
		t.Fatalf("got %+v, want the text mapping 0x400000-0x1458000 with 14048 KiB resident", got)
	}
}
