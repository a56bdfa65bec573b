package bulk

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An input not run says what stopped the task: the signal the binary's
// context received (signal.NotifyContext, as main sets it up), SIGINT for
// a Ctrl-C as SIGTERM for Cloud Run's stop, or else a neutral word.
func TestBulkNotRunSaysWhatStoppedTheTask(t *testing.T) {
	const tail = " before this input's run ended; it was not answered, and the task run again runs it as if for the first time"
	for _, tc := range []struct {
		sig  os.Signal
		want string
	}{
		{os.Interrupt, "the task was interrupted (SIGINT)"},
		{syscall.SIGTERM, "the task received SIGTERM (its timeout passed, or the execution was cancelled)"},
	} {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		self, err := os.FindProcess(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if err := self.Signal(tc.sig); err != nil {
			stop()
			t.Skipf("cannot signal this process: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute): // delivered at once; a minute leaves a busy machine room
			t.Fatalf("%v was not delivered", tc.sig)
		}
		got := notRunDetail(ctx)
		stop()
		if got != tc.want+tail {
			t.Errorf("after %v: %q, want %q", tc.sig, got, tc.want+tail)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := notRunDetail(ctx); got != "the task was stopped"+tail {
		t.Errorf("cancelled: %q", got)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	if got := notRunDetail(ctx); !strings.HasPrefix(got, "the task's deadline passed before") {
		t.Errorf("past its deadline: %q", got)
	}
}
