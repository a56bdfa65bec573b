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
 *
 * The limit checks are written so that no sum can wrap: size_t is 32 bits
 * on wasm32, and a request near 4 GiB must be refused, not counted as a
 * few bytes.
 *
 * The checked build (build.sh CHECKED=1, SANDBOX_CHECKED_HEAP) takes every
 * block, small ones too (patches/0005), from the red-zone allocator below:
 * an out-of-bounds write that does not leave linear memory, which wasm
 * cannot see, is seen there, and so is a use of a block after its free.
 * There, too, a test can have the Nth allocation that the limit could
 * refuse (a new block, or a block grown) refused as the limit refuses one
 * (heap_refuse, redzone.c), to reach the engine's out-of-memory paths one
 * by one.
 */

#include "sandbox.h"

#ifdef SANDBOX_CHECKED_HEAP
#include "redzone.c"
#define heap_malloc rz_malloc
#define heap_free rz_free
#define heap_realloc rz_realloc
#define heap_usable rz_usable
#define heap_counted rz_counted
#define heap_check rz_check
#define heap_refuse rz_refuse
#define HEAP_BLOCK_OVERHEAD 0
#else
#define heap_malloc malloc
#define heap_free free
#define heap_realloc realloc
#define heap_usable(p) malloc_usable_size((void *)(p))
#define heap_counted heap_usable
#define heap_check() ((void)0)
#define heap_refuse() 0
/* what the host heap adds to each block: dlmalloc's chunk header */
#define HEAP_BLOCK_OVERHEAD 8
#endif

/* over_limit: taking more bytes would pass the limit (or the count is
 * already past it, after the limit was lowered). */
static int over_limit(const JSMallocState *s, size_t more)
{
    return s->malloc_size > s->malloc_limit || more > s->malloc_limit - s->malloc_size;
}

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
    if (over_limit(s, size) || heap_refuse()) {
        sb.oom = 1;
        return NULL;
    }
    p = heap_malloc(size);
    if (!p) {
        sb.oom = 1;
        return NULL;
    }
    s->malloc_count++;
    s->malloc_size += heap_counted(p) + HEAP_BLOCK_OVERHEAD;
    sb.live_blocks++;
    note_heap(s);
    return p;
}

static void sb_js_free(JSMallocState *s, void *p)
{
    if (!p)
        return;
    s->malloc_count--;
    s->malloc_size -= heap_counted(p) + HEAP_BLOCK_OVERHEAD;
    sb.live_blocks--;
    note_heap(s);
    heap_free(p);
}

static void *sb_js_realloc(JSMallocState *s, void *p, size_t size)
{
    size_t old;
    void *q;
    if (!p)
        return size == 0 ? NULL : sb_js_malloc(s, size);
    old = heap_counted(p);
    if (size == 0) {
        sb_js_free(s, p);
        return NULL;
    }
    if (size > old && (over_limit(s, size - old) || heap_refuse())) {
        sb.oom = 1;
        return NULL;
    }
    q = heap_realloc(p, size);
    if (!q) {
        sb.oom = 1;
        return NULL;
    }
    s->malloc_size = s->malloc_size - old + heap_counted(q);
    note_heap(s);
    return q;
}

static size_t sb_js_usable(const void *p) { return heap_usable(p); }

static const JSMallocFunctions sb_malloc_funcs = {
    sb_js_malloc, sb_js_free, sb_js_realloc, sb_js_usable,
};

/* sbrk replaces wasi-libc's, which dlmalloc grows the heap with. Theirs
 * takes the end of the heap to be the end of linear memory, so the heap's
 * layout would follow the size the memory happens to have. The host reuses
 * an instance for run after run, restoring its memory to an image each time
 * (quickjs/image.go), and a memory that an earlier run grew stays that
 * large: here the end of the heap is kept in the shim's state (sb.brk),
 * which the image restores, so the heap grows exactly as it would in a new
 * instance, and the memory grows only when the heap needs more than it
 * has. Like theirs it takes whole wasm pages, never negative increments
 * (dlmalloc is built not to trim), and traps on a call outside that. */
#define WASM_PAGE 65536u
void *sbrk(intptr_t increment)
{
    uintptr_t old, size;
    if (!sb.brk)
        sb.brk = __builtin_wasm_memory_size(0) * WASM_PAGE;
    old = sb.brk;
    if (increment == 0)
        return (void *)old;
    if (increment < 0 || ((uintptr_t)increment & (WASM_PAGE - 1)))
        __builtin_trap();
    if ((uintptr_t)increment > UINTPTR_MAX - old) {
        errno = ENOMEM;
        return (void *)-1;
    }
    size = __builtin_wasm_memory_size(0) * WASM_PAGE;
    if (old + increment > size &&
        __builtin_wasm_memory_grow(0, (old + increment - size) / WASM_PAGE) == (size_t)-1) {
        errno = ENOMEM;
        return (void *)-1;
    }
    sb.brk = old + increment;
    return (void *)old;
}
