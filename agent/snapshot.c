/* snapshot.c: the agent's side of snapshot and restore. It dirties --size-mib MiB of its own
 * memory with a pattern drawn from a random token, says it is ready (the host then saves the
 * instance), and blocks reading a line on standard input. The host restores the instance and
 * writes that line: the agent answers at once with its token and pid, so the host can time
 * the restore to this record and check that the same process, with the same state, goes on
 * (the record's sequence number follows the last one before the save). Then it times the
 * first write to each page of its memory after the restore (a VMM or CRIU may bring pages
 * back lazily), a second write for contrast, and checks every byte of every page.
 * docs/agent-protocol.md, docs/workloads-startup.md. */
#define _GNU_SOURCE
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#define PAGE 4096u
#define TOKEN_BITS 48 /* a JSON number carries it exactly */

static uint64_t draw_token(void)
{
	uint64_t token = 0;

	/* GRND_NONBLOCK: early in a guest's boot the kernel's random pool may not be ready yet,
	 * and a blocking getrandom waited for it past the run's timeout (1 start in 5 of a guest
	 * under KVM nested in an emulated L1). The token need only differ between instances. */
	if (getrandom(&token, sizeof token, GRND_NONBLOCK) != (ssize_t)sizeof token)
		token = monotonic_ns() ^ ((uint64_t)getpid() << 32); /* none yet: still unique */
	token &= (UINT64_C(1) << TOKEN_BITS) - 1;
	return token ? token : 1;
}

/* Page p's contents: 64-bit words of a xorshift64* sequence seeded from the token and p, so
 * that no VMM skips a page as a zero page and no compressor shrinks the image below what a
 * real process's memory gives (random data does not compress). */
static void page_fill(uint64_t *words, uint64_t token, size_t p)
{
	uint64_t x = (token ^ ((uint64_t)p * UINT64_C(0x9e3779b97f4a7c15))) | 1;

	for (size_t i = 0; i < PAGE / sizeof *words; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		words[i] = x * UINT64_C(0x2545f4914f6cdd1d);
	}
}

/* The first byte of page p (what touch() reads back). */
static unsigned char page_byte(uint64_t token, size_t p)
{
	uint64_t words[PAGE / sizeof(uint64_t)];

	page_fill(words, token, p);
	return (unsigned char)words[0];
}

/* Waits for the host's line on standard input; 0 once it came, -1 at end of input. */
static int wait_for_line(void)
{
	char c;

	for (;;) {
		ssize_t got = read(0, &c, 1);

		if (got == 1 && c == '\n')
			return 0;
		if (got == 0)
			return -1;
		if (got < 0 && errno != EINTR)
			return -1;
	}
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One write to the first byte of each page, each timed (took[p]); the bytes read are kept
 * in seen[p], to be checked after the timed loop. */
static void touch(volatile unsigned char *memory, size_t pages, uint64_t *took, unsigned char *seen)
{
	for (size_t p = 0; p < pages; p++) {
		uint64_t before = monotonic_ns();
		unsigned char was = memory[p * PAGE];

		memory[p * PAGE] = (unsigned char)(was + 1);
		took[p] = monotonic_ns() - before;
		seen[p] = was;
	}
}

/* How many pages' first byte, as touch() read it, was not the pattern's plus `added`. */
static size_t unexpected(const unsigned char *seen, size_t pages, uint64_t token, unsigned char added)
{
	size_t wrong = 0;

	for (size_t p = 0; p < pages; p++)
		wrong += seen[p] != (unsigned char)(page_byte(token, p) + added);
	return wrong;
}

static int run_snapshot(const char *name, const struct options *opt)
{
	size_t pages = (size_t)opt->size_mib * (1024u * 1024u / PAGE);
	uint64_t token = draw_token();
	const struct param params[] = {
		PARAM_NUM("size_mib", opt->size_mib),
		PARAM_NUM("token", (double)token),
		PARAM_NUM("pid", (double)getpid()),
	};
	unsigned char *memory, *seen;
	uint64_t *took, first_ns, total_ns;
	double warm_p50;
	size_t wrong = 0;

	proto_workload(name, params, sizeof params / sizeof params[0]);
	memory = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	took = malloc(pages * sizeof *took);
	seen = malloc(pages);
	if (memory == MAP_FAILED || took == NULL || seen == NULL)
		return workload_fail("cannot map %u MiB: %s", opt->size_mib, strerror(errno));
	for (size_t p = 0; p < pages; p++)
		page_fill((uint64_t *)(memory + p * PAGE), token, p);
	/* The host saves the instance once it reads this, while the agent waits for its line. */
	proto_sample(name, "snapshot_ready", "count", (double)pages);
	if (wait_for_line() != 0)
		return workload_fail("standard input ended before the host said the instance was restored");
	proto_sample(name, "restored_token", "count", (double)token);
	proto_sample(name, "restored_pid", "count", (double)getpid());

	first_ns = monotonic_ns();
	touch(memory, pages, took, seen);
	total_ns = monotonic_ns() - first_ns;
	wrong += unexpected(seen, pages, token, 0);
	qsort(took, pages, sizeof *took, by_value);
	proto_sample(name, "touch_p50", "ns", sorted_quantile(took, pages, 0.50));
	proto_sample(name, "touch_p90", "ns", sorted_quantile(took, pages, 0.90));
	proto_sample(name, "touch_p99", "ns", sorted_quantile(took, pages, 0.99));
	proto_sample(name, "touch_max", "ns", (double)took[pages - 1]);
	proto_sample(name, "touch_total", "ms", (double)total_ns / 1e6);
	touch(memory, pages, took, seen);
	wrong += unexpected(seen, pages, token, 1);
	qsort(took, pages, sizeof *took, by_value);
	warm_p50 = sorted_quantile(took, pages, 0.50);
	proto_sample(name, "touch_again_p50", "ns", warm_p50);
	proto_sample(name, "touch_pages", "count", (double)pages);
	for (size_t p = 0; p < pages; p++) {
		uint64_t words[PAGE / sizeof(uint64_t)];

		page_fill(words, token, p);
		/* byte 0 was written twice, one up each time */
		((unsigned char *)words)[0] = (unsigned char)(((unsigned char *)words)[0] + 2);
		wrong += memcmp(words, memory + p * PAGE, PAGE) != 0;
	}
	munmap(memory, pages * PAGE);
	free(took);
	free(seen);
	if (wrong)
		return workload_fail("memory changed across the restore: %zu of %zu pages differ", wrong, pages);
	return 0;
}

const struct workload snapshot_workloads[] = {
	{ "snapshot", run_snapshot },
	{ NULL, NULL },
};
