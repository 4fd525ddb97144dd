/* stream.c: the STREAM memory-bandwidth workloads, after McCalpin's reference stream.c. */
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)
#define MIN_DEFAULT_ARRAY_MIB 80
#define SCALAR 3.0
/* The reference's tolerance for doubles. */
#define EPSILON 1e-13
#define MAX_CACHE_INDEX 16

struct arrays {
	double *a, *b, *c;
	size_t n;
};

/* The value every element of each array should hold. */
struct scalars {
	double a, b, c;
};

struct kernel {
	const char *name;
	unsigned arrays_touched; /* each moves 8 bytes per element per iteration */
	void (*run)(const struct arrays *x);
	void (*replay)(struct scalars *s);
};

/* Makes the arrays visible to the optimiser as used, so no kernel run can be dropped. */
static inline void escape_arrays(const struct arrays *x)
{
	__asm__ volatile("" : : "r"(x->a), "r"(x->b), "r"(x->c) : "memory");
}

/* The kernels as GCC compiles McCalpin's reference at -O2 (and above) for x86-64, so that
 * both measure the same instructions: its copy loop becomes a call to memcpy, and the other
 * loops 2-double SSE2 vectors (aligned loads, one multiply and/or add, aligned stores). Our
 * arrays' length is known only at run time, where the reference's is a constant, and GCC's
 * -O2 would then leave the loops scalar (scale 7%, add 5% and triad 12% slower here) and the
 * copy loop a loop (32% faster than memcpy here): so the vectors and the memcpy are written
 * out. n is even (a whole number of MiB of doubles). docs/agent-protocol.md, "STREAM". */
typedef double v2d __attribute__((vector_size(16)));

static void __attribute__((noinline)) copy_run(const struct arrays *x)
{
	memcpy(x->c, x->a, x->n * sizeof(double));
}

static void __attribute__((noinline)) scale_run(const struct arrays *x)
{
	v2d *restrict b = (v2d *)x->b;
	const v2d *restrict c = (const v2d *)x->c;
	const v2d q = { SCALAR, SCALAR };

	for (size_t j = 0; j < x->n / 2; j++)
		b[j] = q * c[j];
}

static void __attribute__((noinline)) add_run(const struct arrays *x)
{
	const v2d *restrict a = (const v2d *)x->a;
	const v2d *restrict b = (const v2d *)x->b;
	v2d *restrict c = (v2d *)x->c;

	for (size_t j = 0; j < x->n / 2; j++)
		c[j] = a[j] + b[j];
}

static void __attribute__((noinline)) triad_run(const struct arrays *x)
{
	v2d *restrict a = (v2d *)x->a;
	const v2d *restrict b = (const v2d *)x->b;
	const v2d *restrict c = (const v2d *)x->c;
	const v2d q = { SCALAR, SCALAR };

	for (size_t j = 0; j < x->n / 2; j++)
		a[j] = b[j] + q * c[j];
}

static void copy_replay(struct scalars *s)
{
	s->c = s->a;
}

static void scale_replay(struct scalars *s)
{
	s->b = SCALAR * s->c;
}

static void add_replay(struct scalars *s)
{
	s->c = s->a + s->b;
}

static void triad_replay(struct scalars *s)
{
	s->a = s->b + SCALAR * s->c;
}

enum { COPY, SCALE, ADD, TRIAD, KERNEL_COUNT };

static const struct kernel kernels[KERNEL_COUNT] = {
	[COPY] = { "copy", 2, copy_run, copy_replay },
	[SCALE] = { "scale", 2, scale_run, scale_replay },
	[ADD] = { "add", 3, add_run, add_replay },
	[TRIAD] = { "triad", 3, triad_run, triad_replay },
};

/* Is `word` one of the comma-separated items of `list`? */
static int in_list(const char *list, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t item = end ? (size_t)(end - p) : strlen(p);
		if (item == len && strncmp(p, word, len) == 0)
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

/* Does every item of `list` name a kernel? */
static int known_kernels(const char *list)
{
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t item = end ? (size_t)(end - p) : strlen(p);
		int found = 0;
		for (int k = 0; k < KERNEL_COUNT; k++)
			found |= strlen(kernels[k].name) == item && strncmp(p, kernels[k].name, item) == 0;
		if (!found)
			return 0;
		if (!end)
			break;
		p = end + 1;
	}
	return 1;
}

/* Per-iteration times of one kernel, first iteration excluded. */
struct kernel_times {
	double sum, min, max;
};

/* Counted passes before the passes may stop early (--enough): the reference's figure is each
 * kernel's best pass. Where one pass takes a tenth of a second or more (a translator, an
 * emulator), the best of three is as steady from run to run as the best of nine natively,
 * and nine would cost an emulated run many seconds: docs/agent-protocol.md. */
#define MIN_COUNTED 3

/* sysfs sizes look like "32K" or "32768K"; unreadable ones count as 0. */
static unsigned long long read_cache_size(int index)
{
	char path[80], unit = 'B';
	unsigned long long size = 0;

	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int fields = fscanf(f, "%llu%c", &size, &unit);
	fclose(f);
	if (fields < 1)
		return 0;
	switch (unit) {
	case 'K': return size * 1024;
	case 'M': return size * MIB;
	case 'G': return size * MIB * 1024;
	default: return size;
	}
}

