/*
 * redzone.c: the checked build's heap (SANDBOX_CHECKED_HEAP; alloc.c
 * includes it only there). Every block the runtime takes is surrounded by
 * red zones, bytes of a known pattern that no correct code writes:
 *
 *   [head: links, size, magic][front red zone][the block][back red zone]
 *
 * In wasm an out-of-bounds write traps only once it leaves linear memory;
 * one that stays inside it overwrites a neighbour silently. Here it lands
 * in a red zone, and the zones are checked when their block is freed or
 * reallocated, over every live block once there have been as many
 * allocations since the last such sweep as there are live blocks (at most
 * twice the work of the allocations themselves, however many blocks live),
 * and over every live block when a run ends (sb_run, run.c). The first
 * damaged zone ends the instance: the shim tells the host what it found
 * (checked.fault) and traps. A block's usable size is exactly what was
 * asked, so that QuickJS never writes into slack it was told of.
 *
 * Blocks are never grown in place: realloc moves every block, and a freed
 * block is filled with the pattern, so that a stale pointer reads garbage
 * rather than the values it expects.
 */

#include "sandbox.h"

#define RZ_SIZE 32         /* bytes of each red zone */
#define RZ_BYTE 0xcb       /* what a red zone holds */
#define RZ_MAGIC 0x5a6b7c8du
#define RZ_SWEEP_MIN 256   /* allocations between two sweeps, at the least */

typedef struct rz_head {
    struct rz_head *prev, *next; /* live blocks, newest first */
    size_t size;                 /* bytes asked for */
    uint32_t magic;
    uint32_t serial; /* the allocation's number, for the report */
    uint8_t pad[12]; /* to 32 bytes: the block starts 16-byte aligned, as malloc's do */
} rz_head;
_Static_assert(sizeof(rz_head) % 16 == 0 && RZ_SIZE % 16 == 0, "a block must start 16-byte aligned");

static struct {
    rz_head *live;
    uint32_t nlive, serial, since_sweep;
    char msg[160];
} rz;

/* checked.fault: the host records what the checked heap found; the guest
 * traps right after. */
IMPORT(checked, fault) void host_fault(const char *msg, uint32_t len);

static uint8_t *rz_front(rz_head *h) { return (uint8_t *)(h + 1); }
static uint8_t *rz_block(rz_head *h) { return rz_front(h) + RZ_SIZE; }
static uint8_t *rz_back(rz_head *h) { return rz_block(h) + h->size; }
static rz_head *rz_of(void *p) { return (rz_head *)((uint8_t *)p - RZ_SIZE) - 1; }

static __attribute__((noreturn)) void rz_fail(const char *what, rz_head *h, const uint8_t *at)
{
    int n;
    if (at)
        n = snprintf(rz.msg, sizeof(rz.msg),
                     "checked heap: %s of block %u (%u bytes at %#x) damaged at offset %+d",
                     what, (unsigned)h->serial, (unsigned)h->size, (unsigned)(uintptr_t)rz_block(h),
                     (int)(at - rz_block(h)));
    else
        n = snprintf(rz.msg, sizeof(rz.msg), "checked heap: %s at %#x", what, (unsigned)(uintptr_t)h);
    if (n < 0)
        n = 0;
    if (n >= (int)sizeof(rz.msg))
        n = sizeof(rz.msg) - 1;
    host_fault(rz.msg, (uint32_t)n);
    __builtin_trap();
}

static const uint8_t *rz_damaged(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != RZ_BYTE)
            return p + i;
    return NULL;
}

/* rz_verify traps unless h is a live block with both zones intact. */
static void rz_verify(rz_head *h)
{
    const uint8_t *at;
    if (h->magic != RZ_MAGIC)
        rz_fail("a block header that is not one (a wild free, or the header overwritten)", h, NULL);
    if ((at = rz_damaged(rz_front(h), RZ_SIZE)))
        rz_fail("the red zone before", h, at);
    if ((at = rz_damaged(rz_back(h), RZ_SIZE)))
        rz_fail("the red zone after", h, at);
}

/* rz_sweep verifies every live block. */
static void rz_sweep(void)
{
    rz_head *h;
    rz.since_sweep = 0;
    for (h = rz.live; h; h = h->next)
        rz_verify(h);
}

static void *rz_malloc(size_t size)
{
    rz_head *h;
    if (size > SIZE_MAX - sizeof(rz_head) - 2 * RZ_SIZE)
        return NULL;
    if (++rz.since_sweep >= RZ_SWEEP_MIN && rz.since_sweep >= rz.nlive)
        rz_sweep();
    h = malloc(sizeof(rz_head) + 2 * RZ_SIZE + size);
    if (!h)
        return NULL;
    h->size = size;
    h->magic = RZ_MAGIC;
    h->serial = ++rz.serial;
    memset(rz_front(h), RZ_BYTE, RZ_SIZE);
    memset(rz_back(h), RZ_BYTE, RZ_SIZE);
    h->prev = NULL;
    h->next = rz.live;
    if (rz.live)
        rz.live->prev = h;
    rz.live = h;
    rz.nlive++;
    return rz_block(h);
}

static void rz_free(void *p)
{
    rz_head *h;
    if (!p)
        return;
    h = rz_of(p);
    rz_verify(h);
    if (h->prev)
        h->prev->next = h->next;
    else
        rz.live = h->next;
    if (h->next)
        h->next->prev = h->prev;
    rz.nlive--;
    h->magic = 0;
    memset(h + 1, RZ_BYTE, 2 * RZ_SIZE + h->size);
    free(h);
}

static size_t rz_usable(const void *p) { return rz_of((void *)p)->size; }

/* rz_counted is what the memory limit counts of a block: what was asked,
 * rounded up to 8 bytes, and neither the zones nor a chunk header, about
 * what the production heap counts of a small block in its arenas (QuickJS's
 * own header is part of what was asked), so that a script's limits fall
 * about where they do in the engine that ships. The zones take linear
 * memory beyond the limit. */
static size_t rz_counted(const void *p) { return (rz_usable(p) + 7) & ~(size_t)7; }

static void *rz_realloc(void *p, size_t size)
{
    void *q;
    size_t old;
    if (!p)
        return rz_malloc(size);
    rz_verify(rz_of(p));
    q = rz_malloc(size);
    if (!q)
        return NULL;
    old = rz_usable(p);
    memcpy(q, p, old < size ? old : size);
    rz_free(p);
    return q;
}

/* sb_checked_selftest writes one byte at offset off from the start of a
 * 24-byte block of the runtime's heap (outside it when off < 0 or off >= 24)
 * and then frees the block when free_it is set, else leaves it for the end
 * of the next run's check. Tests use it to show that the checked heap sees
 * a write a byte past a block, which wasm itself lets pass. Only the
 * checked build exports it; no script reaches it. */
EXPORT(sb_checked_selftest) int32_t sb_checked_selftest(int32_t off, int32_t free_it)
{
    uint8_t *p = js_malloc_rt(sb.rt, 24);
    if (!p)
        return -1;
    p[off] ^= 0xff;
    if (free_it)
        js_free_rt(sb.rt, p);
    return 0;
}
