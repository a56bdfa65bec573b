package contentstore

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// DefaultCacheBytes is the default bound on the bytes a Cache keeps.
const DefaultCacheBytes int64 = 64 << 20

// Cache is a Store that keeps the verified bytes of recently read scripts in
// memory, bounded by their total size and evicting the least recently used.
// A script is content-addressed, so verified bytes never go stale.
//
// Concurrent Gets of one reference share a single fetch from the underlying
// store. The fetch runs on its own and is canceled only when every caller
// waiting for it has given up, so one caller's short deadline does not fail
// the others. Only bytes that hash to their reference are kept: the Cache
// verifies them itself, whatever the underlying store did.
type Cache struct {
	store    Store
	maxBytes int64
	log      *slog.Logger

	hits, misses atomic.Uint64

	mu       sync.Mutex
	lru      *list.List // of *cacheEntry, most recently used first
	entries  map[contentref.Ref]*list.Element
	size     int64
	inflight map[contentref.Ref]*fetch
}

var _ Store = (*Cache)(nil)

type cacheEntry struct {
	ref  contentref.Ref
	data []byte
}

// fetch is one Get of the underlying store shared by its waiters.
type fetch struct {
	done    chan struct{} // closed when data and err are set
	data    []byte
	err     error
	waiters int // guarded by Cache.mu
	cancel  context.CancelFunc
}

// NewCache wraps store with a cache of at most maxBytes of script bytes
// (DefaultCacheBytes is the usual setting). maxBytes <= 0 disables keeping
// bytes; concurrent Gets still share one fetch. A script larger than
// maxBytes is returned but not kept. logger may be nil (slog.Default()).
func NewCache(store Store, maxBytes int64, logger *slog.Logger) *Cache {
	if logger == nil {
		logger = slog.Default()
	}
	return &Cache{
		store:    store,
		maxBytes: max(maxBytes, 0),
		log:      logger,
		lru:      list.New(),
		entries:  make(map[contentref.Ref]*list.Element),
		inflight: make(map[contentref.Ref]*fetch),
	}
}

// Stats returns how many Gets were served from memory (hits) and how many
// were not (misses: each started or joined a fetch from the store).
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
		data := el.Value.(*cacheEntry).data
		c.mu.Unlock()
		c.hits.Add(1)
		return clone(data), nil
	}
	c.misses.Add(1)
	f, ok := c.inflight[ref]
	if !ok {
		// Detached from this caller's cancellation, which must not fail the
		// other waiters; canceled when the last waiter leaves.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &fetch{done: make(chan struct{}), cancel: cancel}
		c.inflight[ref] = f
		go c.run(fctx, ref, f)
	}
	f.waiters++
	c.mu.Unlock()

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
			// Nobody wants the result any more. A later Get starts afresh.
			f.cancel()
			if c.inflight[ref] == f {
				delete(c.inflight, ref)
			}
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: waiting for %s: %w", contentref.ErrUnavailable, ref, ctx.Err())
	}
}

// run performs one fetch and publishes its result to the waiters and, when
// verified, to the cache.
func (c *Cache) run(ctx context.Context, ref contentref.Ref, f *fetch) {
	defer f.cancel()
	data, err := c.get(ctx, ref)
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
		c.add(ref, data)
	}
	f.data, f.err = data, err
	c.mu.Unlock()
	close(f.done)
}

// get reads ref from the underlying store. It runs on the fetch's own
// goroutine, where a panic would end the process: a panic is recovered,
// logged with its stack, and returned as contentref.ErrPanicked (without
// its value, which may hold anything), so that the waiters get an error and
// done is closed.
func (c *Cache) get(ctx context.Context, ref contentref.Ref) (data []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			text := fmt.Sprint(v)
			if len(text) > 4096 {
				text = strings.ToValidUTF8(text[:4096], "") + "…"
			}
			c.log.Error("contentstore: the store panicked reading a script",
				slog.String("ref", ref.String()),
				slog.String("panic", text),
				slog.String("stack", string(debug.Stack())))
			data, err = nil, fmt.Errorf("%w while reading %s", contentref.ErrPanicked, ref)
		}
	}()
	return c.store.Get(ctx, ref)
}

// add keeps data under ref and evicts the least recently used entries to
// stay within maxBytes. c.mu must be held. data is not changed afterwards:
// Get hands out copies.
func (c *Cache) add(ref contentref.Ref, data []byte) {
	n := int64(len(data))
	if c.maxBytes == 0 || n > c.maxBytes {
		return
	}
	if _, ok := c.entries[ref]; ok {
		return
	}
	for c.size+n > c.maxBytes {
		last := c.lru.Back()
		e := last.Value.(*cacheEntry)
		c.lru.Remove(last)
		delete(c.entries, e.ref)
		c.size -= int64(len(e.data))
	}
	c.entries[ref] = c.lru.PushFront(&cacheEntry{ref: ref, data: data})
	c.size += n
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
