/* calibrate.c: the warm-up and batch-doubling procedure of docs/agent-protocol.md. */
#include "calibrate.h"
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <inttypes.h>
#include <string.h>

#define WARMUP_NS UINT64_C(1000000)
#define RUN_IN_STEP_NS UINT64_C(10000000)
/* The calibrating batch lasts this part of min_time: long enough to size the values from
 * (5 ms at the default 0.02 s), a quarter of the cost of a batch as long as a value. */
#define CALIBRATING_PART 4
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

/* The operations a batch needs to last min_ns, from one that lasted b->ns: 10% over, so
 * that a batch a little faster than the last still lasts the minimum. */
static uint64_t sized(const struct batch *b, uint64_t min_ns)
{
	if (b->ns == 0)
		return b->ops * 16;
	double wanted = (double)b->ops * (double)min_ns / (double)b->ns * 1.1;
	if (wanted > (double)(MAX_BATCH_OPS * 2))
		return MAX_BATCH_OPS * 2; /* run_batch() refuses it, naming the clock */
	return wanted < 1.0 ? 1 : (uint64_t)wanted + 1;
}

int calibrate(batch_fn run, void *ctx, double min_time_s, uint64_t *warmup_ns, uint64_t *ops)
{
	uint64_t min_ns = (uint64_t)(min_time_s * 1e9);
	uint64_t warm_ns = 0;
	struct batch b;

	if (min_ns == 0)
		min_ns = 1;
	uint64_t calibrating_ns = min_ns / CALIBRATING_PART ? min_ns / CALIBRATING_PART : 1;
	uint64_t warm_wanted = *warmup_ns > WARMUP_NS ? *warmup_ns : WARMUP_NS;
	/* The warm-up: batches of 1, 2, 4, ... until 1 ms has passed, then the run-in. Its last
	 * batch sizes the calibrating one; where that last batch alone lasted long enough, it is
	 * the calibrating batch (an operation slower than that is not run once more for nothing). */
	for (uint64_t n = 1; warm_ns < WARMUP_NS; n *= 2) {
		if (run_batch(run, ctx, n, &b) != 0)
			return -1;
		warm_ns += b.ns;
	}
	/* A longer warm-up (the run-in) goes on in batches of at most RUN_IN_STEP_NS each. */
	while (warm_ns < warm_wanted) {
		uint64_t left = warm_wanted - warm_ns;
		if (run_batch(run, ctx, sized(&b, left < RUN_IN_STEP_NS ? left : RUN_IN_STEP_NS), &b) != 0)
			return -1;
		warm_ns += b.ns;
	}
	*warmup_ns = warm_ns;
	/* Then batches sized from the last, until one lasts a part of min_time: usually the
	 * first. The values are sized from it to last min_time. */
	while (b.ns < calibrating_ns) {
		if (run_batch(run, ctx, sized(&b, calibrating_ns), &b) != 0)
			return -1;
	}
	/* A batch that already lasted min_time sets the size (a long run-in's last batch is
	 * scaled down to it; a single operation longer than min_time stays one). */
	*ops = sized(&b, min_ns);
	return 0;
}

int measure_timed(const char *name, batch_fn run, void *ctx, const struct options *opt)
{
	static int run_in_done; /* the run-in is the process's first timing workload's warm-up */
	struct batch b;
	uint64_t ops;
	int run_in = !run_in_done && opt->run_in_ms > 0;
	uint64_t warmup_ns = run_in ? (uint64_t)opt->run_in_ms * UINT64_C(1000000) : 0;

	run_in_done = 1;
	/* The calibrating batch only sizes the others: every value is a batch of the same
	 * size, timed after it, so that no value is the first of its kind in the process. */
	if (calibrate(run, ctx, opt->min_time_s, &warmup_ns, &ops) != 0)
		return -1;
	if (run_in)
		proto_sample(name, "run_in", "s", (double)warmup_ns / 1e9);
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
