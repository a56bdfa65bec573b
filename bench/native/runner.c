/* runner.c: runs one benchmark workload through native QuickJS, a fresh
 * runtime and context per evaluation, and prints one JSON line per timed run
 * (the format bench/cmd/report reads).
 *
 *   runner -engine NAME -workload NAME -script FILE -input FILE
 *          -mem BYTES -warmup N -runs N -round N
 *
 * A run is: JS_NewRuntime2 (QuickJS's default allocator, with a flag for a
 * refused allocation), JS_NewContext, JS_SetMemoryLimit, JS_ParseJSON of the
 * input, the global `input`, JS_Eval of the script as global code,
 * JSON.stringify of the completion value, and freeing everything. It is timed
 * with clock_gettime(CLOCK_MONOTONIC) from before JS_NewRuntime2 to after
 * JS_FreeRuntime. Like the engine's shim, the memory limit is set after the
 * context exists, and an interrupt handler checks a wall-clock deadline (30 s)
 * so that a runaway cannot hang the benchmark.
 *
 * Built by bench/native/build.sh against the sources of the pinned tarball. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <malloc.h>

#include "quickjs.h"

/* refused is set when an allocation is refused for the memory limit. Under
 * that limit QuickJS may fail to allocate the InternalError it throws for
 * it and throw something else (null): the flag, not the error, says that
 * the run hit the limit, as the engine's shim decides it (sb.oom). The
 * allocator is QuickJS's default one (js_def_malloc and friends) plus the
 * flag. */
static int refused;

static void *counted_malloc(JSMallocState *s, size_t size)
{
    void *p;
    if (s->malloc_size + size > s->malloc_limit) {
        refused = 1;
        return NULL;
    }
    p = malloc(size);
    if (!p) {
        refused = 1;
        return NULL;
    }
    s->malloc_count++;
    s->malloc_size += malloc_usable_size(p) + 8;
    return p;
}

static void counted_free(JSMallocState *s, void *p)
{
    if (!p)
        return;
    s->malloc_count--;
    s->malloc_size -= malloc_usable_size(p) + 8;
    free(p);
}

static void *counted_realloc(JSMallocState *s, void *p, size_t size)
{
    size_t old;
    void *q;
    if (!p)
        return size ? counted_malloc(s, size) : NULL;
    if (size == 0) {
        counted_free(s, p);
        return NULL;
    }
    old = malloc_usable_size(p);
    if (s->malloc_size + size - old > s->malloc_limit) {
        refused = 1;
        return NULL;
    }
    q = realloc(p, size);
    if (!q) {
        refused = 1;
        return NULL;
    }
    s->malloc_size += malloc_usable_size(q) - old;
    return q;
}

static size_t counted_usable_size(const void *p) { return malloc_usable_size((void *)p); }

static const JSMallocFunctions counted_malloc_funcs = {
    counted_malloc, counted_free, counted_realloc, counted_usable_size,
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double deadline_ms;

static int interrupt(JSRuntime *rt, void *opaque)
{
    (void)rt;
    (void)opaque;
    return now_ms() > deadline_ms;
}

/* read_file returns the file's bytes followed by a NUL (JS_ParseJSON and
 * JS_Eval need one after the last byte). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f) {
        fprintf(stderr, "runner: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "runner: %s: cannot size\n", path);
        exit(2);
    }
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "runner: %s: cannot read\n", path);
        exit(2);
    }
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* FNV-1a, 64 bits: a digest of the outcome, compared across engines. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define OUTCOME_MAX 64

struct outcome {
    char kind[OUTCOME_MAX]; /* ok, limit:memory, threw, error */
    uint64_t digest;        /* of the normalised outcome text */
    size_t bytes;           /* length of the value's JSON text */
};

static void set_kind(struct outcome *o, const char *kind, const char *text, size_t n)
{
    snprintf(o->kind, sizeof o->kind, "%s", kind);
    o->digest = fnv1a(FNV_OFFSET, text, n);
    o->bytes = n;
}

/* describe_exception classifies the pending exception: after a refused
 * allocation, or QuickJS's own InternalError "out of memory", the memory
 * limit; anything else threw. */
