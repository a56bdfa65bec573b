/*
 * redzone.c: the checked build's heap (SANDBOX_CHECKED_HEAP; alloc.c
 * includes it only there). It sees two kinds of memory error that wasm lets
 * pass: a write outside a block, and the use of a block after its free.
 *
 * Every block the runtime takes is surrounded by red zones, bytes of a
 * known pattern that no correct code writes:
 *
 *   [head: links, size, magic][front red zone][the block][back red zone]
 *
 * In wasm an out-of-bounds write traps only once it leaves linear memory;
 * one that stays inside it overwrites a neighbour silently. Here it lands
 * in a red zone, and the zones are checked when their block is freed or
 * reallocated, over every live block once there have been as many
 * allocations since the last such sweep as there are live blocks (at most
 * twice the work of the allocations themselves, however many blocks live),
 * and over every live block when a run ends (sb_run, run.c). A block's
 * usable size is exactly what was asked, so that QuickJS never writes into
 * slack it was told of.
 *
 * Lifetimes: a freed block is not handed back to libc at once. It is
 * poisoned, zones and all, and held in a quarantine, oldest first, up to
 * RZ_QUARANTINE_BYTES; only when it leaves the quarantine is it handed
 * back, and only once its poison is verified whole. Every block still held
 * is verified when a run ends. A write through a stale pointer into a block
 * freed within the last few megabytes of frees is seen there; a second free
 * of a block still held is seen at once, by its header. Blocks are never
 * grown in place: realloc moves every block, so that a pointer kept across
 * a realloc is stale, and caught, too.
 *
 * The first error found ends the instance: the shim tells the host what it
 * found (checked.fault), naming the block by its allocation's number, and
 * traps.
 *
 * Tests reach the heap through exports that only this build has and no
 * script reaches (sb_checked_*, below): a deliberate write outside a block,
 * after a free, and a double free; a switch that turns the lifetime checks
 * off, so that a test can show they are what sees those; and a refusal of
 * the Nth allocation, for the out-of-memory sweep (alloc.c).
 */

#include "sandbox.h"

#define RZ_SIZE 32         /* bytes of each red zone */
#define RZ_BYTE 0xcb       /* what a red zone holds */
#define RZ_MAGIC 0x5a6b7c8du
#define RZ_SWEEP_MIN 256   /* allocations between two sweeps, at the least */

/* What a freed block holds, zones included. All ones, because QuickJS's own
 * free reads the first bytes of the block as its block header: 0xffff there
 * is FREE_NIL, a large block, which it hands back to us, so that a second
 * free of the block reaches rz_free and is seen, rather than being taken for
 * a small block of some arena and corrupting it first. */
#define RZ_FREED_BYTE 0xff
#define RZ_FREED_MAGIC 0xf7eed0c5u
/* The most bytes (blocks with their zones and heads) the quarantine holds.
 * Beyond the memory limit, as the zones are; a block larger than this is
 * checked and handed back at once. */
#define RZ_QUARANTINE_BYTES (4u << 20)

typedef struct rz_head {
    struct rz_head *prev, *next; /* live blocks, newest first; or the quarantine, oldest first (next) */
    size_t size;                 /* bytes asked for */
    uint32_t magic;              /* RZ_MAGIC live, RZ_FREED_MAGIC in the quarantine */
    uint32_t serial;             /* the allocation's number, for the report */
    uint32_t size_check;         /* ~size: a head damaged in the quarantine is seen before its size is trusted */
    uint8_t pad[8];              /* to 32 bytes: the block starts 16-byte aligned, as malloc's do */
} rz_head;
_Static_assert(sizeof(rz_head) % 16 == 0 && RZ_SIZE % 16 == 0, "a block must start 16-byte aligned");

static struct {
    rz_head *live;
    uint32_t nlive, serial, since_sweep;
    /* the quarantine: freed blocks, oldest first */
    rz_head *q_oldest, *q_newest;
    size_t q_bytes;
    int lifetimes_off; /* sb_checked_lifetimes(0): freed blocks go back at once, unchecked */
    /* the out-of-memory sweep's knob (sb_checked_fail_allocation) */
    uint32_t allocs;   /* allocations counted since the knob was set */
    uint32_t fail_at;  /* 0: none; else the allocation to refuse */
    int fail_on;       /* refuse every allocation from fail_at on, not that one alone */
    uint32_t refused;  /* allocations the knob refused */
    char msg[192];
} rz;

/* checked.fault: the host records what the checked heap found; the guest
 * traps right after. */
IMPORT(checked, fault) void host_fault(const char *msg, uint32_t len);

