/* timing.h: the two clocks every measurement reads: CLOCK_MONOTONIC nanoseconds and the TSC. */
#ifndef GB_TIMING_H
#define GB_TIMING_H

#include <stdint.h>
#include <time.h>

static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_TSC 1
/*
 * rdtsc is not ordered with the instructions around it; an lfence on each
 * side keeps earlier work from finishing after the read and later work from
 * starting before it.
 */
static inline uint64_t read_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
#else
#define HAVE_TSC 0
static inline uint64_t read_tsc(void)
{
	return 0;
}
#endif

/* Both clocks at one instant. */
struct stamp {
	uint64_t ns;
	uint64_t tsc;
};

/* The TSC is read innermost so that both intervals enclose the timed work. */
static inline struct stamp stamp_begin(void)
{
	struct stamp s;

	s.ns = monotonic_ns();
	s.tsc = read_tsc();
	return s;
}

static inline struct stamp stamp_end(void)
{
	struct stamp s;

	s.tsc = read_tsc();
	s.ns = monotonic_ns();
	return s;
}

/* The quantile q of sorted[0..n), n > 0: linear interpolation between the order statistics
 * around position (n - 1) q, counted from 0 (Hyndman and Fan's type 7, numpy's default):
 * the one definition guestbench uses for every percentile, so that a p50 the agent
 * reports is a median as the host computes it. */
static inline double sorted_quantile(const uint64_t *sorted, size_t n, double q)
{
	double position = (double)(n - 1) * q;
	size_t below = (size_t)position;
	size_t above = below + 1 < n ? below + 1 : below;

	return (double)sorted[below] + (position - (double)below) *
		((double)sorted[above] - (double)sorted[below]);
}

#endif
