/*
 * sandbox.c: the only C of ours. A small shim over QuickJS's public API
 * (quickjs.h) that runs one script on one input and classifies how the run
 * ended from the engine's own state, so that the Go host never parses error
 * text. No quickjs-libc, no module loader, no std/os.
 *
 * Life of an instance (one wasm instance per run, never reused):
 *   _initialize (wasi-libc reactor constructors)
 *   sb_init()               runtime + context + console, done ahead of the request
 *   (the host runs these two once per engine and starts every instance from
 *   a copy of the memory they leave)
 *   sb_alloc() x2           host copies script and input in (each NUL-terminated)
 *   sb_run(..., seed)       seed Math.random, parse input, eval, run the job
 *                           queue, settle a Promise result, stringify, classify
 *   sb_outcome()            where the outcome is; the host copies it out and
 *                           drops the instance
 *
 * Four exports a run, no more: the host makes a handle for each export it
 * calls in every instance, and that is a cost of every instance.
 *
 * The host gives the guest exactly one import of ours, sandbox.poll, called
 * from QuickJS's interrupt handler (every 1,000 calls or backward jumps):
 * it answers whether the run's deadline has passed or its caller went away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

#include "quickjs.h"

#define EXPORT(name) __attribute__((export_name(#name)))
#define IMPORT(mod, name) __attribute__((import_module(#mod), import_name(#name)))

/* Run statuses, mirrored in Go (quickjs/instance.go). */
enum {
    SB_OK = 0,
    SB_THREW = 1,
    SB_LIMIT_CPU = 2,
    SB_LIMIT_MEMORY = 3,
    SB_LIMIT_WALLCLOCK = 4,
    SB_CANCELLED = 5,
    SB_INPUT_TOO_LARGE = 6,
    SB_INPUT_INVALID = 7,
    SB_INTERNAL = 8,
};

/* Answers of sandbox.poll. */
enum { POLL_CONTINUE = 0, POLL_DEADLINE = 1, POLL_CANCELLED = 2 };

IMPORT(sandbox, poll) int32_t host_poll(void);

/* The shadow stack is 1 MiB (linker: -z stack-size, --stack-first); QuickJS
 * may use all but a margin that covers C frames below its own checks. */
#define STACK_BUDGET (1024 * 1024 - 192 * 1024)

#define LOG_CAP (64 * 1024)
static const char log_marker[] = "\n[console output truncated at 64 KiB]\n";

static struct {
    JSRuntime *rt;
    JSContext *ctx;
    JSValue internal_error_proto; /* the realm's own InternalError.prototype */
    JSAtom then_atom;

    /* rejected promises that had no handler when they were rejected (the
     * host rejection tracker); some may have got one since */
    JSValue *rej;
    uint32_t rej_len, rej_cap;
    uint32_t rej_dropped; /* unhandled for good, past REJ_KEEP: only counted */
    int rej_frozen;       /* set while they are reported: the list stays */

    /* memory accounting (our allocator) */
    int oom;             /* an allocation was refused during this run */
    int32_t live_blocks; /* blocks the runtime holds of our allocator */

    /* interrupt budget */
    uint64_t polls, cpu_budget;
    int interrupted; /* SB_LIMIT_CPU, SB_LIMIT_WALLCLOCK or SB_CANCELLED */

    /* outcome */
    char *result;
    size_t result_len;
    char *name;
    int32_t name_len; /* -1: no name */

    /* console buffer */
    char log[LOG_CAP];
    size_t log_len;
    int log_truncated;
} sb;

/* ---- allocator: QuickJS's accounting, plus an out-of-memory flag ----
 *
 * QuickJS carves its small blocks (up to 512 bytes) out of 4 KiB arenas of
 * its own, which it takes from these functions, and takes every larger
 * block from them directly: what they count against the limit is what the
 * runtime holds of the heap, arenas whole, so the limit bounds the wasm
 * memory the engine's data can occupy. */

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
    return p;
}

static void sb_js_free(JSMallocState *s, void *p)
{
    if (!p)
        return;
    s->malloc_count--;
    s->malloc_size -= malloc_usable_size(p) + 8;
    sb.live_blocks--;
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
    return q;
}

static size_t sb_js_usable(const void *p) { return malloc_usable_size((void *)p); }