/* Four times the largest cache defeats it, as STREAM's rules ask; sysfs may be absent (initramfs). */
static unsigned default_array_mib(void)
{
	unsigned long long largest = 0;

	for (int i = 0; i < MAX_CACHE_INDEX; i++) {
		unsigned long long size = read_cache_size(i);
		if (size > largest)
			largest = size;
	}
	unsigned long long mib = (4 * largest + MIB - 1) / MIB;
	return mib < MIN_DEFAULT_ARRAY_MIB ? MIN_DEFAULT_ARRAY_MIB : (unsigned)mib;
}

static void free_arrays(struct arrays *x)
{
	free(x->a); /* b and c are in the same block */
}

/* One block holding a, b and c one after the other, as the reference's static arrays lie in
 * memory: the copy kernel (memcpy) then moves data upwards, from a to c, as in the
 * reference. Three separate allocations are mapped each below the one before (c below a),
 * and memcpy ran 13% faster than the reference's here. */
static int alloc_arrays(struct arrays *x, unsigned array_mib)
{
	size_t bytes = (size_t)array_mib * MIB;

	memset(x, 0, sizeof *x);
	x->n = bytes / sizeof(double);
	if (posix_memalign((void **)&x->a, 64, 3 * bytes) != 0) {
		x->a = NULL;
		return workload_fail("cannot allocate three arrays of %u MiB (try a smaller --array-mib)", array_mib);
	}
	x->b = x->a + x->n;
	x->c = x->b + x->n;
	return 0;
}

/* The reference's start (a=1, b=2, then one a = 2a pass, which the replay mirrors), except
 * c=1 instead of 0: stream_scale alone reads only c, and over zeros its check would prove
 * nothing. In `stream`, copy overwrites c first, so the four-kernel run is unchanged. */
static void init_arrays(const struct arrays *x, struct scalars *s)
{
	for (size_t j = 0; j < x->n; j++) {
		x->a[j] = 1.0;
		x->b[j] = 2.0;
		x->c[j] = 1.0;
	}
	for (size_t j = 0; j < x->n; j++)
		x->a[j] = 2.0 * x->a[j];
	escape_arrays(x);
	s->a = 2.0;
	s->b = 2.0;
	s->c = 1.0;
}

/* Runs the kernels in turn, ntimes passes at most; returns the passes run (the first is not
 * counted). With enough_s > 0 the passes stop once MIN_COUNTED or more counted passes have
 * lasted enough_s in all. */
static unsigned time_kernels(const struct arrays *x, const struct kernel *const *ks, size_t count, unsigned ntimes,
			     double enough_s, struct kernel_times *times)
{
	double counted = 0.0;

	for (unsigned iter = 0; iter < ntimes; iter++) {
		for (size_t k = 0; k < count; k++) {
			uint64_t t0 = monotonic_ns();
			ks[k]->run(x);
			escape_arrays(x);
			double t = (double)(monotonic_ns() - t0) * 1e-9;
			if (iter == 0)
				continue;
			struct kernel_times *kt = &times[k];
			kt->sum += t;
			counted += t;
			if (iter == 1 || t < kt->min)
				kt->min = t;
			if (iter == 1 || t > kt->max)
				kt->max = t;
		}
		if (enough_s > 0.0 && iter >= MIN_COUNTED && counted >= enough_s)
			return iter + 1;
	}
	return ntimes;
}

/* As checkSTREAMresults: the average absolute error relative to the expected value. */
static double relative_error(const double *v, size_t n, double expected)
{
	double sum = 0.0;

	for (size_t j = 0; j < n; j++)
		sum += fabs(v[j] - expected);
	double avg = sum / (double)n;
	return expected != 0.0 ? avg / fabs(expected) : avg;
}

/* Is every element the expected value, bit for bit? Then the reference's error is exactly 0.
 * Integer compares: a translator (qemu-user) runs them several times faster than the
 * floating-point sum, which is left for arrays that differ somewhere. */
static int all_exact(const double *v, size_t n, double expected)
{
	uint64_t want, differ = 0;

	if (!isfinite(expected))
		return 0;
	memcpy(&want, &expected, sizeof want);
	for (size_t j = 0; j < n; j++) {
		uint64_t got;
		memcpy(&got, &v[j], sizeof got);
		differ |= got ^ want;
	}
	return differ == 0;
}

static int check_array(const char *label, const double *v, size_t n, double expected)
{
	if (all_exact(v, n, expected))
		return 0;
	double err = relative_error(v, n, expected);

	/* Written so that a NaN error fails too. */
	if (!(err <= EPSILON))
		return workload_fail("STREAM validation failed: array %s: average relative error %.3g > %g (expected %.17g)",
				     label, err, EPSILON, expected);
	return 0;
}

