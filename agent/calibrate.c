/* calibrate.c: the warm-up and batch-doubling procedure of docs/agent-protocol.md. */
#include "calibrate.h"
#include "protocol.h"
#include "workload.h"

#include <inttypes.h>
#include <string.h>

#define WARMUP_NS UINT64_C(1000000)
/*
 * Far beyond any real need (2^40 ops at 1 ns is 18 minutes) yet far from
 * overflow; reaching it means the clock is not advancing or the operation
 * costs nothing.
 */
#define MAX_BATCH_OPS (UINT64_C(1) << 40)

static int run_batch(batch_fn run, void *ctx, uint64_t ops, struct batch *b)
{
	memset(b, 0, sizeof *b);
	if (ops > MAX_BATCH_OPS)
		return workload_fail("a batch of %" PRIu64 " operations still ran shorter than the minimum time;"
				     " is the clock advancing?", ops / 2);
	return run(ctx, ops, b);
}

int calibrate(batch_fn run, void *ctx, double min_time_s, struct batch *measured)
{
	uint64_t min_ns = (uint64_t)(min_time_s * 1e9);
	uint64_t warm_ns = 0;
	struct batch b;

	if (min_ns == 0)
		min_ns = 1;
	for (uint64_t ops = 1; warm_ns < WARMUP_NS; ops *= 2) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		warm_ns += b.ns;
	}
	for (uint64_t ops = 1;; ops *= 2) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		if (b.ns >= min_ns) {
			*measured = b;
			return 0;
		}
	}
}

int measure_timed(const char *name, batch_fn run, void *ctx, const struct options *opt)
{
	struct batch b;
	uint64_t ops;

	if (calibrate(run, ctx, opt->min_time_s, &b) != 0)
		return -1;
	/* The calibrating batch only sized the others: every value is a batch of the same
	 * size, timed after it, so that no value is the first of its kind in the process. */
	ops = b.ops;
	uint64_t timed_ns = 0; /* inside the timed batches only: the campaign's efficiency */
	for (unsigned i = 0; i < opt->values; i++) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		timed_ns += b.ns;
		proto_sample(name, "time_per_op", "ns", (double)b.ns / (double)b.ops);
#if HAVE_TSC
		proto_sample(name, "tsc_per_op", "cycles", (double)b.tsc / (double)b.ops);
#endif
	}
	proto_sample(name, "iterations", "count", (double)b.ops);
	proto_sample(name, "timed", "s", (double)timed_ns / 1e9);
	return 0;
}