static const JSMallocFunctions sb_malloc_funcs = {
    sb_js_malloc, sb_js_free, sb_js_realloc, sb_js_usable,
};

/* ---- interrupt handler: CPU budget, then the host's deadline and cancel ---- */

static int sb_interrupt(JSRuntime *rt, void *opaque)
{
    (void)rt;
    (void)opaque;
    if (sb.interrupted)
        return 1;
    sb.polls++;
    if (sb.cpu_budget != 0 && sb.polls > sb.cpu_budget) {
        sb.interrupted = SB_LIMIT_CPU;
        return 1;
    }
    switch (host_poll()) {
    case POLL_CONTINUE:
        return 0;
    case POLL_DEADLINE:
        sb.interrupted = SB_LIMIT_WALLCLOCK;
        return 1;
    default:
        sb.interrupted = SB_CANCELLED;
        return 1;
    }
}

/* ---- console: a per-run buffer capped at LOG_CAP, truncated with a marker ---- */

static void log_append(const char *s, size_t n)
{
    size_t room;
    if (sb.log_truncated)
        return;
    room = LOG_CAP - (sizeof(log_marker) - 1) - sb.log_len;
    if (n > room) {
        /* cut at a UTF-8 boundary */
        n = room;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
        memcpy(sb.log + sb.log_len, s, n);
        sb.log_len += n;
        memcpy(sb.log + sb.log_len, log_marker, sizeof(log_marker) - 1);
        sb.log_len += sizeof(log_marker) - 1;
        sb.log_truncated = 1;
        return;
    }
    memcpy(sb.log + sb.log_len, s, n);
    sb.log_len += n;
}

/* log_value appends a string as is, anything else as JSON.stringify would
 * show it, falling back to String(v). */
static int log_value(JSContext *ctx, JSValueConst v)
{
    JSValue s;
    const char *c;
    size_t n;
    if (JS_IsString(v)) {
        s = JS_DupValue(ctx, v);
    } else {
        s = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
        if (JS_IsException(s))
            return -1;
        if (!JS_IsString(s)) {
            JS_FreeValue(ctx, s);
            s = JS_ToString(ctx, v);
            if (JS_IsException(s))
                return -1;
        }
    }
    c = JS_ToCStringLen(ctx, &n, s);
    JS_FreeValue(ctx, s);
    if (!c)
        return -1;
    log_append(c, n);
    JS_FreeCString(ctx, c);
    return 0;
}

static JSValue js_console_write(JSContext *ctx, JSValueConst this_val, int argc,
                                JSValueConst *argv, int magic)
{
    static const char *const prefix[] = {"", "", "[warn] ", "[error] "};
    int i;
    (void)this_val;
    if (magic > 0 && magic < 4)
        log_append(prefix[magic], strlen(prefix[magic]));
    for (i = 0; i < argc; i++) {
        if (i > 0)
            log_append(" ", 1);
        if (log_value(ctx, argv[i]) < 0)
            return JS_EXCEPTION;
    }
    log_append("\n", 1);
    return JS_UNDEFINED;
}

static const JSCFunctionListEntry console_funcs[] = {
    JS_CFUNC_MAGIC_DEF("log", 0, js_console_write, 0),
    JS_CFUNC_MAGIC_DEF("info", 0, js_console_write, 1),
    JS_CFUNC_MAGIC_DEF("warn", 0, js_console_write, 2),
    JS_CFUNC_MAGIC_DEF("error", 0, js_console_write, 3),
};

/* ---- promise jobs: rejections nobody handles ---- */

/* Added to quickjs.c by patches/0004: whether a handler was ever attached
 * to the promise (QuickJS's own is_handled flag). */
int JS_SandboxPromiseIsHandled(JSValueConst promise);

/* The unhandled rejections only the list holds that it keeps: about as
 * many as the console cap can show (a line is at least 39 bytes of 64 KiB),
 * few enough that keeping their reasons alive costs little of the memory
 * limit. */
#define REJ_KEEP 1024

/* rej_sweep drops from the list the promises that have got a handler, and
 * those only the list holds past the first REJ_KEEP: nothing can reach them
 * to handle them, so they are unhandled for good; they are counted
 * (sb.rej_dropped) and freed with their reasons. */