static int validate(const struct arrays *x, struct scalars s, const struct kernel *const *ks, size_t count,
		    unsigned passes)
{
	for (unsigned iter = 0; iter < passes; iter++) {
		for (size_t k = 0; k < count; k++)
			ks[k]->replay(&s);
	}
	if (check_array("a", x->a, x->n, s.a) != 0 || check_array("b", x->b, x->n, s.b) != 0 ||
	    check_array("c", x->c, x->n, s.c) != 0)
		return -1;
	return 0;
}

static void metric_name(char *out, size_t size, const char *prefix, const char *metric)
{
	if (prefix)
		snprintf(out, size, "%s_%s", prefix, metric);
	else
		snprintf(out, size, "%s", metric);
}

static void report_kernel(const char *name, const char *prefix, const struct kernel *k, const struct kernel_times *kt,
			  size_t n, unsigned passes)
{
	double bytes = (double)k->arrays_touched * sizeof(double) * (double)n;
	char metric[32];

	metric_name(metric, sizeof metric, prefix, "bandwidth");
	proto_sample(name, metric, "MB/s", bytes / 1e6 / kt->min);
	metric_name(metric, sizeof metric, prefix, "time_avg");
	proto_sample(name, metric, "s", kt->sum / (double)(passes - 1));
	metric_name(metric, sizeof metric, prefix, "time_min");
	proto_sample(name, metric, "s", kt->min);
	metric_name(metric, sizeof metric, prefix, "time_max");
	proto_sample(name, metric, "s", kt->max);
}

/* Runs the kernels in turn, ntimes over; `named`: metrics carry the kernel's name (`stream`). */
static int run_stream(const char *name, const struct options *opt, const struct kernel *const *ks, size_t count,
		      int named)
{
	unsigned array_mib = opt->array_mib ? opt->array_mib : default_array_mib();
	const struct param params[] = { PARAM_NUM("array_mib", array_mib), PARAM_NUM("ntimes", opt->ntimes),
					PARAM_NUM("enough_s", opt->enough_s) };
	struct kernel_times times[KERNEL_COUNT];
	struct arrays x;
	struct scalars s;

	proto_workload(name, params, 3);
	if (alloc_arrays(&x, array_mib) != 0)
		return -1;
	memset(times, 0, sizeof times);
	init_arrays(&x, &s);
	unsigned passes = time_kernels(&x, ks, count, opt->ntimes, opt->enough_s, times);
	int result = validate(&x, s, ks, count, passes);
	for (size_t k = 0; result == 0 && k < count; k++) {
		/* A coarse clock could report 0 s, and bandwidth would be infinite. */
		if (times[k].min <= 0.0)
			result = workload_fail("%s: no measurable time per iteration (clock too coarse?)", ks[k]->name);
	}
	for (size_t k = 0; result == 0 && k < count; k++)
		report_kernel(name, named ? ks[k]->name : NULL, ks[k], &times[k], x.n, passes);
	if (result == 0) {
		double timed = 0.0; /* the timed passes (each kernel's, the first excluded) */
		for (size_t k = 0; k < count; k++)
			timed += times[k].sum;
		proto_sample(name, "array_mib", "MiB", array_mib);
		proto_sample(name, "passes", "count", passes);
		proto_sample(name, "timed", "s", timed);
	}
	free_arrays(&x);
	return result;
}

static int run_stream_copy(const char *name, const struct options *opt)
{
	const struct kernel *const ks[] = { &kernels[COPY] };

	return run_stream(name, opt, ks, 1, 0);
}

static int run_stream_scale(const char *name, const struct options *opt)
{
	const struct kernel *const ks[] = { &kernels[SCALE] };

	return run_stream(name, opt, ks, 1, 0);
}

static int run_stream_add(const char *name, const struct options *opt)
{
	const struct kernel *const ks[] = { &kernels[ADD] };

	return run_stream(name, opt, ks, 1, 0);
}

static int run_stream_triad(const char *name, const struct options *opt)
{
	const struct kernel *const ks[] = { &kernels[TRIAD] };

	return run_stream(name, opt, ks, 1, 0);
}

/* `stream`: the kernels --kernels names (each once, in the reference's order whatever the
 * list's), else all four. A default campaign runs triad alone: the figure its summary shows,
 * at a third of the four kernels' traffic per pass (docs/workloads-micro.md, "STREAM"). */
static int run_stream_all(const char *name, const struct options *opt)
{
	const struct kernel *ks[KERNEL_COUNT];
	size_t count = 0;

	for (int k = 0; k < KERNEL_COUNT; k++) {
		if (opt->kernels && !in_list(opt->kernels, kernels[k].name))
			continue;
		ks[count++] = &kernels[k];
	}
	if (opt->kernels && !known_kernels(opt->kernels))
		return workload_fail("--kernels '%s': each must be one of copy, scale, add, triad (try --kernels triad)",
				     opt->kernels);
	if (count == 0)
		return workload_fail("--kernels names no kernel (try --kernels triad)");
	return run_stream(name, opt, ks, count, 1);
}

const struct workload stream_workloads[] = {
	{ "stream_copy", run_stream_copy },
	{ "stream_scale", run_stream_scale },
	{ "stream_add", run_stream_add },
	{ "stream_triad", run_stream_triad },
	{ "stream", run_stream_all },
	{ NULL, NULL },
};
