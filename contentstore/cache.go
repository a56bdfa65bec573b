package contentstore

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// DefaultCacheBytes is the default bound on the bytes a Cache keeps.
const DefaultCacheBytes int64 = 64 << 20

// DefaultConfirmAfter is the default CacheOptions.ConfirmAfter: how long a
// Cache runs a script from memory before it asks the store again whether
// the script is still there.
const DefaultConfirmAfter = 30 * time.Second

// Cache is a Store that keeps the verified bytes of recently read scripts in
// memory, bounded by their total size and evicting the least recently used.
//
// A script is content-addressed, so the bytes under a reference never
// change; whether they may still be run does. A script swept from its store
// (after an erasure, say) answers as missing (docs/spi.md, "Scripts"), so a
// Get served from memory asks the store whether it still holds the script
// (Store.Exists: its metadata, never its bytes) once the last answer is
// older than ConfirmAfter. A script the store no longer has is dropped and
// its Get fails with ErrNotFound; a Get whose confirmation fails (the store
// errs, or the caller's deadline passes first) fails with the store's
// error, and the bytes are not returned: running an erased script is the
// worse mistake.
//
// Concurrent Gets of one reference share a single fetch from the underlying
// store, and a single confirmation. Either runs on its own and is canceled
// only when every caller waiting for it has given up, so one caller's short
// deadline does not fail the others. Only bytes that hash to their
// reference are kept: the Cache verifies them itself, whatever the
// underlying store did.
type Cache struct {
	store        Store
	maxBytes     int64
	confirmAfter time.Duration
	now          func() time.Time
	log          *slog.Logger

	hits, misses atomic.Uint64

	mu         sync.Mutex
	lru        *list.List // of *cacheEntry, most recently used first
	entries    map[contentref.Ref]*list.Element
	size       int64
	inflight   map[contentref.Ref]*flight // fetches
	confirming map[contentref.Ref]*flight // confirmations of held entries
}

var _ Store = (*Cache)(nil)

type cacheEntry struct {
	ref  contentref.Ref
	data []byte
	// confirmed is when the read of the store that last found the script
	// began: the fetch that filled the entry, or its latest confirmation.
	// Guarded by Cache.mu.
	confirmed time.Time
}

// flight is one call of the underlying store (a fetch, or a confirmation)
// shared by its waiters.
type flight struct {
	done    chan struct{} // closed when data and err are set
	data    []byte
	err     error
	waiters int // guarded by Cache.mu
	cancel  context.CancelFunc
}

// CacheOptions configure a Cache.
type CacheOptions struct {
	// MaxBytes bounds the script bytes kept (DefaultCacheBytes is the usual
	// setting). Zero or less keeps none; concurrent Gets still share one
	// fetch. A script larger than MaxBytes is returned but not kept.
	MaxBytes int64
	// ConfirmAfter is how long after the store last found a script its
	// bytes are run from memory without asking it again
	// (DefaultConfirmAfter is the usual setting). Zero, or less, asks at
	// every Get.
	ConfirmAfter time.Duration
	// Logger may be nil (slog.Default()).
	Logger *slog.Logger
	// Now is the clock ConfirmAfter is measured on; nil is time.Now.
	Now func() time.Time
}

// NewCache wraps store with a cache of verified bytes.
func NewCache(store Store, opts CacheOptions) *Cache {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{
		store:        store,
		maxBytes:     max(opts.MaxBytes, 0),
		confirmAfter: max(opts.ConfirmAfter, 0),
		now:          opts.Now,
		log:          opts.Logger,
		lru:          list.New(),
		entries:      make(map[contentref.Ref]*list.Element),
		inflight:     make(map[contentref.Ref]*flight),
		confirming:   make(map[contentref.Ref]*flight),
	}
}

// Stats returns how many Gets were served from memory (hits: with the
// store's confirmation when one was due) and how many were not (misses:
// each started or joined a fetch from the store). A Get whose confirmation
// failed is neither.
func (c *Cache) Stats() (hits, misses uint64) {
	return c.hits.Load(), c.misses.Load()
}

// Len returns the number of scripts and the bytes held.
func (c *Cache) Len() (scripts int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.size
}

// Get implements Store. The returned slice is a copy the caller may keep and
// change.
func (c *Cache) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if err := CheckRef(ref); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if el, ok := c.entries[ref]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		if c.confirmAfter > 0 && c.now().Sub(e.confirmed) < c.confirmAfter {
			data := e.data
			c.mu.Unlock()
			c.hits.Add(1)
			return clone(data), nil
		}
		f := c.join(ctx, c.confirming, ref, func(ctx context.Context, f *flight) { c.confirm(ctx, e, f) })
		c.mu.Unlock()
		data, err := c.wait(ctx, ref, c.confirming, f, "confirming that the store still holds")
		if err == nil {
			c.hits.Add(1)
		}
		return data, err
	}
	c.misses.Add(1)
	f := c.join(ctx, c.inflight, ref, func(ctx context.Context, f *flight) { c.fill(ctx, ref, f) })
	c.mu.Unlock()
	return c.wait(ctx, ref, c.inflight, f, "waiting for")
}

// join adds the caller to the flight of ref in flights, starting it with
// run when there is none. c.mu must be held.
func (c *Cache) join(ctx context.Context, flights map[contentref.Ref]*flight, ref contentref.Ref, run func(context.Context, *flight)) *flight {
	f, ok := flights[ref]
	if !ok {
		// Detached from this caller's cancellation, which must not fail the
		// other waiters; canceled when the last waiter leaves.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		flights[ref] = f
		go run(fctx, f)
	}
	f.waiters++
	return f
}