static void rej_sweep(JSContext *ctx)
{
    uint32_t i, j, kept = 0;
    JSValue v;
    for (i = j = 0; i < sb.rej_len; i++) {
        v = sb.rej[i];
        if (JS_SandboxPromiseIsHandled(v)) {
            JS_FreeValue(ctx, v);
            continue;
        }
        /* the reference count sits in the allocator's block header, just
         * before the object (quickjs.h's __js_rc, as JS_FreeValue reads it) */
        if (__js_rc(JS_VALUE_GET_PTR(v))->ref_count == 1) {
            if (kept >= REJ_KEEP) {
                sb.rej_dropped++;
                JS_FreeValue(ctx, v);
                continue;
            }
            kept++;
        }
        sb.rej[j++] = v;
    }
    sb.rej_len = j;
}

/* sb_rejection is QuickJS's host rejection tracker: it records each promise
 * rejected while it has no handler. One that gets a handler later needs no
 * search: the list is read through JS_SandboxPromiseIsHandled when it is
 * reported, and swept before it grows, so that it holds the promises that
 * may still be unhandled, and its length is at most twice the rejected
 * promises the script still holds plus REJ_KEEP. The work is a constant per
 * rejection, amortised. Its memory is the run's, counted against the
 * limit: a refused allocation leaves sb.oom set. */
static void sb_rejection(JSContext *ctx, JSValueConst promise, JSValueConst reason,
                         JS_BOOL is_handled, void *opaque)
{
    uint32_t cap;
    JSValue *p;
    (void)reason;
    (void)opaque;
    if (sb.rej_frozen)
        return;
    if (is_handled) {
        /* the usual case: a handler attached right after the rejection */
        if (sb.rej_len > 0 && JS_VALUE_GET_PTR(sb.rej[sb.rej_len - 1]) == JS_VALUE_GET_PTR(promise))
            JS_FreeValue(ctx, sb.rej[--sb.rej_len]);
        return;
    }
    if (sb.rej_len == sb.rej_cap) {
        rej_sweep(ctx);
        if (sb.rej_cap == 0 || sb.rej_len > sb.rej_cap / 2) {
            cap = sb.rej_cap ? 2 * sb.rej_cap : 16;
            p = js_realloc_rt(JS_GetRuntime(ctx), sb.rej, cap * sizeof(JSValue));
            if (!p)
                return;
            sb.rej = p;
            sb.rej_cap = cap;
        }
    }
    sb.rej[sb.rej_len++] = JS_DupValue(ctx, promise);
}

/* ---- exports ---- */

EXPORT(sb_alloc) void *sb_alloc(uint32_t n) { return malloc(n ? n : 1); }

/* sb_init creates the runtime and context. It runs ahead of any request;
 * returns 0 on success. */
