/*
 * sandbox.c: our shim over QuickJS's public API (quickjs.h), the one file
 * build.sh compiles. It runs one script on one input and classifies how the
 * run ended from the engine's own state, so that the Go host never parses
 * error text. No quickjs-libc, no module loader, no std/os.
 *
 * Life of an instance (a wasm instance serves run after run, its memory
 * restored to an image before each):
 *   _initialize (wasi-libc reactor constructors)
 *   sb_init()               runtime + context + console, done ahead of the request
 *   sb_layout()             where the stack ends and the heap's end is kept
 *   sb_stack_pointer()      the stack's pointer, the one global a call
 *                           moves: at the stack's top between calls, which
 *                           the host checks before it resets an instance
 *   (the host runs these once per engine, and restores every instance to a
 *   copy of the memory they leave: the set-up image)
 *   sb_alloc(), sb_compile  the script copied in and compiled as global code,
 *                           nothing of it run (the host keeps the memory this
 *                           leaves as the script's image, and restores later
 *                           runs of the script from it instead)
 *   sb_alloc()              host copies the input in (NUL-terminated)
 *   sb_run(..., seed)       seed Math.random, parse input, run the compiled
 *                           script, run the job queue, settle a Promise
 *                           result, stringify, classify
 *   sb_outcome()            where the outcome is; the host copies it out and
 *                           restores the memory for the next run
 *
 * Five exports a run and one between runs, no more: the host makes a
 * handle for each export it calls in every instance, a cost of every
 * instance it builds.
 *
 * The host gives the guest two imports of ours: sandbox.poll, called from
 * QuickJS's interrupt handler (every 1,000 calls or backward jumps), which
 * answers whether the run's deadline has passed or its caller went away;
 * and sandbox.mark, which sb_run calls where one phase of the run ends and
 * the next begins, so that the host can say where a run's time went. The
 * checked build (build.sh CHECKED=1) adds a third, checked.fault, through
 * which its heap reports a damaged red zone or a use after free
 * (redzone.c), and exports for tests only (sb_checked_*).
 *
 * The shim is one translation unit split into files by concern, as
 * go-sqlite3 splits its own: the parts share static state, and the compiler
 * sees them whole. Each part uses only what the parts above it define. The
 * bytes of sandbox.wasm follow the order in which the compiler meets the
 * exports (all in run.c, but the checked build's test export) and what they
 * call; TestWasmRebuildsIdentically
 * (SANDBOX_REBUILD_WASM=1) compares them with the committed ones, so a move
 * that changes them shows there.
 */
#include "sandbox.h"

#include "alloc.c"     /* QuickJS's allocator, counted against the memory limit;
                          in the checked build, over redzone.c's heap */
#include "interrupt.c" /* the CPU budget, then the host's deadline and cancel */
#include "console.c"   /* console.*, into a capped buffer */
#include "classify.c"  /* how a run ended, and a thrown value described */
#include "jobs.c"      /* the job queue, a promise result, unhandled rejections */
#include "run.c"       /* the exports: set-up, the run, the outcome, teardown */
