/* micro.c: the timing workloads: system calls, memory mapping and process operations. */
#define _GNU_SOURCE /* sched_setaffinity and the CPU_* macros */
#include "calibrate.h"
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MALLOC_BYTES (1024 * 1024)
#define MALLOC_TOUCH_STRIDE 4096
#define MMAP_THRESHOLD (128 * 1024)

/* Results land here so the compiler must perform every operation. */
static volatile long sink;

/* Hands the pointer to the optimiser as "used", so stores to it stay. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void touch_pages(char *p, size_t len, size_t stride)
{
	volatile char *v = p;

	for (size_t off = 0; off < len; off += stride)
		v[off] = 1;
	escape(p);
}

static void announce(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values) };

	proto_workload(name, params, sizeof params / sizeof params[0]);
}

/* ---- system calls ---- */

/* ctx points to the system call number: the raw call, never a libc cache. */
static int raw_syscall_batch(void *ctx, uint64_t ops, struct batch *b)
{
	const long nr = *(const long *)ctx;
	struct stamp t0 = stamp_begin();
	for (uint64_t i = 0; i < ops; i++)
		sink = syscall(nr);
	batch_add(b, t0, stamp_end());
	b->ops = ops;
	return 0;
}

static int clock_gettime_batch(void *ctx, uint64_t ops, struct batch *b)
{
	struct timespec ts;

	(void)ctx;
	struct stamp t0 = stamp_begin();
	for (uint64_t i = 0; i < ops; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink = ts.tv_nsec;
	}
	batch_add(b, t0, stamp_end());
	b->ops = ops;
	return 0;
}

static int run_raw_syscall(const char *name, const struct options *opt, long nr)
{
	announce(name, opt);
	return measure_timed(name, raw_syscall_batch, &nr, opt);
}

static int run_getpid(const char *name, const struct options *opt)
{
	return run_raw_syscall(name, opt, SYS_getpid);
}

/* perf bench syscall basic times getppid(2): this one compares with it directly. */
static int run_getppid(const char *name, const struct options *opt)
{
	return run_raw_syscall(name, opt, SYS_getppid);
}

static int run_sched_yield(const char *name, const struct options *opt)
{
	return run_raw_syscall(name, opt, SYS_sched_yield);
}

static int run_clock_gettime(const char *name, const struct options *opt)
{
	announce(name, opt);
	return measure_timed(name, clock_gettime_batch, NULL, opt);
}

/* ---- memory ---- */

static int malloc_batch(void *ctx, uint64_t ops, struct batch *b)
{
	(void)ctx;
	struct stamp t0 = stamp_begin();
	for (uint64_t i = 0; i < ops; i++) {
		char *p = malloc(MALLOC_BYTES);
		if (!p)
			return workload_fail("malloc(1 MiB) failed: %s", strerror(errno));
		touch_pages(p, MALLOC_BYTES, MALLOC_TOUCH_STRIDE);
		free(p);
	}
	batch_add(b, t0, stamp_end());
	b->ops = ops;
	return 0;
}

static int run_malloc_1mib(const char *name, const struct options *opt)
{
	announce(name, opt);
	/* A fixed threshold also switches off glibc's adaptive one, which would reuse heap memory. */
	if (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1)
		return workload_fail("mallopt(M_MMAP_THRESHOLD, %d) failed", MMAP_THRESHOLD);
	return measure_timed(name, malloc_batch, NULL, opt);
}

struct chunking {
	size_t pages_per_chunk;
	size_t page_size;
};

/* Maps `pages` fresh pages and times only the first write to each. */
static int write_fresh_pages(const struct chunking *c, size_t pages, struct batch *b)
{
	size_t len = pages * c->page_size;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return workload_fail("mmap of %zu pages failed: %s", pages, strerror(errno));
#ifdef MADV_NOHUGEPAGE
	/* A huge page would turn 512 faults into one; kernels without THP say EINVAL. */
	if (madvise(p, len, MADV_NOHUGEPAGE) != 0 && errno != EINVAL && errno != ENOSYS) {
		int err = errno;
		munmap(p, len);
		return workload_fail("madvise(MADV_NOHUGEPAGE) failed: %s", strerror(err));
	}
#endif
	struct stamp t0 = stamp_begin();
	touch_pages(p, len, c->page_size);
	batch_add(b, t0, stamp_end());
	munmap(p, len);
	return 0;
}

static int first_write_batch(void *ctx, uint64_t ops, struct batch *b)
{
	const struct chunking *c = ctx;

	for (uint64_t left = ops; left > 0;) {
		size_t pages = left < c->pages_per_chunk ? (size_t)left : c->pages_per_chunk;
		if (write_fresh_pages(c, pages, b) != 0)
			return -1;
		left -= pages;
	}
	b->ops = ops;
	return 0;
}

