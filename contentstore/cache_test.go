package contentstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// countingStore counts the Gets that reach a real store and can hold them
// at a gate.
type countingStore struct {
	Store
	gets atomic.Int64
	gate chan struct{} // nil: no waiting
}

func (c *countingStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	c.gets.Add(1)
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Store.Get(ctx, ref)
}

// lyingStore returns bytes that do not match the reference, as a broken
// Store implementation would.
type lyingStore struct {
	Store
	gets atomic.Int64
}

func (l *lyingStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	l.gets.Add(1)
	return []byte("not the script"), nil
}

// panickyStore panics in Get, after holding it at gate when gate is set.
type panickyStore struct {
	Store
	gets atomic.Int64
	gate chan struct{}
}

func (p *panickyStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if p.gets.Add(1) == 1 {
		if p.gate != nil {
			<-p.gate
		}
		panic("the store's secret state")
	}
	return p.Store.Get(ctx, ref)
}

func memT(t *testing.T) *MemStore {
	t.Helper()
	opts, _ := fastOpts(t)
	s, err := NewMemStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putT(t *testing.T, s Store, data []byte) contentref.Ref {
	t.Helper()
	ref, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestCacheEvictsByBytes(t *testing.T) {
	store := &countingStore{Store: memT(t)}
	c := NewCache(store, CacheOptions{MaxBytes: 100, ConfirmAfter: DefaultConfirmAfter})
	ctx := ctxT(t)
	a := putT(t, c, bytes.Repeat([]byte("a"), 40))
	b := putT(t, c, bytes.Repeat([]byte("b"), 40))
	d := putT(t, c, bytes.Repeat([]byte("d"), 40))
	huge := putT(t, c, bytes.Repeat([]byte("h"), 101))

	get := func(ref contentref.Ref) {
		t.Helper()
		if _, err := c.Get(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	get(a)
	get(b) // 80 bytes held
	get(a) // hit; b is now the least recently used
	get(d) // 120 > 100: b goes
	if n, size := c.Len(); n != 2 || size != 80 {
		t.Errorf("Len = %d scripts, %d bytes; want 2, 80", n, size)
	}
	before := store.gets.Load()
	get(a)
	get(d)
	if store.gets.Load() != before {
		t.Errorf("a and d should be cached")
	}
	get(b)
	if store.gets.Load() != before+1 {
		t.Errorf("b should have been evicted and fetched again")
	}
	// Over the whole budget: served, never kept, nothing evicted for it.
	get(huge)
	get(huge)
	if n, size := c.Len(); n != 2 || size != 80 {
		t.Errorf("after the oversized script, Len = %d, %d; want 2, 80", n, size)
	}
	hits, misses := c.Stats()
	if hits != 3 || misses != 6 {
		t.Errorf("Stats = %d hits, %d misses; want 3, 6", hits, misses)
	}
}

func TestCacheSingleFetchForConcurrentReaders(t *testing.T) {
	store := &countingStore{Store: memT(t), gate: make(chan struct{})}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter})
	ref := putT(t, c, script)
	ctx := ctxT(t)

	const readers = 8
	var wg sync.WaitGroup
	results := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			got, err := c.Get(ctx, ref)
			if err == nil && !bytes.Equal(got, script) {
				err = errors.New("wrong bytes")
			}
			results <- err
		})
	}
	// Open the gate once every reader is waiting for the one fetch.
	waitFor(t, func() bool { _, m := c.Stats(); return m == readers })
	close(store.gate)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Error(err)
		}
	}
	if n := store.gets.Load(); n != 1 {
		t.Errorf("%d fetches for %d concurrent readers, want 1", n, readers)
	}
	if _, err := c.Get(ctx, ref); err != nil || store.gets.Load() != 1 {
		t.Errorf("the next Get should be a hit: %v, %d fetches", err, store.gets.Load())
	}
}

func TestCacheNoEntryAfterFailedVerification(t *testing.T) {
	opts, _ := fastOpts(t)
	dir := newDirT(t, t.TempDir(), opts)
	store := &countingStore{Store: dir}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter, Logger: opts.Logger})
	ctx := ctxT(t)
	ref := putT(t, c, script)

	// Tampered on disk: the store refuses it, the cache keeps nothing.
	p := dir.path(ref)
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, ref); !errors.Is(err, contentref.ErrIntegrity) {
		t.Fatalf("Get = %v, want contentref.ErrIntegrity", err)
	}
	if n, _ := c.Len(); n != 0 {
		t.Fatalf("the cache kept %d entries after a failed verification", n)
	}
	// Repaired: the next Get fetches again and succeeds.
	if err := os.WriteFile(p, script, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get after repair = %q, %v", got, err)
	}
	if n := store.gets.Load(); n != 2 {
		t.Errorf("%d fetches, want 2: a failure must not be cached either", n)
	}

	// A Store that returns unverified bytes without an error is caught by
	// the cache's own check.
	liar := &lyingStore{Store: memT(t)}
	lc := NewCache(liar, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter, Logger: opts.Logger})
	for range 2 {
		if got, err := lc.Get(ctx, ref); !errors.Is(err, contentref.ErrIntegrity) || got != nil {
			t.Fatalf("Get from a lying store = %q, %v; want nil, contentref.ErrIntegrity", got, err)
		}
	}
	if n, _ := lc.Len(); n != 0 || liar.gets.Load() != 2 {
		t.Errorf("lying store: %d entries, %d fetches; want 0, 2", n, liar.gets.Load())
	}
}

