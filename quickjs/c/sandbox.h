/*
 * sandbox.h: what the parts of the shim share: the run statuses the host
 * reads, and the one state of the instance that every part reads or sets.
 *
 * The parts are not separate objects: sandbox.c includes them into one
 * translation unit, so that this state can stay static, visible to the
 * compiler whole. A part may use what the parts included before it define.
 */
#ifndef SANDBOX_H
#define SANDBOX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <errno.h>
#include <unistd.h>

#include "quickjs.h"

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

/* Imports from the host (the module "sandbox"), and exports to it. */
#define IMPORT(mod, name) __attribute__((import_module(#mod), import_name(#name)))
#define EXPORT(name) __attribute__((export_name(#name)))

/* The phases sb_run marks (sandbox.mark), mirrored in Go (quickjs/host.go):
 * the script's evaluation begins once the input is bound, the result's
 * serialisation once no job is left. */
enum { MARK_RUN = 1, MARK_SERIALISE = 2 };

/* The console's cap (console.c): its buffer is part of the state below,
 * so console output never takes memory from the JS heap. */
#define LOG_CAP (64 * 1024)

/* The shadow stack is the first SB_STACK_SIZE bytes of linear memory
 * (linker: --stack-first, -z stack-size, in build.sh): everything the
 * shim's state and the heap hold lies above it. */
#define SB_STACK_SIZE (1024 * 1024)

/* How the script's compile ended (sb_compile), mirrored in Go
 * (quickjs/instance.go). */
enum { COMPILED_OK = 0, COMPILED_THREW = 1, COMPILED_OOM = 2 };

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
    size_t heap;         /* bytes the runtime holds, as the limit counts them */
    size_t peak;         /* the most heap held during this run */

    /* the script did not compile: its exception is the parser's */
    int compile_error;

    /* the script, compiled ahead of its run (sb_compile): the function its
     * global code is, or the exception its compile threw; what the compile
     * held at most and holds once done, above the heap it started on */
    JSValue compiled;
    int compile_status; /* COMPILED_OK, COMPILED_THREW or COMPILED_OOM */
    size_t compile_peak, compile_kept;

    /* the end of the heap (sbrk, alloc.c) */
    uintptr_t brk;

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

#endif /* SANDBOX_H */
