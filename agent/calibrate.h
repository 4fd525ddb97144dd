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

/* Warm up for *warmup_ns (at least 1 ms; set to how long the warm-up lasted), then size a
 * calibrating batch from the warm-up's last until one lasts a quarter of min_time_s; *ops:
 * the operations a batch needs to last min_time_s, sized from it. */
int calibrate(batch_fn run, void *ctx, double min_time_s, uint64_t *warmup_ns, uint64_t *ops);

/* calibrate() with opt->min_time_s (and, for the process's first timing workload, a warm-up
 * of opt->run_in_ms: the run-in, reported as a run_in sample in s), then opt->values batches of the calibrated size, each
 * giving the timing workloads' samples: time_per_op (ns) and tsc_per_op (cycles, where
 * there is a TSC); then iterations (operations per value) once. Returns -1 after
 * workload_fail(). */
int measure_timed(const char *name, batch_fn run, void *ctx, const struct options *opt);

static inline void batch_add(struct batch *b, struct stamp begin, struct stamp end)
{
	b->ns += end.ns - begin.ns;
	b->tsc += end.tsc - begin.tsc;
}

#endif
