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
 *   a copy of the memory they leave, then calls sb_seed)
 *   sb_seed(seed)           Math.random's state, fresh for this instance
 *   sb_alloc() x2           host copies script and input in (each NUL-terminated)
 *   sb_run(...)             parse input, eval, stringify, classify
 *   sb_result_* / sb_log_*  host copies the outcome out; the instance is dropped
 *
 * The host gives the guest exactly one import of ours, sandbox.poll, called
 * from QuickJS's interrupt handler (about every 10,000 bytecode operations):
 * it answers whether the run's deadline has passed or its caller went away.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

#include "quickjs.h"

#define EXPORT(name) __attribute__((export_name(#name)))
#define IMPORT(mod, name) __attribute__((import_module(#mod), import_name(#name)))

/* Run statuses, mirrored in Go (quickjs/shim.go). */
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

    /* memory accounting (our allocator) */
    size_t mem_used, mem_limit;
    int oom; /* an allocation was refused during this run */

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

/* ---- allocator: QuickJS's accounting, plus an out-of-memory flag ---- */

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
    return p;
}

static void sb_js_free(JSMallocState *s, void *p)
{
    if (!p)
        return;
    s->malloc_count--;
    s->malloc_size -= malloc_usable_size(p) + 8;
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

/* ---- exports ---- */

EXPORT(sb_alloc) void *sb_alloc(uint32_t n) { return malloc(n ? n : 1); }

EXPORT(sb_free) void sb_free(void *p) { free(p); }

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
    JS_SetPropertyFunctionList(sb.ctx, console, console_funcs,
                               sizeof(console_funcs) / sizeof(console_funcs[0]));
    JS_DefinePropertyValueStr(sb.ctx, global, "console", console,
                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);

    ctor = JS_GetPropertyStr(sb.ctx, global, "InternalError");
    sb.internal_error_proto = JS_GetPropertyStr(sb.ctx, ctor, "prototype");
    JS_FreeValue(sb.ctx, ctor);
    JS_FreeValue(sb.ctx, global);
    if (!JS_IsObject(sb.internal_error_proto))
        return -3;
    return 0;
}

/* Defined in quickjs.c by build.sh: sets the context's Math.random state. */
void JS_SandboxSeedRandom(JSContext *ctx, uint64_t seed);

/* sb_seed gives Math.random a state of the host's choosing. Instances start
 * from one memory image taken after sb_init, which holds the image's own
 * time-based seed; the host reseeds each one from its CSPRNG. */
EXPORT(sb_seed) void sb_seed(uint64_t seed) { JS_SandboxSeedRandom(sb.ctx, seed); }

static int set_result(const char *s, size_t n)
{
    sb.result = malloc(n + 1);
    if (!sb.result)
        return -1;
    memcpy(sb.result, s, n);
    sb.result[n] = 0;
    sb.result_len = n;
    return 0;
}

static int set_result_value(JSContext *ctx, JSValueConst s)
{
    size_t n;
    const char *c = JS_ToCStringLen(ctx, &n, s);
    int r;
    if (!c)
        return -1;
    r = set_result(c, n);
    JS_FreeCString(ctx, c);
    return r;
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

/* describe_thrown fills name (only when a string) and message of a thrown
 * value. Getters, proxy traps, toString and Symbol.toPrimitive run as script
 * code, under the same limits; when they throw, the field falls back. Once a
 * limit is hit it stops, running no more script code: the caller reports the
 * limit (limit_hit), never the description. */
static void describe_thrown(JSContext *ctx, JSValueConst exc)
{
    JSValue v;
    const char *c;
    size_t n;

    sb.name_len = -1;
    if (JS_IsObject(exc)) {
        v = JS_GetPropertyStr(ctx, exc, "name");
        if (JS_IsException(v)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
        } else {
            if (JS_IsString(v)) {
                c = JS_ToCStringLen(ctx, &n, v);
                if (c) {
                    sb.name = malloc(n + 1);
                    if (sb.name) {
                        memcpy(sb.name, c, n);
                        sb.name[n] = 0;
                        sb.name_len = (int32_t)n;
                    }
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
            int r = set_result_value(ctx, v);
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
        JSValue d = JS_GetPropertyStr(ctx, exc, "description");
        const char *dc = JS_IsString(d) ? JS_ToCStringLen(ctx, &n, d) : "";
        if (dc) {
            size_t dn = JS_IsString(d) ? n : 0;
            char *buf = malloc(dn + 9);
            if (buf) {
                memcpy(buf, "Symbol(", 7);
                memcpy(buf + 7, dc, dn);
                buf[7 + dn] = ')';
                sb.result = buf;
                sb.result_len = dn + 8;
                buf[dn + 8] = 0;
            }
            if (JS_IsString(d))
                JS_FreeCString(ctx, dc);
        }
        JS_FreeValue(ctx, d);
        if (JS_HasException(ctx))
            JS_FreeValue(ctx, JS_GetException(ctx));
        if (sb.result || limit_hit())
            return;
    }
    v = JS_ToString(ctx, exc);
    if (!JS_IsException(v)) {
        int r = set_result_value(ctx, v);
        JS_FreeValue(ctx, v);
        if (r == 0)
            return;
    }
    JS_FreeValue(ctx, JS_GetException(ctx));
    if (limit_hit())
        return;
    set_result("thrown value could not be converted to a string",
               sizeof("thrown value could not be converted to a string") - 1);
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

/* sb_run parses the input, evaluates the script as global code with the input
 * bound to the global `input`, and stores the completion value as JSON text.
 * script[script_len] and input[input_len] must be NUL. */
EXPORT(sb_run)
int32_t sb_run(const char *script, uint32_t script_len, const char *input,
               uint32_t input_len, uint64_t mem_limit, uint64_t cpu_budget)
{
    JSContext *ctx = sb.ctx;
    JSValue in, global, val, json;
    int status;

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
        return classify_exception(ctx);

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

EXPORT(sb_result_ptr) const char *sb_result_ptr(void) { return sb.result; }
EXPORT(sb_result_len) uint32_t sb_result_len(void) { return (uint32_t)sb.result_len; }
EXPORT(sb_name_ptr) const char *sb_name_ptr(void) { return sb.name; }
EXPORT(sb_name_len) int32_t sb_name_len(void) { return sb.name_len; }
EXPORT(sb_log_ptr) const char *sb_log_ptr(void) { return sb.log; }
EXPORT(sb_log_len) uint32_t sb_log_len(void) { return (uint32_t)sb.log_len; }
EXPORT(sb_polls) uint64_t sb_polls(void) { return sb.polls; }
/* sb_oom tells the host, after a trap, whether an allocation had been
 * refused: QuickJS has allocation-failure paths that abort or misbehave
 * (bellard/quickjs#406), and such a trap is the memory limit at work. */
EXPORT(sb_oom) int32_t sb_oom(void) { return sb.oom; }