EXPORT(sb_init) int32_t sb_init(void)
{
    JSValue global, console, ctor;
    JSAtom atom;

    sb.rt = JS_NewRuntime2(&sb_malloc_funcs, NULL);
    if (!sb.rt)
        return -1;
    JS_SetMaxStackSize(sb.rt, STACK_BUDGET);
    JS_SetInterruptHandler(sb.rt, sb_interrupt, NULL);
    JS_SetHostPromiseRejectionTracker(sb.rt, sb_rejection, NULL);
    sb.ctx = JS_NewContext(sb.rt);
    if (!sb.ctx)
        return -2;

    global = JS_GetGlobalObject(sb.ctx);

    /* Nothing of the host exists to be reached; drop what a single-run,
     * single-threaded sandbox has no use for either. */
    atom = JS_NewAtom(sb.ctx, "SharedArrayBuffer");
    JS_DeleteProperty(sb.ctx, global, atom, 0);
    JS_FreeAtom(sb.ctx, atom);

    console = JS_NewObject(sb.ctx);
    if (JS_SetPropertyFunctionList(sb.ctx, console, console_funcs,
                                   sizeof(console_funcs) / sizeof(console_funcs[0])) < 0) {
        JS_FreeValue(sb.ctx, console);
        JS_FreeValue(sb.ctx, global);
        return -4;
    }
    /* the definition takes console, failing or not */
    if (JS_DefinePropertyValueStr(sb.ctx, global, "console", console,
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        JS_FreeValue(sb.ctx, global);
        return -4;
    }

    sb.then_atom = JS_NewAtom(sb.ctx, "then");

    ctor = JS_GetPropertyStr(sb.ctx, global, "InternalError");
    sb.internal_error_proto = JS_GetPropertyStr(sb.ctx, ctor, "prototype");
    JS_FreeValue(sb.ctx, ctor);
    JS_FreeValue(sb.ctx, global);
    if (!JS_IsObject(sb.internal_error_proto))
        return -3;
    return 0;
}

/* Added to quickjs.c by patches/0003: sets the context's Math.random state.
 * Instances start from one memory image taken after sb_init, which holds
 * the image's own time-based seed; sb_run reseeds each from the host's. */
void JS_SandboxSeedRandom(JSContext *ctx, uint64_t seed);

/* set_text stores a copy of s[0..n) (NUL-terminated) in *dst, outside the
 * JS heap. */
static int set_text(char **dst, size_t *dst_len, const char *s, size_t n)
{
    *dst = malloc(n + 1);
    if (!*dst)
        return -1;
    memcpy(*dst, s, n);
    (*dst)[n] = 0;
    *dst_len = n;
    return 0;
}

static int set_text_value(JSContext *ctx, char **dst, size_t *dst_len, JSValueConst s)
{
    size_t n;
    const char *c = JS_ToCStringLen(ctx, &n, s);
    int r;
    if (!c)
        return -1;
    r = set_text(dst, dst_len, c, n);
    JS_FreeCString(ctx, c);
    return r;
}

static int set_result(const char *s, size_t n) { return set_text(&sb.result, &sb.result_len, s, n); }

static int set_result_value(JSContext *ctx, JSValueConst s)
{
    return set_text_value(ctx, &sb.result, &sb.result_len, s);
}

/* is_engine_oom reports whether v is an InternalError of this realm whose own
 * message is "out of memory": the engine's own error, or one the script forged
 * (ADR 0064 reports a forged kill as the kill it forges). It reads own data
 * properties only, so no script code runs. */
static int is_engine_oom(JSContext *ctx, JSValueConst v)
{
    JSValue proto;
    JSPropertyDescriptor desc;
    JSAtom atom;
    int same, found, r = 0;
    const char *c;

    if (!JS_IsError(ctx, v))
        return 0;
    proto = JS_GetPrototype(ctx, v); /* Error objects are not exotic: no trap */
    same = JS_VALUE_GET_PTR(proto) == JS_VALUE_GET_PTR(sb.internal_error_proto);
    JS_FreeValue(ctx, proto);
    if (!same)
        return 0;
    atom = JS_NewAtom(ctx, "message");
    found = JS_GetOwnProperty(ctx, &desc, v, atom);
    JS_FreeAtom(ctx, atom);
    if (found <= 0) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return 0;
    }
    if (!(desc.flags & JS_PROP_GETSET) && JS_IsString(desc.value)) {
        c = JS_ToCString(ctx, desc.value);
        if (c) {
            r = strcmp(c, "out of memory") == 0;
            JS_FreeCString(ctx, c);
        }
    }
    JS_FreeValue(ctx, desc.value);
    JS_FreeValue(ctx, desc.getter);
    JS_FreeValue(ctx, desc.setter);
    return r;
}

/* limit_hit is the limit this run has hit so far, 0 if none: an interrupt
 * (CPU budget, deadline, cancellation) first, then a refused allocation. A
 * hit limit stays the run's outcome whatever script code does afterwards,
 * even when it catches the error (ADR 0064). */
static int limit_hit(void)
{
    if (sb.interrupted)
        return sb.interrupted;
    return sb.oom ? SB_LIMIT_MEMORY : 0;
}

/* A thrown value described: its message, and its name when that is a
 * string (name_len -1: none). */
struct desc {
    char *msg;
    size_t msg_len;
    char *name;
    int32_t name_len;
};

/* describe_value fills name (only when a string) and message of a thrown
 * value, or of a rejected promise's reason. Getters, proxy traps, toString
 * and Symbol.toPrimitive run as script code, under the same limits; when
 * they throw, the field falls back. Once a limit is hit it stops, running no
 * more script code: the caller reports the limit (limit_hit), never the
 * description. */