static void describe_exception(JSContext *ctx, JSRuntime *rt, struct outcome *o)
{
    JSValue exc, name, msg;
    const char *n = NULL, *m = NULL;
    char text[512];

    JS_SetMemoryLimit(rt, (size_t)-1); /* room to look at the exception */
    exc = JS_GetException(ctx);
    name = JS_GetPropertyStr(ctx, exc, "name");
    msg = JS_GetPropertyStr(ctx, exc, "message");
    if (JS_IsString(name))
        n = JS_ToCString(ctx, name);
    if (JS_IsString(msg))
        m = JS_ToCString(ctx, msg);
    if (refused || (n && m && strcmp(n, "InternalError") == 0 && strcmp(m, "out of memory") == 0)) {
        set_kind(o, "limit:memory", "limit:memory", strlen("limit:memory"));
    } else {
        int len = snprintf(text, sizeof text, "threw:%s: %s", n ? n : "", m ? m : "");
        if (len >= (int)sizeof text)
            len = sizeof text - 1;
        set_kind(o, "threw", text, (size_t)len);
        fprintf(stderr, "runner: the script threw %s: %s\n", n ? n : "?", m ? m : "?");
    }
    JS_FreeCString(ctx, n);
    JS_FreeCString(ctx, m);
    JS_FreeValue(ctx, name);
    JS_FreeValue(ctx, msg);
    JS_FreeValue(ctx, exc);
}

/* run is one evaluation in a fresh runtime and context. */
static void run(const char *script, size_t script_len, const char *input, size_t input_len,
                size_t mem, struct outcome *o)
{
    JSRuntime *rt;
    JSContext *ctx;
    JSValue in, global, val, json;

    refused = 0;
    rt = JS_NewRuntime2(&counted_malloc_funcs, NULL);
    if (!rt) {
        fprintf(stderr, "runner: JS_NewRuntime failed\n");
        exit(1);
    }
    ctx = JS_NewContext(rt);
    if (!ctx) {
        fprintf(stderr, "runner: JS_NewContext failed\n");
        exit(1);
    }
    JS_SetMemoryLimit(rt, mem);
    deadline_ms = now_ms() + 30e3;
    JS_SetInterruptHandler(rt, interrupt, NULL);

    in = JS_ParseJSON(ctx, input, input_len, "<input>");
    if (JS_IsException(in)) {
        describe_exception(ctx, rt, o);
        snprintf(o->kind, sizeof o->kind, "error");
        goto done;
    }
    global = JS_GetGlobalObject(ctx);
    if (JS_DefinePropertyValueStr(ctx, global, "input", in,
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
        JS_FreeValue(ctx, global);
        describe_exception(ctx, rt, o);
        snprintf(o->kind, sizeof o->kind, "error");
        goto done;
    }
    JS_FreeValue(ctx, global);

    val = JS_Eval(ctx, script, script_len, "<script>", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(val)) {
        describe_exception(ctx, rt, o);
        goto done;
    }
    json = JS_JSONStringify(ctx, val, JS_UNDEFINED, JS_UNDEFINED);
    JS_FreeValue(ctx, val);
    if (JS_IsException(json)) {
        describe_exception(ctx, rt, o);
        goto done;
    }
    if (JS_IsString(json)) {
        size_t n;
        const char *s = JS_ToCStringLen(ctx, &n, json);
        if (!s) {
            JS_FreeValue(ctx, json);
            describe_exception(ctx, rt, o);
            goto done;
        }
        set_kind(o, "ok", s, n);
        JS_FreeCString(ctx, s);
    } else { /* undefined, a function or a symbol: null, as the engine says */
        set_kind(o, "ok", "null", 4);
    }
    JS_FreeValue(ctx, json);
done:
    JS_FreeContext(ctx);
    JS_FreeRuntime(rt);
}

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    if (!def) {
        fprintf(stderr, "runner: missing %s\n", name);
        exit(2);
    }
    return def;
}

int main(int argc, char **argv)
{
    const char *engine = arg(argc, argv, "-engine", "native");
    const char *workload = arg(argc, argv, "-workload", NULL);
    size_t script_len, input_len;
    char *script = read_file(arg(argc, argv, "-script", NULL), &script_len);
    char *input = read_file(arg(argc, argv, "-input", NULL), &input_len);
    size_t mem = (size_t)strtoull(arg(argc, argv, "-mem", "67108864"), NULL, 10);
    int warmup = atoi(arg(argc, argv, "-warmup", "3"));
    int runs = atoi(arg(argc, argv, "-runs", "10"));
    int round = atoi(arg(argc, argv, "-round", "0"));

    for (int i = 0; i < warmup + runs; i++) {
        struct outcome o = {0};
        double t0 = now_ms();
        run(script, script_len, input, input_len, mem, &o);
        double ms = now_ms() - t0;
        if (i < warmup)
            continue;
        printf("{\"engine\":\"%s\",\"workload\":\"%s\",\"round\":%d,\"run\":%d,\"ms\":%.6f,"
               "\"outcome\":\"%s\",\"bytes\":%zu,\"digest\":\"%016" PRIx64 "\"}\n",
               engine, workload, round, i - warmup, ms, o.kind, o.bytes, o.digest);
    }
    free(script);
    free(input);
    return 0;
}
