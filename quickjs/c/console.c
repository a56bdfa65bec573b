/*
 * console.c: console.log, info, warn and error, written to a buffer of the
 * run capped at LOG_CAP, so that a script cannot make the host hold more
 * output than the cap; what is cut is marked, at a UTF-8 boundary.
 */

#include "sandbox.h"

static const char log_marker[] = "\n[console output truncated at 64 KiB]\n";

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
