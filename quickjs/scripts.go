package quickjs

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
)

// scriptImage is a script's compiled state: the memory of an instance that
// held the set-up image once sb_compile compiled the script in it, before
// any of the script's code ran, held as the pages in which it differs from
// the set-up image. Written into an instance that holds the set-up image
// (restore), it gives that instance the very bytes the compile left: the
// shadow stack is zeros in both (the compile's frames are dead once it
// returned, and are cleared in the instance that compiled), the pages
// stored are the compile's, and every other page is the set-up image's, or
// zeros above it.
//
// Its bytes are the engine's own compile of the script, taken from the
// guest's memory in the same process; nothing else ever becomes one, and no
// bytecode is ever read into the engine (QuickJS's bytecode reader is not
// hardened). It is written into instances, never written itself: its pages
// live outside the Go heap (memory_linux.go), read-only for the engine's
// code, and are unmapped once it is evicted and no restore holds it.
type scriptImage struct {
	size  uint32      // the linear memory the image needs: its heap's end
	spans []imageSpan // ascending, disjoint, within [stack, size)
	data  []byte      // the spans' bytes, outside the Go heap
	// refs counts the restores in progress and the cache's own hold;
	// guarded by the cache's mutex
	refs int
}

// bytes is what the image holds against the cache's budget.
func (s *scriptImage) bytes() int64 { return int64(len(s.data)) + int64(len(s.spans))*32 + 64 }

// captureScript takes the script image of in, an instance that held img
// and in which sb_compile just returned: the pages of [stack, size) that
// differ from img (above img's end, from zeros). The guest's end of heap
// says how large a memory the image needs; a page that differs above it is
// kept all the same, and the size grows to hold it.
func (img *memImage) captureScript(in *instance) (*scriptImage, error) {
	size := in.mem.Size()
	mem, ok := in.mem.Read(0, size)
	if !ok || size < img.size {
		return nil, fmt.Errorf("quickjs: reading a %d-byte memory to keep a compiled script failed", size)
	}
	brk := min(max(binary.LittleEndian.Uint32(mem[img.brkAt:]), img.size), size)
	var pages []uint32 // offsets of the pages that differ
	for off := img.stack; off < size; off += imagePage {
		page := mem[off : off+imagePage]
		if off < img.size {
			if string(page) == string(img.page(off)) {
				continue
			}
		} else if isZero(page) {
			continue
		}
		pages = append(pages, off)
	}
	s := &scriptImage{size: img.size}
	if len(pages) > 0 {
		data, err := allocOffHeap(len(pages) * imagePage)
		if err != nil {
			return nil, fmt.Errorf("quickjs: keeping a compiled script of %d pages: %w", len(pages), err)
		}
		s.data = data
		at := 0
		for _, off := range pages {
			n := copy(data[at:], mem[off:off+imagePage])
			if k := len(s.spans); k > 0 && s.spans[k-1].off+s.spans[k-1].n == off {
				s.spans[k-1].n += uint32(n)
				s.spans[k-1].data = data[at-int(s.spans[k-1].n)+n : at+n]
			} else {
				s.spans = append(s.spans, imageSpan{off: off, n: uint32(n), data: data[at : at+n]})
			}
			at += n
		}
		if err := sealOffHeap(data); err != nil {
			freeOffHeap(data)
			return nil, fmt.Errorf("quickjs: sealing a compiled script read-only: %w", err)
		}
		brk = max(brk, pages[len(pages)-1]+imagePage)
	}
	s.size = max(img.size, (brk+wasmPage-1)/wasmPage*wasmPage)
	return s, nil
}

// page is the image's page at off, in [stack, size).
func (img *memImage) page(off uint32) []byte {
	return img.flat[off-img.stack : off-img.stack+imagePage]
}

// restore writes the script image into in, an instance that holds the
// set-up image, growing its memory to the image's size first.
func (s *scriptImage) restore(in *instance) error {
	if in.mem.Size() < s.size {
		if _, ok := in.mem.Grow((s.size - in.mem.Size()) / wasmPage); !ok {
			return fmt.Errorf("quickjs: growing an instance's memory to a %d-byte compiled script failed", s.size)
		}
	}
	mem, ok := in.mem.Read(0, s.size)
	if !ok {
		return fmt.Errorf("quickjs: reading an instance's memory to restore a compiled script failed")
	}
	for _, sp := range s.spans {
		copy(mem[sp.off:], sp.data)
	}
	return nil
}

// scriptKey is what a script image is kept under: the script's sha256. The
// cache is one engine's, so the rest of what decides a compile's memory is
// the same for every entry: the engine's wasm (its sha256 is checked when
// the engine is made), its set-up image, and the memory limit the compile
// runs under, the engine's maximum.
type scriptKey [sha256.Size]byte

// scriptCache keeps script images within a budget of bytes, the least
// recently used leaving first. It is safe for concurrent use.
type scriptCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	lru     *list.List // of *cacheEntry, most recently used first
	entries map[scriptKey]*list.Element
	stats   CompiledScriptStats
}

type cacheEntry struct {
	key scriptKey
	img *scriptImage
}

// CompiledScriptStats count what the engine's kept compiled scripts did:
// runs that started from a script as an earlier run compiled it (Hits),
// runs that compiled their script (Misses), and scripts evicted to keep
// the cache within its budget (Evictions).
type CompiledScriptStats struct {
	Hits, Misses, Evictions uint64
}

func newScriptCache(budget int64) *scriptCache {
	return &scriptCache{budget: budget, lru: list.New(), entries: map[scriptKey]*list.Element{}}
}

// get returns the image kept for key, held for a restore (release it), or
// nil; either way it counts the run as a hit or a miss.
func (c *scriptCache) get(key scriptKey) *scriptImage {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		c.stats.Misses++
		return nil
	}
	c.stats.Hits++
	c.lru.MoveToFront(el)
	img := el.Value.(*cacheEntry).img
	img.refs++
	return img
}

// release ends a restore's hold of img.
func (c *scriptCache) release(img *scriptImage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(img)
}

// drop takes one hold off img, and frees it when none is left; c.mu held.
func (c *scriptCache) drop(img *scriptImage) {
	img.refs--
	if img.refs == 0 {
		freeOffHeap(img.data)
		img.data, img.spans = nil, nil
	}
}

// put keeps img under key, evicting the least recently used to make room;
// an image larger than a quarter of the budget is not kept, so that one
// script cannot empty the cache, nor is a second image of a script already
// kept. What is not kept is freed.
func (c *scriptCache) put(key scriptKey, img *scriptImage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img.refs = 1
	n := img.bytes()
	if _, ok := c.entries[key]; ok || n > c.budget/4 {
		c.drop(img)
		return
	}
	for c.used+n > c.budget {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.used -= e.img.bytes()
		c.stats.Evictions++
		c.drop(e.img)
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, img: img})
	c.used += n
}

// kept is the number of images kept and the bytes they hold.
func (c *scriptCache) kept() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.used
}

// counts returns the cache's statistics.
func (c *scriptCache) counts() CompiledScriptStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// close frees every image that no restore holds; those held are freed when
// their restore ends.
func (c *scriptCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.entries {
		c.drop(el.Value.(*cacheEntry).img)
		delete(c.entries, key)
	}
	c.lru.Init()
	c.used = 0
}
