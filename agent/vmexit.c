/* vmexit.c: what a VM exit costs: cpuid, rdtsc, rdtscp and a read from an unused I/O port. */
#include "calibrate.h"
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#define HAVE_VMEXIT 1
#include <cpuid.h>  /* __get_cpuid: feature checks outside the timed loops */
#include <sys/io.h> /* ioperm */
#else
#define HAVE_VMEXIT 0
#endif

/* rdtscp support: CPUID 0x80000001, EDX bit 27 (older <cpuid.h> lack bit_RDTSCP). */
#define EDX_RDTSCP (1u << 27)

/* The cpuid leaf timed: leaf 0 (highest basic leaf and vendor) exists on every x86-64 CPU. */
#define CPUID_LEAF 0

/*
 * The port port_read reads. 0xed is the port Linux offers instead of 0x80 for
 * its I/O delay (io_delay=0xed), because nothing decodes it; QEMU's pc, q35
 * and microvm machines map nothing there, so a read is answered by QEMU's
 * unassigned-port handler. Not 0x80: QEMU pc/q35 have an ioport80 device and
 * Cloud Hypervisor a debug port there. Not 0xe9 or 0x402 (debug consoles),
 * nor anything from 0x1000 up, where firmware places PCI I/O BARs.
 */
#define UNUSED_PORT 0xed

/* Results land here so that every operation's value is used. */
static volatile uint32_t sink;

#if HAVE_VMEXIT

/*
 * Each instruction is a volatile asm: the compiler may neither drop it nor
 * hoist it out of the loop, even though its result is the same every time.
 */
static inline uint32_t do_cpuid(void)
{
	uint32_t a = CPUID_LEAF, b, c = 0, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return a ^ b ^ c ^ d;
}

/* No fences: back to back, this is the instruction's own cost (or its exit's). */
static inline uint32_t do_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo ^ hi;
}

static inline uint32_t do_rdtscp(void)
{
	uint32_t lo, hi, aux;

	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	return lo ^ hi ^ aux;
}

static inline uint32_t do_inb(void)
{
	uint8_t value;

	__asm__ volatile("inb %w1, %b0" : "=a"(value) : "Nd"((uint16_t)UNUSED_PORT));
	return value;
}

/* One batch function per instruction, so that each loop holds the instruction inline. */
#define BATCH_OF(fn)                                                          \
	static int fn##_batch(void *ctx, uint64_t ops, struct batch *b)       \
	{                                                                     \
		uint32_t acc = 0;                                             \
		(void)ctx;                                                    \
		struct stamp t0 = stamp_begin();                              \
		for (uint64_t i = 0; i < ops; i++)                            \
			acc += fn();                                          \
		batch_add(b, t0, stamp_end());                                \
		sink = acc;                                                   \
		b->ops = ops;                                                 \
		return 0;                                                     \
	}

BATCH_OF(do_cpuid)
BATCH_OF(do_rdtsc)
BATCH_OF(do_rdtscp)
BATCH_OF(do_inb)

static int run_cpuid(const char *name, const struct options *opt)
{
	const struct param params[] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_NUM("leaf", CPUID_LEAF),
	};

	proto_workload(name, params, sizeof params / sizeof params[0]);
	return measure_timed(name, do_cpuid_batch, NULL, opt);
}

static int run_rdtsc(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values) };

	proto_workload(name, params, sizeof params / sizeof params[0]);
	return measure_timed(name, do_rdtsc_batch, NULL, opt);
}

/* rdtscp is an extended feature (qemu64, QEMU's default CPU model, lacks it): #UD would kill the agent. */
static int run_rdtscp(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values) };
	unsigned a, b, c, d;

	proto_workload(name, params, sizeof params / sizeof params[0]);
	if (!__get_cpuid(0x80000001, &a, &b, &c, &d) || !(d & EDX_RDTSCP))
		return workload_unsupported("this CPU does not offer rdtscp (CPUID 0x80000001 EDX bit 27 is clear);"
				     " under QEMU choose a CPU model that has it, e.g. -cpu max");
	return measure_timed(name, do_rdtscp_batch, NULL, opt);
}

/* Why ioperm() failed, in the words a user needs (one line, with the errno text before it). */
static const char *ioperm_hint(int err)
{
	if (err == EPERM)
		return "reading an I/O port needs root (CAP_SYS_RAWIO)";
	if (err == ENOSYS)
		return "this kernel was built without ioperm (CONFIG_X86_IOPL_IOPERM)";
	return "the kernel refused access to the port";
}

/* User space may read a port only after ioperm(), which needs CAP_SYS_RAWIO. */
static int run_port_read(const char *name, const struct options *opt)
{
	const struct param params[] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_NUM("port", UNUSED_PORT),
	};

	proto_workload(name, params, sizeof params / sizeof params[0]);
	if (ioperm(UNUSED_PORT, 1, 1) != 0) {
		int err = errno;
		return workload_unsupported("ioperm(0x%x) failed: %s: %s; port_read is for full-system guests (root, ioperm)",
				     UNUSED_PORT, strerror(err), ioperm_hint(err));
	}
	int result = measure_timed(name, do_inb_batch, NULL, opt);
	ioperm(UNUSED_PORT, 1, 0);
	return result;
}

#else /* !HAVE_VMEXIT */

static int not_x86(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values) };

	proto_workload(name, params, sizeof params / sizeof params[0]);
	return workload_unsupported("%s times an x86-64 instruction; this agent was built for another architecture", name);
}

#define run_cpuid not_x86
#define run_rdtsc not_x86
#define run_rdtscp not_x86
#define run_port_read not_x86

#endif

const struct workload vmexit_workloads[] = {
	{ "cpuid", run_cpuid },
	{ "rdtsc", run_rdtsc },
	{ "rdtscp", run_rdtscp },
	{ "port_read", run_port_read },
	{ NULL, NULL },
};
