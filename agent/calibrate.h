/* calibrate.h: sizing a batch of operations by time, shared by the timing workloads. */
#ifndef GB_CALIBRATE_H
#define GB_CALIBRATE_H

#include <stdint.h>

#include "timing.h"
#include "workload.h"

/* What a batch did: operations performed and the time and TSC ticks it timed. */
struct batch {
	uint64_t ops;
	uint64_t ns;
	uint64_t tsc;
};

/*
 * Performs at least `ops` operations, adding the timed part to `done` (which
 * starts zeroed) and setting done->ops. Returns -1 after workload_fail().
 */
typedef int (*batch_fn)(void *ctx, uint64_t ops, struct batch *done);

/*
 * The batch size that --ops gives the workload `name` (a list of NAME:N joined by '+'):
 * 0 with *ops = N when the list names it, 0 with *ops = 0 when not, -1 when the list is
 * malformed (checked whatever the name; "" checks the list alone).
 */
int given_ops(const char *list, const char *name, uint64_t *ops);

/* Warm up, then double the batch until one lasts min_time_s; that one is the result. */
int calibrate(batch_fn run, void *ctx, double min_time_s, struct batch *measured);

/* opt->values batches, each giving the timing workloads' samples: time_per_op (ns) and
 * tsc_per_op (cycles, where there is a TSC); then iterations (operations per value) once.
 * The batches have the size --ops gives this workload, after a warm-up; without one,
 * calibrate() with opt->min_time_s, and the batches are that batch scaled to last about
 * min_time_s. Returns -1 after workload_fail(). */
int measure_timed(const char *name, batch_fn run, void *ctx, const struct options *opt);

static inline void batch_add(struct batch *b, struct stamp begin, struct stamp end)
{
	b->ns += end.ns - begin.ns;
	b->tsc += end.tsc - begin.tsc;
}

#endif