static uint8_t *rz_front(rz_head *h) { return (uint8_t *)(h + 1); }
static uint8_t *rz_block(rz_head *h) { return rz_front(h) + RZ_SIZE; }
static uint8_t *rz_back(rz_head *h) { return rz_block(h) + h->size; }
static rz_head *rz_of(void *p) { return (rz_head *)((uint8_t *)p - RZ_SIZE) - 1; }
static size_t rz_extent(rz_head *h) { return sizeof(rz_head) + 2 * RZ_SIZE + h->size; }

static __attribute__((noreturn)) void rz_report(int n)
{
    if (n < 0)
        n = 0;
    if (n >= (int)sizeof(rz.msg))
        n = sizeof(rz.msg) - 1;
    host_fault(rz.msg, (uint32_t)n);
    __builtin_trap();
}

/* rz_fail reports what is wrong with block h (at: the first damaged byte,
 * or NULL when h itself is not a block) and traps. */
static __attribute__((noreturn)) void rz_fail(const char *what, rz_head *h, const uint8_t *at)
{
    if (at)
        rz_report(snprintf(rz.msg, sizeof(rz.msg),
                           "checked heap: %s of block %u (%u bytes at %#x) damaged at offset %+d",
                           what, (unsigned)h->serial, (unsigned)h->size, (unsigned)(uintptr_t)rz_block(h),
                           (int)(at - rz_block(h))));
    rz_report(snprintf(rz.msg, sizeof(rz.msg), "checked heap: %s at %#x", what, (unsigned)(uintptr_t)h));
}

/* rz_differs returns the first of p[0..n) that is not b, or NULL. */
static const uint8_t *rz_differs(const uint8_t *p, size_t n, uint8_t b)
{
    uint64_t w = 0x0101010101010101ull * b, v;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __builtin_memcpy(&v, p + i, 8);
        if (v != w)
            break;
    }
    for (; i < n; i++)
        if (p[i] != b)
            return p + i;
    return NULL;
}

/* rz_verify traps unless h is a live block with both zones intact. */
static void rz_verify(rz_head *h)
{
    const uint8_t *at;
    if (h->magic == RZ_FREED_MAGIC && !rz.lifetimes_off)
        rz_report(snprintf(rz.msg, sizeof(rz.msg),
                           "checked heap: block %u (%u bytes at %#x) used after it was freed (freed twice, or reallocated)",
                           (unsigned)h->serial, (unsigned)h->size, (unsigned)(uintptr_t)rz_block(h)));
    if (h->magic != RZ_MAGIC)
        rz_fail("a block header that is not one (a wild free, or the header overwritten)", h, NULL);
    if ((at = rz_differs(rz_front(h), RZ_SIZE, RZ_BYTE)))
        rz_fail("the red zone before", h, at);
    if ((at = rz_differs(rz_back(h), RZ_SIZE, RZ_BYTE)))
        rz_fail("the red zone after", h, at);
}

/* rz_verify_freed traps unless h, a block of the quarantine, still holds
 * its poison whole: no write reached it since its free. when says where
 * the check was made, for the report. */
static void rz_verify_freed(rz_head *h, const char *when)
{
    const uint8_t *at;
    if (h->magic != RZ_FREED_MAGIC || h->size_check != (uint32_t)~h->size)
        rz_fail("a freed block's header overwritten (a write after its free, or before a block)", h, NULL);
    if ((at = rz_differs(rz_front(h), 2 * RZ_SIZE + h->size, RZ_FREED_BYTE)))
        rz_report(snprintf(rz.msg, sizeof(rz.msg),
                           "checked heap: block %u (%u bytes at %#x) written after it was freed, at offset %+d (seen %s)",
                           (unsigned)h->serial, (unsigned)h->size, (unsigned)(uintptr_t)rz_block(h),
                           (int)(at - rz_block(h)), when));
}

/* rz_release hands the oldest block of the quarantine back to libc, once
 * verified. */
static void rz_release(void)
{
    rz_head *h = rz.q_oldest;
    rz_verify_freed(h, "as it left the quarantine");
    rz.q_oldest = h->next;
    if (!rz.q_oldest)
        rz.q_newest = NULL;
    rz.q_bytes -= rz_extent(h);
    h->magic = 0;
    free(h);
}

/* rz_drain empties the quarantine: when libc runs out of memory, what it
 * holds goes back first, so that the quarantine never refuses what the
 * engine that ships would give. */
static int rz_drain(void)
{
    if (!rz.q_oldest)
        return 0;
    while (rz.q_oldest)
        rz_release();
    return 1;
}

/* rz_sweep verifies every live block. */
static void rz_sweep(void)
{
    rz_head *h;
    rz.since_sweep = 0;
    for (h = rz.live; h; h = h->next)
        rz_verify(h);
}

/* rz_check is the end of a run's check: every live block's zones and every
 * quarantined block's poison. */
static void rz_check(void)
{
    rz_head *h;
    rz_sweep();
    for (h = rz.q_oldest; h; h = h->next)
        rz_verify_freed(h, "when the run ended");
}

