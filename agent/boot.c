/* boot.c: the start-up workloads. boot reports how long the guest has been up when the agent
 * starts; start does nothing, so that its hello and its end time the environment's start and
 * stop on the host's clock. */
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* CLOCK_BOOTTIME starts at zero when the guest kernel starts its clocks (and, unlike
 * CLOCK_MONOTONIC, keeps counting through a suspend), so it is the guest's own figure
 * for "up since". It is read before any record is written: on an emulated serial
 * console printing one record takes milliseconds. */
static int run_boot(const char *name, const struct options *opt)
{
	struct timespec now;
	int clock_status = clock_gettime(CLOCK_BOOTTIME, &now);
	int clock_errno = errno;

	(void)opt;
	proto_workload(name, NULL, 0);
	if (clock_status != 0)
		return workload_fail("clock_gettime(CLOCK_BOOTTIME) failed: %s", strerror(clock_errno));
	proto_sample(name, "guest_uptime", "ms", (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6);
	return 0;
}

/* Nothing but the workload record: what start measures is the environment's, on the host. */
static int run_start(const char *name, const struct options *opt)
{
	(void)opt;
	proto_workload(name, NULL, 0);
	return 0;
}

const struct workload boot_workloads[] = {
	{ "boot", run_boot },
	{ "start", run_start },
	{ NULL, NULL },
};
