/* calibrate.c: the warm-up and batch-doubling procedure of docs/agent-protocol.md. */
#include "calibrate.h"
#include "protocol.h"
#include "workload.h"

#include <inttypes.h>
#include <stdlib.h>
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

int given_ops(const char *list, const char *name, uint64_t *ops)
{
	*ops = 0;
	for (const char *entry = list; *entry;) {
		const char *colon = strchr(entry, ':');
		const char *end = strchr(entry, '+');
		if (!end)
			end = entry + strlen(entry);
		if (!colon || colon > end || colon == entry || colon + 1 == end)
			return -1;
		uint64_t count = 0;
		for (const char *digit = colon + 1; digit < end; digit++) {
			if (*digit < '0' || *digit > '9')
				return -1;
			count = count * 10 + (uint64_t)(*digit - '0');
			if (count > MAX_BATCH_OPS)
				return -1;
		}
		if (count == 0)
			return -1;
		if ((size_t)(colon - entry) == strlen(name) && strncmp(entry, name, strlen(name)) == 0)
			*ops = count;
		if (*end == '+' && end[1] == '\0')
			return -1; /* a '+' with nothing after it */
		entry = *end ? end + 1 : end;
	}
	return 0;
}

static int warm_up(batch_fn run, void *ctx)
{
	uint64_t warm_ns = 0;
	struct batch b;

	for (uint64_t ops = 1; warm_ns < WARMUP_NS; ops *= 2) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		warm_ns += b.ns;
	}
	return 0;
}

int calibrate(batch_fn run, void *ctx, double min_time_s, struct batch *measured)
{
	uint64_t min_ns = (uint64_t)(min_time_s * 1e9);
	struct batch b;

	if (min_ns == 0)
		min_ns = 1;
	if (warm_up(run, ctx) != 0)
		return -1;
	for (uint64_t ops = 1;; ops *= 2) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		if (b.ns >= min_ns) {
			*measured = b;
			return 0;
		}
	}
}

/* The calibrating batch's size scaled to last about min_time_s: it lasted between once and
 * twice that, and values of one length serve every run of a cell alike. */
static uint64_t scaled_ops(const struct batch *b, double min_time_s)
{
	double wanted = (double)b->ops * min_time_s * 1e9 / (double)b->ns;
	if (wanted >= (double)b->ops)
		return b->ops;
	uint64_t ops = (uint64_t)wanted;
	if ((double)ops < wanted)
		ops++; /* rounded up */
	return ops < 1 ? 1 : ops;
}

int measure_timed(const char *name, batch_fn run, void *ctx, const struct options *opt)
{
	struct batch b;
	uint64_t ops = 0;

	if (opt->ops)
		given_ops(opt->ops, name, &ops); /* the list was checked when it was read */
	if (ops) {
		if (warm_up(run, ctx) != 0)
			return -1;
	} else {
		if (calibrate(run, ctx, opt->min_time_s, &b) != 0)
			return -1;
		ops = scaled_ops(&b, opt->min_time_s);
	}
	/* The calibrating batch only sized the others: every value is a batch of the same
	 * size, timed after it, so that no value is the first of its kind in the process. */
	for (unsigned i = 0; i < opt->values; i++) {
		if (run_batch(run, ctx, ops, &b) != 0)
			return -1;
		proto_sample(name, "time_per_op", "ns", (double)b.ns / (double)b.ops);
#if HAVE_TSC
		proto_sample(name, "tsc_per_op", "cycles", (double)b.tsc / (double)b.ops);
#endif
	}
	proto_sample(name, "iterations", "count", (double)b.ops);
	return 0;
}
