package contentstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// watchedStore counts the Gets and the Exists calls that reach a real
// store, and can fail, panic in or hold its Exists.
type watchedStore struct {
	Store
	gets, exists atomic.Int64
	fail         atomic.Pointer[error] // Exists fails with it while set
	panics       atomic.Bool           // Exists panics while set
	// gate, when set, holds Exists until it is closed or its context ends;
	// ended counts the calls the context ended.
	gate  chan struct{}
	ended atomic.Int64
}

func (w *watchedStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	w.gets.Add(1)
	return w.Store.Get(ctx, ref)
}

func (w *watchedStore) Exists(ctx context.Context, ref contentref.Ref) error {
	w.exists.Add(1)
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-ctx.Done():
			w.ended.Add(1)
			return fmt.Errorf("%w: %w", contentref.ErrUnavailable, ctx.Err())
		}
	}
	if w.panics.Load() {
		panic("the store's secret state")
	}
	if err := w.fail.Load(); err != nil {
		return *err
	}
	return w.Store.Exists(ctx, ref)
}

func (w *watchedStore) failWith(err error) {
	if err == nil {
		w.fail.Store(nil)
		return
	}
	w.fail.Store(&err)
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// getT is a Get that must return the script stored under ref.
func getT(t *testing.T, c *Cache, ref contentref.Ref, step string) {
	t.Helper()
	if got, err := c.Get(ctxT(t), ref); err != nil || !ref.Matches(got) {
		t.Fatalf("%s: Get = %q, %v; want the script", step, got, err)
	}
}

// Put, run, delete, run: a script deleted from a real directory runs from
// the cache, without a word to the store, until ConfirmAfter has passed
// since the store last found it; the next Get asks (a stat, not a read),
// fails as missing and drops the bytes. A confirmation that finds the
// script starts the bound again.
func TestCacheConfirmsPastTheBound(t *testing.T) {
	opts, _ := fastOpts(t)
	dir := newDirT(t, t.TempDir(), opts)
	store := &watchedStore{Store: dir}
	clk := newClock()
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: time.Minute, Logger: opts.Logger, Now: clk.Now})
	ref := putT(t, c, script)
	kept := putT(t, c, []byte("a script that stays"))

	getT(t, c, ref, "the first run")
	clk.advance(time.Minute - time.Nanosecond)
	getT(t, c, ref, "a run within the bound")
	if g, e := store.gets.Load(), store.exists.Load(); g != 1 || e != 0 {
		t.Fatalf("within the bound the store was asked: %d reads, %d confirmations; want 1, 0", g, e)
	}
	if err := os.Remove(dir.path(ref)); err != nil {
		t.Fatal(err)
	}
	getT(t, c, ref, "a run within the bound, after the delete")
	if g, e := store.gets.Load(), store.exists.Load(); g != 1 || e != 0 {
		t.Fatalf("within the bound the store was asked: %d reads, %d confirmations; want 1, 0", g, e)
	}

	clk.advance(time.Nanosecond)
	got, err := c.Get(ctxT(t), ref)
	if !errors.Is(err, contentref.ErrNotFound) || got != nil {
		t.Fatalf("a run at the bound, after the delete: Get = %q, %v; want nil, contentref.ErrNotFound", got, err)
	}
	if g, e := store.gets.Load(), store.exists.Load(); g != 1 || e != 1 {
		t.Errorf("at the bound: %d reads, %d confirmations; want 1, 1 (a stat, not a read)", g, e)
	}
	if n, _ := c.Len(); n != 0 {
		t.Errorf("the cache holds %d scripts after the store said the script is gone", n)
	}
	if _, err := c.Get(ctxT(t), ref); !errors.Is(err, contentref.ErrNotFound) || store.gets.Load() != 2 {
		t.Errorf("the next Get = %v after %d reads; want contentref.ErrNotFound from a read of the store", err, store.gets.Load())
	}

	// A script still there: confirmed at the bound, then served from memory
	// for another whole bound.
	getT(t, c, kept, "the other script's first run")
	clk.advance(time.Minute)
	exists := store.exists.Load()
	getT(t, c, kept, "the other script at the bound")
	if store.exists.Load() != exists+1 {
		t.Fatalf("the other script at the bound: %d confirmations, want 1", store.exists.Load()-exists)
	}
	clk.advance(time.Minute - time.Nanosecond)
	getT(t, c, kept, "the other script within the bound of its confirmation")
	if store.exists.Load() != exists+1 {
		t.Errorf("within the bound of a confirmation the store was asked again")
	}
	clk.advance(time.Nanosecond)
	getT(t, c, kept, "the other script at the bound of its confirmation")
	if store.exists.Load() != exists+2 {
		t.Errorf("at the bound of a confirmation the store was not asked")
	}
	if hits, misses := c.Stats(); hits != 5 || misses != 3 {
		t.Errorf("Stats = %d hits, %d misses; want 5, 3", hits, misses)
	}
}

