/*
 * alloc.c: the allocator QuickJS runs on: its own accounting against the
 * memory limit, plus a flag that tells a refused allocation apart from the
 * script's own errors.
 *
 * QuickJS carves its small blocks (up to 512 bytes) out of 4 KiB arenas of
 * its own, which it takes from these functions, and takes every larger
 * block from them directly: what they count against the limit is what the
 * runtime holds of the heap, arenas whole, so the limit bounds the wasm
 * memory the engine's data can occupy.
 */

#include "sandbox.h"

/* note_heap mirrors the runtime's count after every change, and keeps its
 * peak for the run's usage. */
static void note_heap(const JSMallocState *s)
{
    sb.heap = s->malloc_size;
    if (sb.heap > sb.peak)
        sb.peak = sb.heap;
}

static void *sb_js_malloc(JSMallocState *s, size_t size)
{
    void *p;
    if (size == 0)
        return NULL;
    if (s->malloc_size + size > s->malloc_limit) {
        sb.oom = 1;
        return NULL;
    }
    p = malloc(size);
    if (!p) {
        sb.oom = 1;
        return NULL;
    }
    s->malloc_count++;
    s->malloc_size += malloc_usable_size(p) + 8;
    sb.live_blocks++;
    note_heap(s);
    return p;
}

static void sb_js_free(JSMallocState *s, void *p)
{
    if (!p)
        return;
    s->malloc_count--;
    s->malloc_size -= malloc_usable_size(p) + 8;
    sb.live_blocks--;
    note_heap(s);
    free(p);
}

static void *sb_js_realloc(JSMallocState *s, void *p, size_t size)
{
    size_t old;
    void *q;
    if (!p)
        return size == 0 ? NULL : sb_js_malloc(s, size);
    old = malloc_usable_size(p);
    if (size == 0) {
        sb_js_free(s, p);
        return NULL;
    }
    if (size > old && s->malloc_size + (size - old) > s->malloc_limit) {
        sb.oom = 1;
        return NULL;
    }
    q = realloc(p, size);
    if (!q) {
        sb.oom = 1;
        return NULL;
    }
    s->malloc_size = s->malloc_size - old + malloc_usable_size(q);
    note_heap(s);
    return q;
}

static size_t sb_js_usable(const void *p) { return malloc_usable_size((void *)p); }

static const JSMallocFunctions sb_malloc_funcs = {
    sb_js_malloc, sb_js_free, sb_js_realloc, sb_js_usable,
};