static void describe_value(JSContext *ctx, JSValueConst exc, struct desc *d)
{
    JSValue v;
    const char *c;
    size_t n;

    d->msg = NULL;
    d->msg_len = 0;
    d->name = NULL;
    d->name_len = -1;
    if (JS_IsObject(exc)) {
        v = JS_GetPropertyStr(ctx, exc, "name");
        if (JS_IsException(v)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
        } else {
            if (JS_IsString(v)) {
                c = JS_ToCStringLen(ctx, &n, v);
                if (c) {
                    size_t ignored;
                    if (set_text(&d->name, &ignored, c, n) == 0)
                        d->name_len = (int32_t)n;
                    JS_FreeCString(ctx, c);
                } else {
                    JS_FreeValue(ctx, JS_GetException(ctx));
                }
            }
            JS_FreeValue(ctx, v);
        }
        if (limit_hit())
            return;
        v = JS_GetPropertyStr(ctx, exc, "message");
        if (JS_IsException(v)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
        } else if (JS_IsString(v)) {
            int r = set_text_value(ctx, &d->msg, &d->msg_len, v);
            JS_FreeValue(ctx, v);
            if (r == 0)
                return;
            JS_FreeValue(ctx, JS_GetException(ctx));
        } else {
            JS_FreeValue(ctx, v);
        }
        if (limit_hit())
            return;
    }
    if (JS_VALUE_GET_TAG(exc) == JS_TAG_SYMBOL) {
        /* String(symbol), which ToString refuses: "Symbol(description)";
         * the description getter is Symbol.prototype's, which a script
         * may replace */
        JSValue dv = JS_GetPropertyStr(ctx, exc, "description");
        const char *dc = JS_IsString(dv) ? JS_ToCStringLen(ctx, &n, dv) : "";
        if (dc) {
            size_t dn = JS_IsString(dv) ? n : 0;
            char *buf = malloc(dn + 9);
            if (buf) {
                memcpy(buf, "Symbol(", 7);
                memcpy(buf + 7, dc, dn);
                buf[7 + dn] = ')';
                d->msg = buf;
                d->msg_len = dn + 8;
                buf[dn + 8] = 0;
            }
            if (JS_IsString(dv))
                JS_FreeCString(ctx, dc);
        }
        JS_FreeValue(ctx, dv);
        if (JS_HasException(ctx))
            JS_FreeValue(ctx, JS_GetException(ctx));
        if (d->msg || limit_hit())
            return;
    }
    v = JS_ToString(ctx, exc);
    if (!JS_IsException(v)) {
        int r = set_text_value(ctx, &d->msg, &d->msg_len, v);
        JS_FreeValue(ctx, v);
        if (r == 0)
            return;
    }
    JS_FreeValue(ctx, JS_GetException(ctx));
    if (limit_hit())
        return;
    set_text(&d->msg, &d->msg_len, "thrown value could not be converted to a string",
             sizeof("thrown value could not be converted to a string") - 1);
}

/* describe_thrown describes a thrown value as the run's outcome. */
static void describe_thrown(JSContext *ctx, JSValueConst exc)
{
    struct desc d;
    describe_value(ctx, exc, &d);
    sb.result = d.msg;
    sb.result_len = d.msg_len;
    sb.name = d.name;
    sb.name_len = d.name_len;
}

/* classify_exception decides how a run that ended in an exception ended:
 * a limit hit at any point of the run, in the script body, in a toJSON of
 * its result or while its thrown value is described, before the script's
 * own exception. */
static int classify_exception(JSContext *ctx)
{
    JSValue exc = JS_GetException(ctx);
    int status = limit_hit();

    if (!status && is_engine_oom(ctx, exc))
        status = SB_LIMIT_MEMORY;
    if (status) {
        JS_FreeValue(ctx, exc);
        return status;
    }
    describe_thrown(ctx, exc);
    JS_FreeValue(ctx, exc);
    /* describing runs script code: a limit it hits is the outcome */
    status = limit_hit();
    if (status)
        return status;
    return sb.result ? SB_THREW : SB_INTERNAL;
}

/* sb_thenable_job is ECMAScript's NewPromiseResolveThenableJob for a
 * thenable result: then.call(thenable, resolve, reject), a throw rejecting.
 * argv: resolve, reject, thenable, then. */
