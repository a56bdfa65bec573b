/*
 * interrupt.c: how a running script is stopped. QuickJS calls the handler
 * every 1,000 function calls or backward jumps; it spends the CPU budget
 * first, which needs no host, then asks the host (sandbox.poll) whether the deadline has passed or the caller went away.
 * An interrupt is sticky: once set, every later call says stop, so that no
 * script code runs on after the limit.
 */

#include "sandbox.h"

/* Answers of sandbox.poll, mirrored in Go (quickjs/host.go). */
enum { POLL_CONTINUE = 0, POLL_DEADLINE = 1, POLL_CANCELLED = 2 };

IMPORT(sandbox, poll) int32_t host_poll(void);

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