static int run_first_write(const char *name, const struct options *opt)
{
	const struct param params[] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_NUM("pages_per_chunk", opt->pages),
	};
	long page_size = sysconf(_SC_PAGESIZE);
	struct chunking c = {
		.pages_per_chunk = opt->pages,
		.page_size = page_size > 0 ? (size_t)page_size : 4096,
	};

	proto_workload(name, params, sizeof params / sizeof params[0]);
	return measure_timed(name, first_write_batch, &c, opt);
}

/* ---- CPU placement of pipe_switch ---- */

const char *const placement_names[PLACEMENT_COUNT] = { "same", "disjoint", "free" };

/* cpus[0] is the parent's CPU, cpus[1] the echo child's; count is 0 when nothing is pinned. */
struct pinning {
	cpu_set_t saved; /* the agent's mask before the workload */
	int cpus[2];
	size_t count;
};

/* The first `want` allowed CPUs go to cpus[]; returns how many were found. */
static int first_cpus(const cpu_set_t *set, int *cpus, int want)
{
	int found = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE && found < want; cpu++) {
		if (CPU_ISSET(cpu, set))
			cpus[found++] = cpu;
	}
	return found;
}

static int plan_placement(enum placement placement, struct pinning *pin)
{
	pin->count = 0;
	if (placement == PLACEMENT_FREE)
		return 0;
	if (sched_getaffinity(0, sizeof pin->saved, &pin->saved) != 0)
		return workload_fail("sched_getaffinity failed: %s", strerror(errno));
	int found = first_cpus(&pin->saved, pin->cpus, 2);
	if (found == 0)
		return workload_fail("sched_getaffinity returned no CPU");
	if (placement == PLACEMENT_DISJOINT && found < 2)
		return workload_fail("placement disjoint needs 2 CPUs, this environment allows %d",
				     CPU_COUNT(&pin->saved));
	if (placement == PLACEMENT_SAME)
		pin->cpus[1] = pin->cpus[0];
	pin->count = 2;
	return 0;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

static int pin_parent(const struct pinning *pin)
{
	if (pin->count > 0 && pin_to(pin->cpus[0]) != 0)
		return workload_fail("sched_setaffinity (agent to CPU %d) failed: %s", pin->cpus[0], strerror(errno));
	return 0;
}

/* The first failure is the one reported; a failed restore is one too, as it would skew later workloads. */
static int restore_affinity(const struct pinning *pin, int result)
{
	if (pin->count == 0 || sched_setaffinity(0, sizeof pin->saved, &pin->saved) == 0)
		return result;
	if (result != 0)
		return result;
	return workload_fail("sched_setaffinity (restoring the agent's CPUs) failed: %s", strerror(errno));
}

static void announce_placement(const char *name, const struct options *opt, const struct pinning *pin)
{
	const struct param params[] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_STR("placement", placement_names[opt->placement]),
		PARAM_INTS("cpus", pin->cpus, pin->count),
	};

	proto_workload(name, params, sizeof params / sizeof params[0]);
}

/* ---- processes ---- */

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return workload_fail("waitpid failed: %s", strerror(errno));
	}
	return 0;
}

/* Everything buffered must be out before fork, or a child could print it again. */
static pid_t fork_quietly(void)
{
	fflush(stdout);
	fflush(stderr);
	return fork();
}

struct ping_pong {
	int to_child;
	int from_child;
	pid_t child;
};

_Noreturn static void echo_until_eof(int in, int out)
{
	char byte;

	for (;;) {
		ssize_t n = read(in, &byte, 1);
		if (n == 1) {
			if (write(out, &byte, 1) != 1)
				_exit(1);
		} else if (n == 0 || errno != EINTR) {
			_exit(0);
		}
	}
}

/* Pins itself, tells the parent how that went (0 or an errno value), then echoes. */
_Noreturn static void run_echo_child(int in, int out, const struct pinning *pin)
{
	int err = 0;

	if (pin->count > 0 && pin_to(pin->cpus[1]) != 0)
		err = errno;
	if (write(out, &err, sizeof err) != (ssize_t)sizeof err || err != 0)
		_exit(1);
	echo_until_eof(in, out);
}