static JSValue sb_thenable_job(JSContext *ctx, int argc, JSValueConst *argv)
{
    JSValue r, e;
    (void)argc;
    r = JS_Call(ctx, argv[3], argv[2], 2, argv);
    if (JS_IsException(r)) {
        e = JS_GetException(ctx);
        r = JS_Call(ctx, argv[1], JS_UNDEFINED, 1, (JSValueConst *)&e);
        JS_FreeValue(ctx, e);
    }
    return r;
}

/* run_jobs runs the job queue until no job is left: promise reactions,
 * await continuations, thenable jobs, import() (which has no loader and
 * rejects), FinalizationRegistry callbacks, and the jobs they queue in
 * turn. Jobs are script code under the run's limits: the interrupt handler
 * is the runtime's, and every job calls a function, which ticks it. An
 * interrupt ends the run at once, whatever a promise made of it (a reaction
 * job catches the InternalError into a rejection, so the job itself
 * succeeds). A refused allocation does not stop the queue: a script may
 * catch the error and recover, as in its body. A job that throws (a
 * FinalizationRegistry callback) ends the run as a throw in the body does.
 * Returns 0, or the run's status. */
static int run_jobs(void)
{
    JSContext *jctx;
    int r;
    for (;;) {
        if (sb.interrupted)
            return sb.interrupted;
        r = JS_ExecutePendingJob(sb.rt, &jctx);
        if (r == 0)
            return 0;
        if (r < 0)
            return classify_exception(jctx);
    }
}

/* report_unhandled writes every rejection still unhandled once no job is
 * left, but the result's own, to the console as console.error would write
 * it: "[error] unhandled promise rejection: " and the reason described as a
 * thrown value is ("Name: message", or the message alone when the name is
 * not a string); then a line that counts those dropped past REJ_KEEP, if
 * any. For ADR 0064's precedence an unhandled rejection is an uncaught
 * exception: after a refused allocation, or with the engine's out-of-memory
 * error as its reason, it is the memory limit; otherwise it changes no
 * outcome. Describing runs script code, under the limits. Returns 0, or the
 * run's status. */
static int report_unhandled(JSContext *ctx, JSValueConst result)
{
    static const char prefix[] = "[error] unhandled promise rejection: ";
    JSValue p, reason;
    struct desc d;
    uint32_t i;
    int status;

    rej_sweep(ctx);
    sb.rej_frozen = 1; /* script code run here changes nothing of the list */
    if (sb.oom && sb.rej_dropped)
        return SB_LIMIT_MEMORY;
    for (i = 0; i < sb.rej_len; i++) {
        p = sb.rej[i];
        if (JS_SandboxPromiseIsHandled(p) ||
            (JS_IsObject(result) && JS_VALUE_GET_PTR(p) == JS_VALUE_GET_PTR(result)))
            continue;
        reason = JS_PromiseResult(ctx, p);
        if (sb.oom || is_engine_oom(ctx, reason)) {
            JS_FreeValue(ctx, reason);
            return SB_LIMIT_MEMORY;
        }
        if (!sb.log_truncated) {
            describe_value(ctx, reason, &d);
            if (!limit_hit()) {
                log_append(prefix, sizeof(prefix) - 1);
                if (d.name_len >= 0) {
                    log_append(d.name, d.name_len);
                    if (d.msg_len > 0)
                        log_append(": ", 2);
                }
                if (d.msg)
                    log_append(d.msg, d.msg_len);
                log_append("\n", 1);
            }
            free(d.msg);
            free(d.name);
        }
        JS_FreeValue(ctx, reason);
        status = limit_hit();
        if (status)
            return status;
    }
    if (sb.rej_dropped) {
        char line[80];
        int n = snprintf(line, sizeof(line), "[error] %u more unhandled promise rejections, not shown\n",
                         (unsigned)sb.rej_dropped);
        if (n > 0 && (size_t)n < sizeof(line))
            log_append(line, (size_t)n);
    }
    return 0;
}

static const char never_settled[] =
    "the result is a promise that never settled: no job was left that could settle it";

/* settle runs the job queue once the global code has completed, and
 * replaces *val, the completion value, by the run's result. A Promise gives
 * its settled value, read from its state (its then is not called). A
 * thenable, an object whose then is a function (read once, as await reads
 * it), gives the value a promise of ours is settled with by a job that calls
 * that then, queued after the jobs already pending. Anything else is itself,
 * serialised after the jobs have run. A rejection is the run's throw, its
 * reason described as a thrown value is; a promise still pending once no
 * job is left is the script's own outcome, a throw that says so. Returns 0
 * with *val set, or the run's status with *val freed. */