// wait returns the flight's result, or gives up when ctx ends: the last
// waiter to give up cancels the flight, and a later Get starts afresh.
// what says what the caller was waiting for, in its error.
func (c *Cache) wait(ctx context.Context, ref contentref.Ref, flights map[contentref.Ref]*flight, f *flight, what string) ([]byte, error) {
	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return clone(f.data), nil
	case <-ctx.Done():
		c.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
			if flights[ref] == f {
				delete(flights, ref)
			}
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %s %s: %w", contentref.ErrUnavailable, what, ref, ctx.Err())
	}
}

// fill performs one fetch and publishes its result to the waiters and, when
// verified, to the cache.
func (c *Cache) fill(ctx context.Context, ref contentref.Ref, f *flight) {
	defer f.cancel()
	start := c.now()
	var data []byte
	err := c.guard(ref, "reading", func() (err error) {
		data, err = c.store.Get(ctx, ref)
		return err
	})
	if err == nil {
		// The underlying store verified these bytes already; a Cache must not
		// rely on that to keep them.
		err = verify(data, ref, "cache fill of "+ref.String(), c.log)
	}
	if err != nil {
		data = nil
	}
	c.mu.Lock()
	if c.inflight[ref] == f {
		delete(c.inflight, ref)
	}
	if err == nil {
		c.add(ref, data, start)
	}
	f.data, f.err = data, err
	c.mu.Unlock()
	close(f.done)
}

// confirm asks the store whether it still holds e's script and publishes
// the answer to the waiters: e's bytes when it does (and e counts as
// confirmed from when the question was asked); else the store's error, and
// e is dropped when the store no longer has the script.
func (c *Cache) confirm(ctx context.Context, e *cacheEntry, f *flight) {
	defer f.cancel()
	start := c.now()
	err := c.guard(e.ref, "confirming", func() error { return c.store.Exists(ctx, e.ref) })
	c.mu.Lock()
	if c.confirming[e.ref] == f {
		delete(c.confirming, e.ref)
	}
	el, held := c.entries[e.ref]
	held = held && el.Value.(*cacheEntry) == e
	switch {
	case err == nil:
		if held && start.After(e.confirmed) {
			e.confirmed = start
		}
		f.data = e.data
	case errors.Is(err, contentref.ErrNotFound):
		if held {
			c.remove(el)
		}
		f.err = fmt.Errorf("%s, held in the cache, is no longer in the store: %w", e.ref, err)
	default:
		f.err = fmt.Errorf("confirming that the store still holds %s: %w", e.ref, err)
	}
	c.mu.Unlock()
	if errors.Is(err, contentref.ErrNotFound) {
		c.log.Info("contentstore: a cached script is no longer in its store; dropped from the cache",
			slog.String("ref", e.ref.String()))
	}
	close(f.done)
}

// guard calls the store on a flight's own goroutine, where a panic would end
// the process: a panic is recovered, logged with its stack, and returned as
// contentref.ErrPanicked (without its value, which may hold anything), so
// that the waiters get an error and done is closed. doing says what the
// call was doing ("reading", "confirming").
func (c *Cache) guard(ref contentref.Ref, doing string, call func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			text := fmt.Sprint(v)
			if len(text) > 4096 {
				text = strings.ToValidUTF8(text[:4096], "") + "…"
			}
			c.log.Error("contentstore: the store panicked "+doing+" a script",
				slog.String("ref", ref.String()),
				slog.String("panic", text),
				slog.String("stack", string(debug.Stack())))
			err = fmt.Errorf("%w while %s %s", contentref.ErrPanicked, doing, ref)
		}
	}()
	return call()
}

// add keeps data under ref, found in the store by a read that began at
// confirmed, and evicts the least recently used entries to stay within
// maxBytes. c.mu must be held. data is not changed afterwards: Get hands
// out copies.
func (c *Cache) add(ref contentref.Ref, data []byte, confirmed time.Time) {
	n := int64(len(data))
	if c.maxBytes == 0 || n > c.maxBytes {
		return
	}
	if _, ok := c.entries[ref]; ok {
		return
	}
	for c.size+n > c.maxBytes {
		c.remove(c.lru.Back())
	}
	c.entries[ref] = c.lru.PushFront(&cacheEntry{ref: ref, data: data, confirmed: confirmed})
	c.size += n
}

// remove drops the entry el. c.mu must be held.
func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.entries, e.ref)
	c.size -= int64(len(e.data))
}

// Put implements Store by writing through to the underlying store.
func (c *Cache) Put(ctx context.Context, data []byte) (contentref.Ref, error) {
	return c.store.Put(ctx, data)
}

// Exists implements Store by asking the underlying store.
func (c *Cache) Exists(ctx context.Context, ref contentref.Ref) error {
	return c.store.Exists(ctx, ref)
}

// Check implements Store by checking the underlying store.
func (c *Cache) Check(ctx context.Context) error { return c.store.Check(ctx) }

// Close drops the cached bytes and closes the underlying store.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.lru.Init()
	clear(c.entries)
	c.size = 0
	c.mu.Unlock()
	return c.store.Close()
}

func (c *Cache) MaxScriptBytes() int64 {
	if m, ok := c.store.(maxSizer); ok {
		return m.MaxScriptBytes()
	}
	return DefaultMaxScriptBytes
}

// clone copies b; an empty script stays a non-nil empty slice.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
