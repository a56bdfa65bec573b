/*
 * run.c: the exports the host calls, in the order of an instance's life:
 * sb_alloc and sb_init ahead of any request, sb_layout once; sb_compile for
 * the script, sb_run for the one run, sb_outcome to read how it ended;
 * sb_teardown for tests only.
 */

#include "sandbox.h"

/* QuickJS may use all of the shadow stack but a margin that covers C frames
 * below its own checks. */
#define STACK_BUDGET (SB_STACK_SIZE - 192 * 1024)

EXPORT(sb_alloc) void *sb_alloc(uint32_t n) { return malloc(n ? n : 1); }

/* sb_init creates the runtime and context. It runs ahead of any request;
 * returns 0 on success. */
EXPORT(sb_init) int32_t sb_init(void)
{
    JSValue global, console, ctor;
    JSAtom atom;

    /* the stack is where SB_STACK_SIZE says, below the state and the heap
     * (the host clears it between runs as such) */
    if ((uintptr_t)__builtin_frame_address(0) > SB_STACK_SIZE || (uintptr_t)&sb < SB_STACK_SIZE)
        return -5;
    sb.compiled = JS_UNDEFINED;
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

/* sandbox.mark: the host notes the time at which a phase of the run begins
 * (MARK_RUN, MARK_SERIALISE). */
IMPORT(sandbox, mark) void host_mark(int32_t phase);

/* Added to quickjs.c by patches/0003: sets the context's Math.random state.
 * Instances start from a memory image taken after sb_init, or after
 * sb_compile, which holds the image's own seed; sb_run reseeds each from the
 * host's. */
void JS_SandboxSeedRandom(JSContext *ctx, uint64_t seed);

/* sb_compile compiles the script as global code, and keeps what the compile
 * gives for sb_run: the function, or the exception that the compile threw
 * (sb.compiled), with what the compile held at most and holds once done,
 * above the heap it began on. The compile runs under mem_limit, the
 * engine's maximum memory limit, so that what it gives is the script's
 * alone: a run under a smaller limit is held to that limit by sb_run. No
 * script code runs, no clock is read, no interrupt is polled: the same
 * script compiled on the same image gives the same memory, byte for byte,
 * which the host keeps as the script's image and starts its runs from.
 * script[script_len] must be NUL; the host's copy of the script
 * (sb_alloc) is freed. Returns sb.compile_status. */
EXPORT(sb_compile) int32_t sb_compile(char *script, uint32_t script_len, uint64_t mem_limit)
{
    JSContext *ctx = sb.ctx;
    JSValue fn;
    size_t before = sb.heap;

    sb.oom = 0;
    sb.peak = before;
    JS_UpdateStackTop(sb.rt);
    JS_SetMemoryLimit(sb.rt, (size_t)mem_limit);
    fn = JS_Eval(ctx, script, script_len, "<script>", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
    free(script);
    if (JS_IsException(fn)) {
        sb.compiled = JS_GetException(ctx);
        sb.compile_status = sb.oom ? COMPILED_OOM : COMPILED_THREW;
    } else {
        sb.compiled = fn;
        sb.compile_status = COMPILED_OK;
    }
    /* collect what the compile left for the collector, and set the next
     * collection where QuickJS sets it after one: the run starts with the
     * heap the script needs, not a collection due at its first objects,
     * which would trace the whole compiled script in every run */
    JS_RunGC(sb.rt);
    JS_SetGCThreshold(sb.rt, sb.heap + (sb.heap >> 1));
    sb.compile_peak = sb.peak - before;
    sb.compile_kept = sb.heap > before ? sb.heap - before : 0;
    sb.oom = 0;
    sb.peak = sb.heap;
    /* the checked build's sweep is at the end of the run (sb_run), which
     * the compile is the first part of */
    return sb.compile_status;
}

/* run gives Math.random the host's seed, parses the input, binds it to the
 * global `input`, then evaluates the compiled script (sb_compile), runs the
 * job queue (settle), and stores the result as JSON text.
 * input[input_len] must be NUL.
 *
 * The order of a run is that of parse-then-compile: an input that does not
 * fit or is not JSON is the outcome before the script's own failure to
 * compile. The compiled script is in the heap already, so while the input
 * is parsed the limit is raised by what it holds: the input is held to the
 * limit as it would be with nothing compiled yet. Then the compile is
 * counted as though it ran there: its peak on top of what the input left
 * must fit the limit, or the run is the memory limit, whatever limit the
 * script was compiled under. */
static int32_t run(const char *input, uint32_t input_len, uint64_t mem_limit, uint64_t cpu_budget, uint64_t seed)
{
    JSContext *ctx = sb.ctx;
    JSValue in, global, val, json, fn;
    size_t kept = sb.compile_kept, need;
    int status;

    JS_SandboxSeedRandom(ctx, seed);
    sb.oom = 0;
    sb.polls = 0;
    sb.interrupted = 0;
    sb.cpu_budget = cpu_budget;
    sb.compile_error = 0;
    sb.peak = sb.heap;
    JS_UpdateStackTop(sb.rt);
    if (mem_limit > (uint64_t)(SIZE_MAX - kept))
        mem_limit = SIZE_MAX - kept;
    JS_SetMemoryLimit(sb.rt, (size_t)mem_limit + kept);

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
        sb.peak -= kept;
        return status;
    }
    global = JS_GetGlobalObject(ctx);
    if (JS_DefinePropertyValueStr(ctx, global, "input", in,
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        JS_FreeValue(ctx, global);
        JS_FreeValue(ctx, JS_GetException(ctx));
        sb.peak -= kept;
        return sb.oom ? SB_INPUT_TOO_LARGE : SB_INTERNAL;
    }
    JS_FreeValue(ctx, global);

    /* the compile, counted where it ran before the script was kept */
    need = sb.heap - kept + sb.compile_peak;
    sb.peak = need > sb.peak - kept ? need : sb.peak - kept;
    if (sb.compile_status == COMPILED_OOM || need > mem_limit) {
        sb.oom = 1;
        if (sb.peak > mem_limit)
            sb.peak = mem_limit; /* the compile would have been refused there */
        return SB_LIMIT_MEMORY;
    }
    JS_SetMemoryLimit(sb.rt, (size_t)mem_limit);

    host_mark(MARK_RUN);
    fn = sb.compiled;
    sb.compiled = JS_UNDEFINED;
    if (sb.compile_status != COMPILED_OK) {
        sb.compile_error = 1;
        JS_Throw(ctx, fn);
        return classify_exception(ctx);
    }
    val = JS_EvalFunction(ctx, fn);
    if (JS_IsException(val))
        return classify_exception(ctx); /* no job runs after a throw */
    status = settle(ctx, &val);
    if (status)
        return status;

    host_mark(MARK_SERIALISE);
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

/* sb_run is the run of the script sb_compile compiled; in the checked
 * build, every live block's red zones and every freed block's poison are
 * verified once it has ended, however it ended (alloc.c, redzone.c). */
EXPORT(sb_run)
int32_t sb_run(const char *input, uint32_t input_len, uint64_t mem_limit, uint64_t cpu_budget, uint64_t seed)
{
    int32_t status = run(input, input_len, mem_limit, cpu_budget, seed);
    heap_check();
    return status;
}

/* Where the host finds what it needs of the instance's memory: the end of
 * the shadow stack, which it clears between runs, and the end of the heap
 * (sb.brk), which says how much of the memory above the image a run used.
 * Both little-endian 32-bit words. */
static const struct {
    uint32_t stack_size;
    uintptr_t *brk;
} layout = {SB_STACK_SIZE, &sb.brk};

EXPORT(sb_layout) const void *sb_layout(void) { return &layout; }

/* sb_stack_pointer is the shadow stack's pointer, the module's one mutable
 * global, where the call finds it. Between calls, where the host asks, it
 * must be back at the stack's top (SB_STACK_SIZE: a call that returned
 * popped its frames), for the memory to be the whole of the instance's
 * state; a call that trapped leaves it lower. The host resets only an
 * instance whose pointer is at the top (memImage.reset). A leaf without a
 * frame, it reads the global without moving it. */
EXPORT(sb_stack_pointer) uintptr_t sb_stack_pointer(void)
{
    uintptr_t sp;
    __asm__ volatile("global.get __stack_pointer\n\tlocal.set %0" : "=r"(sp));
    return sp;
}

/* sb_teardown frees what the shim and the runtime hold, the context and the
 * runtime, as an embedder that kept the instance would, and returns the
 * number of blocks still taken from the runtime's allocator: 0 unless
 * something leaked. Nothing runs in the instance afterwards. The host never
 * calls it (an instance's memory is restored to an image, or dropped,
 * whole); tests do, after runs of every kind, so that a leak in QuickJS's
 * small-block allocator or in the shim is seen. */
EXPORT(sb_teardown) int32_t sb_teardown(void)
{
    uint32_t i;
    JS_FreeValue(sb.ctx, sb.compiled);
    sb.compiled = JS_UNDEFINED;
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
 * (quickjs/instance.go reads it): little-endian, 48 bytes. */
static struct {
    uint32_t result_ptr, result_len; /* the result's JSON text, or the message */
    uint32_t name_ptr;
    int32_t name_len;                /* -1: the thrown value had no string name */
    uint32_t log_ptr, log_len;       /* the console buffer */
    uint64_t polls;                  /* calls of the interrupt handler */
    int32_t oom;                     /* an allocation was refused */
    int32_t compile_error;           /* the script did not compile */
    uint64_t peak;                   /* the most heap the run held, in bytes */
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
    outcome.compile_error = sb.compile_error;
    outcome.peak = sb.peak;
    return &outcome;
}