func TestCacheOneWaiterGivingUpDoesNotFailOthers(t *testing.T) {
	store := &countingStore{Store: memT(t), gate: make(chan struct{})}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter})
	ref := putT(t, c, script)

	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	shortErr := make(chan error, 1)
	go func() { _, err := c.Get(short, ref); shortErr <- err }()
	waitFor(t, func() bool { return store.gets.Load() == 1 })
	longRes := make(chan error, 1)
	go func() {
		got, err := c.Get(ctxT(t), ref)
		if err == nil && !bytes.Equal(got, script) {
			err = errors.New("wrong bytes")
		}
		longRes <- err
	}()
	if err := <-shortErr; !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, contentref.ErrUnavailable) {
		t.Fatalf("short waiter: %v, want its deadline", err)
	}
	close(store.gate)
	if err := <-longRes; err != nil {
		t.Fatalf("the other waiter failed with the first one's deadline: %v", err)
	}
	if n := store.gets.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

func TestCacheLastWaiterGivingUpCancelsFetch(t *testing.T) {
	store := &countingStore{Store: memT(t), gate: make(chan struct{})}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter})
	ref := putT(t, c, script)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, ref); done <- err }()
	waitFor(t, func() bool { return store.gets.Load() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v, want context.Canceled", err)
	}
	// The abandoned fetch ends (its gate wait sees the cancellation) and
	// leaves nothing behind; a new Get starts a new fetch.
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.inflight) == 0
	})
	close(store.gate)
	if got, err := c.Get(ctxT(t), ref); err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get after an abandoned fetch = %q, %v", got, err)
	}
	if n := store.gets.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

func TestCacheDisabledAndCopies(t *testing.T) {
	store := &countingStore{Store: memT(t)}
	c := NewCache(store, CacheOptions{MaxBytes: 0, ConfirmAfter: DefaultConfirmAfter})
	ref := putT(t, c, script)
	ctx := ctxT(t)
	for range 3 {
		got, err := c.Get(ctx, ref)
		if err != nil || !bytes.Equal(got, script) {
			t.Fatal(got, err)
		}
	}
	if n := store.gets.Load(); n != 3 {
		t.Errorf("a disabled cache fetched %d times for 3 Gets, want 3", n)
	}

	on := NewCache(memT(t), CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter})
	ref = putT(t, on, script)
	got, _ := on.Get(ctx, ref)
	got[0] = 'X'
	if again, _ := on.Get(ctx, ref); !bytes.Equal(again, script) {
		t.Errorf("a caller changed the cached bytes: %q", again)
	}
	if _, err := on.Get(ctx, contentref.RefOf([]byte("missing"))); !errors.Is(err, contentref.ErrNotFound) {
		t.Errorf("missing through the cache = %v, want contentref.ErrNotFound", err)
	}
	if err := on.Check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := on.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n, _ := on.Len(); n != 0 {
		t.Errorf("Close kept %d entries", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A panic in the underlying store runs on the Cache's own goroutine, where
// nothing else recovers it: the Cache does, logs it with its stack, and hands
// every waiter contentref.ErrPanicked (without the panic's value); the fetch
// is over, so the next Get reads afresh.
func TestCacheStorePanicIsAnError(t *testing.T) {
	var logs servicetest.Logs
	store := &panickyStore{Store: memT(t), gate: make(chan struct{})}
	c := NewCache(store, CacheOptions{MaxBytes: DefaultCacheBytes, ConfirmAfter: DefaultConfirmAfter, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ref := putT(t, c, script)
	ctx := ctxT(t)

	const readers = 3
	errs := make(chan error, readers)
	for range readers {
		go func() {
			_, err := c.Get(ctx, ref)
			errs <- err
		}()
	}
	waitFor(t, func() bool { _, m := c.Stats(); return m == readers })
	close(store.gate)
	for range readers {
		err := <-errs
		if !errors.Is(err, contentref.ErrPanicked) || errors.Is(err, contentref.ErrUnavailable) {
			t.Errorf("Get = %v, want contentref.ErrPanicked", err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the panic's value is in the error: %v", err)
		}
	}
	if !strings.Contains(logs.String(), "the store panicked") || !strings.Contains(logs.String(), "secret state") ||
		!strings.Contains(logs.String(), "panickyStore") {
		t.Errorf("the panic and its stack are not logged:\n%s", logs.String())
	}
	if got, err := c.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
		t.Fatalf("the next Get = %q, %v; want the script", got, err)
	}
	if n := store.gets.Load(); n != 2 {
		t.Errorf("%d reads of the store, want 2", n)
	}
	if _, n := c.Len(); n != int64(len(script)) {
		t.Errorf("the cache holds %d bytes after the good read", n)
	}
}
