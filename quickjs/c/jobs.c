/*
 * jobs.c: what runs after the global code: the promise job queue, under
 * the run's limits like the body; a Promise or thenable result, settled by
 * it; and the rejections no handler took, tracked as they happen and
 * written to the console once no job is left, since nothing else would
 * show them.
 */

#include "sandbox.h"

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
 * any. For the precedence of docs/spi.md an unhandled rejection is an
 * uncaught exception: after a refused allocation, or with the engine's
 * out-of-memory error as its reason, it is the memory limit; otherwise it
 * changes no outcome. Describing runs script code, under the limits. Returns 0, or the
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
