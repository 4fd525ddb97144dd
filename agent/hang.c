/* hang.c: the sleeping workloads. hang sleeps so the host's timeouts can be tested; idle
 * sleeps --seconds after its workload record, while the host measures the instance at rest. */
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int sleep_for(double seconds)
{
	struct timespec left;

	left.tv_sec = (time_t)seconds;
	left.tv_nsec = (long)((seconds - (double)left.tv_sec) * 1e9);
	/* Signals (a PID 1 gets odd ones) only shorten the sleep; go back for the rest. */
	while (nanosleep(&left, &left) != 0) {
		if (errno != EINTR)
			return workload_fail("nanosleep failed: %s", strerror(errno));
	}
	return 0;
}

static int run_hang(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("seconds", opt->seconds) };

	/* Flushed like every record, so the host sees the hang has begun. */
	proto_workload(name, params, 1);
	if (opt->seconds > 0)
		return sleep_for(opt->seconds);
	for (;;)
		pause();
}

/* The record says the instance is ready; then nothing runs in it but this sleep. */
static int run_idle(const char *name, const struct options *opt)
{
	const struct param params[] = { PARAM_NUM("seconds", opt->seconds) };

	proto_workload(name, params, 1);
	return opt->seconds > 0 ? sleep_for(opt->seconds) : 0;
}

const struct workload hang_workloads[] = {
	{ "hang", run_hang },
	{ "idle", run_idle },
	{ NULL, NULL },
};