// ConfirmAfter 0 asks the store at every Get served from memory: a script
// deleted between two Gets is missing at the second.
func TestCacheConfirmsEveryGetAtZero(t *testing.T) {
	opts, _ := fastOpts(t)
	dir := newDirT(t, t.TempDir(), opts)
	store := &watchedStore{Store: dir}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: 0, Logger: opts.Logger})
	ref := putT(t, c, script)
	for i := range 3 {
		getT(t, c, ref, fmt.Sprintf("run %d", i+1))
	}
	if g, e := store.gets.Load(), store.exists.Load(); g != 1 || e != 2 {
		t.Errorf("3 runs: %d reads, %d confirmations; want 1, 2", g, e)
	}
	if err := os.Remove(dir.path(ref)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctxT(t), ref); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("the run right after the delete: %v, want contentref.ErrNotFound", err)
	}
}

// A script whose confirmation fails is not returned, whatever the failure:
// the store's error (for the effect to classify; an unavailable store is
// retryable), or ErrPanicked for a panic. Its bytes stay held, and the next
// Get whose confirmation succeeds returns them.
func TestCacheUnconfirmedScriptIsNotReturned(t *testing.T) {
	opts, logs := fastOpts(t)
	store := &watchedStore{Store: newDirT(t, t.TempDir(), opts)}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: 0, Logger: opts.Logger})
	ref := putT(t, c, script)
	getT(t, c, ref, "the first run")

	for _, tc := range []struct {
		name  string
		fail  error
		panic bool
		want  error
	}{
		{name: "unavailable", fail: fmt.Errorf("%w: gs://b/sha256/…: giving up after 5 attempt(s): 503", contentref.ErrUnavailable), want: contentref.ErrUnavailable},
		{name: "refused", fail: fmt.Errorf("%w: 403", contentref.ErrPermission), want: contentref.ErrPermission},
		{name: "broken", fail: errors.New("the metadata is not JSON"), want: nil},
		{name: "panic", panic: true, want: contentref.ErrPanicked},
	} {
		store.failWith(tc.fail)
		store.panics.Store(tc.panic)
		got, err := c.Get(ctxT(t), ref)
		if err == nil || got != nil || errors.Is(err, contentref.ErrNotFound) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Get = %q, %v; want nil and an error that is %v", tc.name, got, err, tc.want)
		}
		if n, _ := c.Len(); n != 1 {
			t.Errorf("%s: the cache dropped the script's bytes", tc.name)
		}
	}
	if !bytes.Contains([]byte(logs.String()), []byte("the store panicked confirming a script")) {
		t.Errorf("the panic is not logged:\n%s", logs)
	}
	store.failWith(nil)
	store.panics.Store(false)
	getT(t, c, ref, "once the store answers")
	if g := store.gets.Load(); g != 1 {
		t.Errorf("%d reads of the store, want 1: the bytes were kept", g)
	}
}

// Concurrent Gets of a script due for confirmation share one: eight runs,
// one question to the store.
func TestCacheOneConfirmationInFlight(t *testing.T) {
	opts, _ := fastOpts(t)
	store := &watchedStore{Store: newDirT(t, t.TempDir(), opts)}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: 0, Logger: opts.Logger})
	ref := putT(t, c, script)
	getT(t, c, ref, "the first run")
	store.gate = make(chan struct{})

	const readers = 8
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			got, err := c.Get(ctxT(t), ref)
			if err == nil && !bytes.Equal(got, script) {
				err = errors.New("wrong bytes")
			}
			errs <- err
		})
	}
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		f := c.confirming[ref]
		return f != nil && f.waiters == readers
	})
	close(store.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := store.exists.Load(); n != 1 {
		t.Errorf("%d confirmations for %d concurrent runs, want 1", n, readers)
	}
}

// A confirmation ends with its callers' patience: a store that does not
// answer fails the Get at the caller's deadline (ErrUnavailable, with the
// deadline), the question to the store is cancelled once nobody waits for
// it, and the bytes stay held for a later confirmation.
func TestCacheConfirmationEndsWithItsCallers(t *testing.T) {
	opts, _ := fastOpts(t)
	store := &watchedStore{Store: newDirT(t, t.TempDir(), opts)}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: 0, Logger: opts.Logger})
	ref := putT(t, c, script)
	getT(t, c, ref, "the first run")
	store.gate = make(chan struct{}) // never opened

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	got, err := c.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("Get from a store that does not answer = %q, %v; want nil, ErrUnavailable with the deadline", got, err)
	}
	waitFor(t, func() bool { return store.ended.Load() == 1 })
	if n, _ := c.Len(); n != 1 {
		t.Errorf("the cache dropped the bytes of a script it could not confirm")
	}
}
