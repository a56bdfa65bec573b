/*
 * classify.c: how a run ended, from the engine's own state and never from
 * error text: a limit hit at any point of the run first, then the engine's
 * own out-of-memory error, then the script's throw, described by its name
 * and message. The outcome's text is copied out of the JS heap into memory
 * of its own, which the host reads after the run.
 */

#include "sandbox.h"

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
 * (docs/spi.md: a forged kill is reported as the kill it forges). It reads
 * own data properties only, so no script code runs. */
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
 * even when it catches the error (the precedence of docs/spi.md). */
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