static int start_echo_child(struct ping_pong *pp, const struct pinning *pin)
{
	int down[2], up[2];

	if (pipe(down) != 0)
		return workload_fail("pipe failed: %s", strerror(errno));
	if (pipe(up) != 0) {
		int err = errno;
		close(down[0]);
		close(down[1]);
		return workload_fail("pipe failed: %s", strerror(err));
	}
	pp->child = fork_quietly();
	if (pp->child == 0) {
		close(down[1]);
		close(up[0]);
		run_echo_child(down[0], up[1], pin);
	}
	/* The parent keeps no copy of the child's ends, so a dead child shows as EOF. */
	close(down[0]);
	close(up[1]);
	pp->to_child = down[1];
	pp->from_child = up[0];
	if (pp->child < 0) {
		int err = errno;
		close(pp->to_child);
		close(pp->from_child);
		return workload_fail("fork failed: %s", strerror(err));
	}
	return 0;
}

/* The child's first message says whether it could pin itself. */
static int await_echo_child(const struct ping_pong *pp, const struct pinning *pin)
{
	int err;
	ssize_t n = read(pp->from_child, &err, sizeof err);

	if (n != (ssize_t)sizeof err)
		return workload_fail("the echo child did not start: %s", n < 0 ? strerror(errno) : "it exited");
	if (err != 0)
		return workload_fail("sched_setaffinity (echo child to CPU %d) failed: %s", pin->cpus[1],
				     strerror(err));
	return 0;
}

/* Closing our end is the quit signal: the child reads EOF and exits. */
static int stop_echo_child(struct ping_pong *pp)
{
	close(pp->to_child);
	close(pp->from_child);
	return wait_child(pp->child);
}

static int round_trip(const struct ping_pong *pp)
{
	char byte = 'x';

	if (write(pp->to_child, &byte, 1) != 1)
		return workload_fail("pipe write to the echo child failed: %s", strerror(errno));
	ssize_t n = read(pp->from_child, &byte, 1);
	if (n != 1)
		return workload_fail("pipe read from the echo child failed: %s",
				     n == 0 ? "the child exited" : strerror(errno));
	return 0;
}

/* A round trip is two switches, so odd counts are rounded up. */
static int pipe_switch_batch(void *ctx, uint64_t ops, struct batch *b)
{
	const struct ping_pong *pp = ctx;
	uint64_t trips = (ops + 1) / 2;

	struct stamp t0 = stamp_begin();
	for (uint64_t i = 0; i < trips; i++) {
		if (round_trip(pp) != 0)
			return -1;
	}
	batch_add(b, t0, stamp_end());
	b->ops = trips * 2;
	return 0;
}

static int ping_pong(const char *name, const struct options *opt, const struct pinning *pin)
{
	struct ping_pong pp;

	if (start_echo_child(&pp, pin) != 0)
		return -1;
	/* A dead child must become a failed write, not a SIGPIPE killing the agent. */
	void (*old_handler)(int) = signal(SIGPIPE, SIG_IGN);
	int result = await_echo_child(&pp, pin);
	if (result == 0)
		result = measure_timed(name, pipe_switch_batch, &pp, opt);
	if (stop_echo_child(&pp) != 0)
		result = -1;
	signal(SIGPIPE, old_handler);
	return result;
}

/* Unpinned, the switch cost depends on whether the scheduler keeps both processes on one CPU. */
static int run_pipe_switch(const char *name, const struct options *opt)
{
	struct pinning pin;

	if (plan_placement(opt->placement, &pin) != 0)
		return -1;
	announce_placement(name, opt, &pin);
	int result = pin_parent(&pin);
	if (result == 0)
		result = ping_pong(name, opt, &pin);
	return restore_affinity(&pin, result);
}

static int fork_exit_batch(void *ctx, uint64_t ops, struct batch *b)
{
	(void)ctx;
	struct stamp t0 = stamp_begin();
	for (uint64_t i = 0; i < ops; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return workload_fail("fork failed: %s", strerror(errno));
		if (wait_child(pid) != 0)
			return -1;
	}
	batch_add(b, t0, stamp_end());
	b->ops = ops;
	return 0;
}

static int run_fork_exit(const char *name, const struct options *opt)
{
	announce(name, opt);
	/* Flushed once here rather than per fork, which would be timed. */
	fflush(stdout);
	fflush(stderr);
	return measure_timed(name, fork_exit_batch, NULL, opt);
}

const struct workload micro_workloads[] = {
	{ "getpid", run_getpid },
	{ "getppid", run_getppid },
	{ "sched_yield", run_sched_yield },
	{ "clock_gettime", run_clock_gettime },
	{ "malloc_1mib", run_malloc_1mib },
	{ "first_write", run_first_write },
	{ "pipe_switch", run_pipe_switch },
	{ "fork_exit", run_fork_exit },
	{ NULL, NULL },
};
