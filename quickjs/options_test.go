package quickjs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// A guest's linear memory reserves the maximum memory limit and the fixed
// headroom, in whole wasm pages: the figure a worker's address-space limit
// is built from (internal/lockdown.AddressSpaceFor).
func TestLinearMemoryBytes(t *testing.T) {
	if got := quickjs.LinearMemoryBytes(256 << 20); got != 320<<20 {
		t.Errorf("LinearMemoryBytes(256 MiB) = %d, want 320 MiB", got)
	}
	if got := quickjs.LinearMemoryBytes(1<<20 + 1); got != 65<<20+64<<10 {
		t.Errorf("LinearMemoryBytes(1 MiB + 1) = %d, want rounded up to a wasm page", got)
	}
}

// New names every option out of its range at once, with the ranges a
// service checks its configuration against (the Check functions).
func TestNewReportsEveryInvalidOption(t *testing.T) {
	_, err := quickjs.New(context.Background(), quickjs.WithMaxMemoryBytes(4<<30), quickjs.WithPoolSize(-1),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, 2*time.Minute))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"quickjs: max memory " + quickjs.CheckMaxMemoryBytes(4<<30).Error(),
		"quickjs: pool size " + quickjs.CheckPoolSize(-1).Error(),
		"quickjs: hard-kill grace " + quickjs.CheckHardKillGrace(2*time.Minute).Error(),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	for _, err := range []error{quickjs.CheckMaxMemoryBytes(1 << 20), quickjs.CheckMaxMemoryBytes(2 << 30), quickjs.CheckPoolSize(0),
		quickjs.CheckPoolSize(64), quickjs.CheckHardKillGrace(time.Minute)} {
		if err != nil {
			t.Errorf("a setting at the edge of its range refused: %v", err)
		}
	}
	for _, err := range []error{quickjs.CheckMaxMemoryBytes(1<<20 - 1), quickjs.CheckPoolSize(65), quickjs.CheckHardKillGrace(0)} {
		if err == nil {
			t.Error("a setting just outside its range accepted")
		}
	}
}