static int settle(JSContext *ctx, JSValue *val)
{
    JSValue v = *val, p = JS_UNDEFINED, then, funcs[2];
    JSValueConst args[4];
    int status, r;

    *val = JS_UNDEFINED;
    if (sb.interrupted) {
        JS_FreeValue(ctx, v);
        return sb.interrupted;
    }
    if (JS_IsObject(v)) {
        if ((int)JS_PromiseState(ctx, v) >= 0) {
            p = v;
            v = JS_UNDEFINED;
        } else {
            then = JS_GetProperty(ctx, v, sb.then_atom);
            if (JS_IsException(then)) {
                JS_FreeValue(ctx, v);
                return classify_exception(ctx);
            }
            if (JS_IsFunction(ctx, then)) {
                p = JS_NewPromiseCapability(ctx, funcs);
                if (JS_IsException(p)) {
                    JS_FreeValue(ctx, then);
                    JS_FreeValue(ctx, v);
                    return classify_exception(ctx);
                }
                args[0] = funcs[0];
                args[1] = funcs[1];
                args[2] = v;
                args[3] = then;
                r = JS_EnqueueJob(ctx, sb_thenable_job, 4, args);
                JS_FreeValue(ctx, funcs[0]);
                JS_FreeValue(ctx, funcs[1]);
                JS_FreeValue(ctx, then);
                JS_FreeValue(ctx, v);
                v = JS_UNDEFINED;
                if (r < 0) {
                    JS_FreeValue(ctx, p);
                    return classify_exception(ctx);
                }
            } else {
                JS_FreeValue(ctx, then);
            }
        }
    }
    status = run_jobs();
    if (status == 0)
        status = report_unhandled(ctx, p);
    if (status) {
        JS_FreeValue(ctx, v);
        JS_FreeValue(ctx, p);
        return status;
    }
    if (JS_IsUndefined(p)) {
        *val = v;
        return 0;
    }
    switch (JS_PromiseState(ctx, p)) {
    case JS_PROMISE_FULFILLED:
        *val = JS_PromiseResult(ctx, p);
        JS_FreeValue(ctx, p);
        return 0;
    case JS_PROMISE_REJECTED:
        JS_Throw(ctx, JS_PromiseResult(ctx, p));
        JS_FreeValue(ctx, p);
        return classify_exception(ctx);
    default:
        JS_FreeValue(ctx, p);
        /* a throw after a refused allocation is the memory limit; and the
         * reaction that would have settled it may be one the engine had
         * no memory to queue */
        if (sb.oom)
            return SB_LIMIT_MEMORY;
        sb.name_len = -1;
        return set_result(never_settled, sizeof(never_settled) - 1) == 0 ? SB_THREW : SB_LIMIT_MEMORY;
    }
}

/* sb_run gives Math.random the host's seed, parses the input, evaluates the
 * script as global code with the input bound to the global `input`, runs
 * the job queue (settle), and stores the result as JSON text.
 * script[script_len] and input[input_len] must be NUL. */