static void *rz_malloc(size_t size)
{
    rz_head *h;
    if (size > SIZE_MAX - sizeof(rz_head) - 2 * RZ_SIZE)
        return NULL;
    if (++rz.since_sweep >= RZ_SWEEP_MIN && rz.since_sweep >= rz.nlive)
        rz_sweep();
    while (!(h = malloc(sizeof(rz_head) + 2 * RZ_SIZE + size)))
        if (!rz_drain())
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
    if (rz.lifetimes_off || rz_extent(h) > RZ_QUARANTINE_BYTES) {
        h->magic = 0;
        memset(h + 1, RZ_BYTE, 2 * RZ_SIZE + h->size);
        free(h);
        return;
    }
    h->magic = RZ_FREED_MAGIC;
    h->size_check = ~(uint32_t)h->size;
    memset(rz_front(h), RZ_FREED_BYTE, 2 * RZ_SIZE + h->size);
    h->prev = NULL;
    h->next = NULL;
    if (rz.q_newest)
        rz.q_newest->next = h;
    else
        rz.q_oldest = h;
    rz.q_newest = h;
    rz.q_bytes += rz_extent(h);
    while (rz.q_bytes > RZ_QUARANTINE_BYTES)
        rz_release();
}

static size_t rz_usable(const void *p) { return rz_of((void *)p)->size; }

/* rz_counted is what the memory limit counts of a block: what was asked,
 * rounded up to 8 bytes, and neither the zones nor a chunk header, about
 * what the production heap counts of a small block in its arenas (QuickJS's
 * own header is part of what was asked), so that a script's limits fall
 * about where they do in the engine that ships. The zones and the
 * quarantine take linear memory beyond the limit. */
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

/* rz_refuse reports whether the out-of-memory sweep's knob refuses this
 * allocation, one the memory limit could refuse (alloc.c), and counts it. */
static int rz_refuse(void)
{
    rz.allocs++;
    if (rz.fail_at == 0 || rz.allocs < rz.fail_at || (rz.allocs > rz.fail_at && !rz.fail_on))
        return 0;
    rz.refused++;
    return 1;
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

/* sb_checked_lifetime_selftest makes a lifetime error on purpose, through
 * QuickJS's own allocator as the engine's code would: what 1, a byte
 * written at offset off of a 24-byte block after its free; what 2, a
 * second free of a 24-byte block. Between the free and the use it takes
 * and frees 64 blocks of the same size, as a running engine would, so that
 * without the quarantine libc would have handed the freed block out again
 * by then. Returns 0 when the error was made and went unseen (it may still
 * be seen when the next run ends). Only the checked build exports it; no
 * script reaches it. */
EXPORT(sb_checked_lifetime_selftest) int32_t sb_checked_lifetime_selftest(int32_t what, int32_t off)
{
    void *others[64];
    uint8_t *p = js_malloc_rt(sb.rt, 24);
    int i;
    if (!p)
        return -1;
    js_free_rt(sb.rt, p);
    for (i = 0; i < 64; i++)
        others[i] = js_malloc_rt(sb.rt, 24);
    if (what == 1)
        p[off] ^= 0x5a;
    else
        js_free_rt(sb.rt, p);
    for (i = 0; i < 64; i++) {
        /* without the quarantine, the second free freed the block that
         * took p's place: its owner must not free it again */
        if (what != 1 && others[i] == (void *)p)
            continue;
        js_free_rt(sb.rt, others[i]);
    }
    return 0;
}

/* sb_checked_lifetimes turns the lifetime checks on (1, as the build
 * starts) or off (0): off, a freed block goes back to libc at once, as in
 * a heap with red zones alone, so that a test can show that the quarantine
 * and its verification are what sees a use after free. Only the checked
 * build exports it. */
EXPORT(sb_checked_lifetimes) void sb_checked_lifetimes(int32_t on)
{
    if (!on)
        rz_drain();
    rz.lifetimes_off = !on;
}

/* sb_checked_fail_allocation sets the out-of-memory sweep's knob: the
 * allocations that the memory limit could refuse (alloc.c) are counted from
 * now on, and the nth is refused as the limit refuses one (n 0: none), or
 * with from_on set, every one from the nth on. sb_checked_allocations
 * returns how many were counted since, and sb_checked_refused how many the
 * knob refused. Only the checked build exports them; no script reaches
 * them. */
EXPORT(sb_checked_fail_allocation) void sb_checked_fail_allocation(uint32_t n, int32_t from_on)
{
    rz.allocs = 0;
    rz.refused = 0;
    rz.fail_at = n;
    rz.fail_on = from_on != 0;
}

EXPORT(sb_checked_allocations) uint32_t sb_checked_allocations(void) { return rz.allocs; }

EXPORT(sb_checked_refused) uint32_t sb_checked_refused(void) { return rz.refused; }