EXPORT(sb_run)
int32_t sb_run(const char *script, uint32_t script_len, const char *input,
               uint32_t input_len, uint64_t mem_limit, uint64_t cpu_budget, uint64_t seed)
{
    JSContext *ctx = sb.ctx;
    JSValue in, global, val, json;
    int status;

    JS_SandboxSeedRandom(ctx, seed);
    sb.oom = 0;
    sb.polls = 0;
    sb.interrupted = 0;
    sb.cpu_budget = cpu_budget;
    JS_UpdateStackTop(sb.rt);
    JS_SetMemoryLimit(sb.rt, (size_t)mem_limit);

    in = JS_ParseJSON(ctx, input, input_len, "<input>");
    if (JS_IsException(in)) {
        JSValue exc = JS_GetException(ctx);
        if (sb.interrupted) {
            status = sb.interrupted;
        } else if (sb.oom || is_engine_oom(ctx, exc)) {
            status = SB_INPUT_TOO_LARGE;
        } else {
            /* a nesting deeper than the engine's stack is a size too, and
             * so is an error message the memory limit cannot hold */
            describe_thrown(ctx, exc);
            if (sb.interrupted)
                status = sb.interrupted;
            else if (sb.oom || (sb.result && strcmp(sb.result, "stack overflow") == 0))
                status = SB_INPUT_TOO_LARGE;
            else
                status = SB_INPUT_INVALID;
        }
        JS_FreeValue(ctx, exc);
        return status;
    }
    global = JS_GetGlobalObject(ctx);
    if (JS_DefinePropertyValueStr(ctx, global, "input", in,
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        JS_FreeValue(ctx, global);
        JS_FreeValue(ctx, JS_GetException(ctx));
        return sb.oom ? SB_INPUT_TOO_LARGE : SB_INTERNAL;
    }
    JS_FreeValue(ctx, global);

    val = JS_Eval(ctx, script, script_len, "<script>", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(val))
        return classify_exception(ctx); /* no job runs after a throw */
    status = settle(ctx, &val);
    if (status)
        return status;

    if (JS_IsUndefined(val)) {
        JS_FreeValue(ctx, val);
        return set_result("null", 4) == 0 ? SB_OK : SB_LIMIT_MEMORY;
    }
    json = JS_JSONStringify(ctx, val, JS_UNDEFINED, JS_UNDEFINED);
    JS_FreeValue(ctx, val);
    if (JS_IsException(json))
        return classify_exception(ctx);
    if (!JS_IsString(json)) { /* a function or a symbol */
        JS_FreeValue(ctx, json);
        return set_result("null", 4) == 0 ? SB_OK : SB_LIMIT_MEMORY;
    }
    status = set_result_value(ctx, json);
    JS_FreeValue(ctx, json);
    if (status < 0) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return SB_LIMIT_MEMORY;
    }
    if (sb.interrupted)
        return sb.interrupted;
    return SB_OK;
}

/* sb_teardown frees what the shim and the runtime hold, the context and the
 * runtime, as an embedder that kept the instance would, and returns the
 * number of blocks still taken from the runtime's allocator: 0 unless
 * something leaked. Nothing runs in the instance afterwards. The host never
 * calls it (an instance is dropped whole); tests do, after runs of every
 * kind, so that a leak in QuickJS's small-block allocator or in the shim is
 * seen. */
EXPORT(sb_teardown) int32_t sb_teardown(void)
{
    uint32_t i;
    for (i = 0; i < sb.rej_len; i++)
        JS_FreeValue(sb.ctx, sb.rej[i]);
    js_free_rt(sb.rt, sb.rej);
    sb.rej = NULL;
    sb.rej_len = sb.rej_cap = 0;
    JS_FreeValue(sb.ctx, sb.internal_error_proto);
    JS_FreeAtom(sb.ctx, sb.then_atom);
    JS_FreeContext(sb.ctx);
    JS_FreeRuntime(sb.rt);
    sb.ctx = NULL;
    sb.rt = NULL;
    return sb.live_blocks;
}

/* The outcome of the run, as sb_outcome lays it out for the host
 * (quickjs/instance.go reads it): little-endian, 40 bytes. */
static struct {
    uint32_t result_ptr, result_len; /* the result's JSON text, or the message */
    uint32_t name_ptr;
    int32_t name_len;                /* -1: the thrown value had no string name */
    uint32_t log_ptr, log_len;       /* the console buffer */
    uint64_t polls;                  /* calls of the interrupt handler */
    int32_t oom;                     /* an allocation was refused */
    int32_t reserved;
} outcome;

/* sb_outcome returns where the outcome of the run is. After a trap it still
 * answers: oom tells the host whether an allocation had been refused, since
 * QuickJS has allocation-failure paths that abort or misbehave
 * (docs/security.md), and such a trap is the memory limit at work. */
EXPORT(sb_outcome) const void *sb_outcome(void)
{
    outcome.result_ptr = (uint32_t)(uintptr_t)sb.result;
    outcome.result_len = (uint32_t)sb.result_len;
    outcome.name_ptr = (uint32_t)(uintptr_t)sb.name;
    outcome.name_len = sb.name_len;
    outcome.log_ptr = (uint32_t)(uintptr_t)sb.log;
    outcome.log_len = (uint32_t)sb.log_len;
    outcome.polls = sb.polls;
    outcome.oom = sb.oom;
    return &outcome;
}
