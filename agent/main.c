/* main.c: command-line parsing and running the named workloads in order. */
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "usage: gbagent [--min-time S] [--values N] [--array-mib N] [--ntimes N] [--enough S] [--kernels K,...] [--pages N] [--seconds S] [--placement P] [--device PATH] [--count N] [--source PATH] [--dest PATH] [--mode M] [--size-mib N] [--peer A.B.C.D:PORT] [--net-if NAME] [--net-addr A.B.C.D/PREFIX] [--net-gw A.B.C.D] [--cpu N] [--congestion NAME] [--vsock-port N] WORKLOAD... | [--cwd DIR] [--wrapper PROG] [--drop-caches] [--warmup-runs N] exec PROGRAM [ARG...] | (--listen A.B.C.D | --listen-unix PATH | --listen-vsock PORT) [--congestion NAME] net_peer | --list | --version"

static const struct workload *const families[] = { micro_workloads, stream_workloads, hang_workloads, boot_workloads,
						     exec_workloads, durable_workloads, upload_workloads, vmexit_workloads,
						     net_workloads, snapshot_workloads };

/* Where a value goes in struct options, by kind: SECONDS a double, COUNT an unsigned,
 * PLACEMENT an enum placement, STRING and IPV4* (strings that net.c checks the form of) a
 * const char *. */
enum value_kind { SECONDS, COUNT, PLACEMENT, STRING, IPV4, IPV4_PORT, IPV4_PREFIX };

/* One option taking a value: where it goes, its bounds and the wording of its error line. */
struct option_spec {
	const char *name;
	enum value_kind kind;
	size_t offset; /* of its field in struct options */
	double min;
	int min_inclusive;
	double max;
	const char *expected; /* completes "'x' is not ..." */
	const char *example;  /* completes "(try ...)" */
};

#define AT(field) offsetof(struct options, field)

static const struct option_spec option_specs[] = {
	{ "--min-time", SECONDS, AT(min_time_s), 0, 0, 3600, "a number of seconds > 0 and <= 3600", "--min-time 0.1" },
	{ "--values", COUNT, AT(values), 1, 1, 1000, "a whole number from 1 to 1000", "--values 3" },
	{ "--array-mib", COUNT, AT(array_mib), 1, 1, 65536, "a whole number of MiB from 1 to 65536", "--array-mib 80" },
	{ "--ntimes", COUNT, AT(ntimes), 2, 1, 1000000, "a whole number from 2 to 1000000", "--ntimes 10" },
	{ "--enough", SECONDS, AT(enough_s), 0, 1, 3600, "a number of seconds from 0 to 3600 (0: always --ntimes passes)", "--enough 1" },
	{ "--kernels", STRING, AT(kernels), 0, 1, 0, "STREAM kernels, comma-separated, of copy, scale, add, triad", "--kernels triad" },
	{ "--pages", COUNT, AT(pages), 1, 1, 1048576, "a whole number of pages from 1 to 1048576", "--pages 4096" },
	{ "--seconds", SECONDS, AT(seconds), 0, 1, 31536000, "a number of seconds >= 0", "--seconds 30, or 0 to sleep forever" },
	{ "--placement", PLACEMENT, AT(placement), 0, 1, PLACEMENT_COUNT - 1, "one of same, disjoint, free", "--placement same" },
	{ "--count", COUNT, AT(count), 1, 1, 1000000, "a whole number from 1 to 1000000", "--count 30" },
	{ "--size-mib", COUNT, AT(size_mib), 1, 1, 1048576, "a whole number of MiB from 1 to 1048576", "--size-mib 256" },
	{ "--warmup-runs", COUNT, AT(warmup_runs), 0, 1, 10, "a whole number from 0 to 10", "--warmup-runs 1" },
	{ "--cwd", STRING, AT(cwd), 0, 1, 0, "a folder path", "--cwd /scratch" },
	{ "--wrapper", STRING, AT(wrapper), 0, 1, 0, "a program path", "--wrapper /usr/bin/qemu-x86_64" },
	{ "--device", STRING, AT(device), 0, 1, 0, "a device path", "--device /dev/vdb" },
	{ "--source", STRING, AT(source), 0, 1, 0, "a path", "--source /dev/hvc1" },
	{ "--dest", STRING, AT(dest), 0, 1, 0, "a path", "--dest /scratch/upload" },
	{ "--mode", STRING, AT(mode), 0, 1, 0, "a mode name", "--mode write" },
	{ "--clock-marks-ms", COUNT, AT(clock_marks_ms), 0, 1, 10000, "a whole number of ms from 0 to 10000", "--clock-marks-ms 300" },
	{ "--run-in-ms", COUNT, AT(run_in_ms), 0, 1, 10000, "a whole number of ms from 0 to 10000", "--run-in-ms 100" },
	{ "--peer", IPV4_PORT, AT(peer), 0, 1, 0, "an IPv4 address and port A.B.C.D:PORT", "--peer 10.0.2.2:40123" },
	{ "--net-if", STRING, AT(net_if), 0, 1, 0, "a network interface name, or auto", "--net-if eth0" },
	{ "--net-addr", IPV4_PREFIX, AT(net_addr), 0, 1, 0, "an IPv4 address and prefix length A.B.C.D/PREFIX", "--net-addr 10.0.2.15/24" },
	{ "--net-gw", IPV4, AT(net_gw), 0, 1, 0, "an IPv4 address A.B.C.D", "--net-gw 10.0.2.2" },
	{ "--congestion", STRING, AT(congestion), 0, 1, 0, "a TCP congestion control's name", "--congestion cubic" },
	{ "--cpu", COUNT, AT(cpu), 0, 1, 4095, "a CPU number from 0 to 4095", "--cpu 0" },
	{ "--listen", IPV4, AT(listen), 0, 1, 0, "an IPv4 address A.B.C.D", "--listen 127.0.0.1" },
	{ "--listen-unix", STRING, AT(listen_unix), 0, 1, 0, "a Unix socket's path", "--listen-unix /run/v.sock_5000" },
	{ "--listen-vsock", COUNT, AT(listen_vsock), 1, 1, 2147483647, "a vsock port from 1 to 2147483647", "--listen-vsock 5000" },
	{ "--vsock-port", COUNT, AT(vsock_port), 1, 1, 2147483647, "a vsock port from 1 to 2147483647", "--vsock-port 5000" },
};

#define OPTION_COUNT (sizeof option_specs / sizeof option_specs[0])

_Noreturn static void bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn static void bad_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("gbagent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static const struct workload *find_workload(const char *name)
{
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		for (const struct workload *w = families[f]; w->name; w++) {
			if (strcmp(w->name, name) == 0)
				return w;
		}
	}
	return NULL;
}

static void list_workloads(void)
{
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		for (const struct workload *w = families[f]; w->name; w++)
			puts(w->name);
	}
}

/* A name from placement_names becomes its index. */
static int parse_placement(const char *text, double *out)
{
	for (int i = 0; i < PLACEMENT_COUNT; i++) {
		if (strcmp(text, placement_names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

/* strtod and strtoull both accept more than a plain number (signs, spaces, inf, nan). */
static int parse_value(const struct option_spec *spec, const char *text, double *out)
{
	char *end;

	if (spec->kind == PLACEMENT)
		return parse_placement(text, out);
	if (!isdigit((unsigned char)text[0]) && !(spec->kind == SECONDS && text[0] == '.'))
		return -1;
	errno = 0;
	if (spec->kind == SECONDS)
		*out = strtod(text, &end);
	else
		*out = (double)strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || !isfinite(*out))
		return -1;
	if (*out < spec->min || (*out == spec->min && !spec->min_inclusive) || *out > spec->max)
		return -1;
	return 0;
}

static void store(struct options *opt, const struct option_spec *spec, const char *text, double number)
{
	char *field = (char *)opt + spec->offset;

	switch (spec->kind) {
	case SECONDS:
		*(double *)field = number;
		break;
	case COUNT:
		*(unsigned *)field = (unsigned)number;
		break;
	case PLACEMENT:
		*(enum placement *)field = (enum placement)number;
		break;
	default: /* STRING, IPV4* */
		*(const char **)field = text;
	}
}

/* Every option, for the line that says an option is unknown. */
static void known_options(char *out, size_t size)
{
	size_t used = (size_t)snprintf(out, size, "options:");

	for (size_t i = 0; i < OPTION_COUNT && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, " %s,", option_specs[i].name);
	if (used < size)
		snprintf(out + used, size - used, " --drop-caches, --list, --version");
}

/* Matches "--name" (value in the next argument) or "--name=value". */
static const struct option_spec *match_option(const char *arg, const char **inline_value)
{
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		size_t len = strlen(option_specs[i].name);
		if (strncmp(arg, option_specs[i].name, len) != 0)
			continue;
		if (arg[len] == '\0') {
			*inline_value = NULL;
			return &option_specs[i];
		}
		if (arg[len] == '=') {
			*inline_value = arg + len + 1;
			return &option_specs[i];
		}
	}
	return NULL;
}

/* Returns how many arguments the option used. */
static int take_option(struct options *opt, int argc, char **argv, int i)
{
	const char *value;
	const struct option_spec *spec = match_option(argv[i], &value);
	double number;
	int used = 1;

	if (!spec) {
		char known[1024];

		known_options(known, sizeof known);
		bad_usage("unknown option '%s' (%s)", argv[i], known);
	}
	if (!value) {
		if (i + 1 >= argc)
			bad_usage("%s needs a value (try %s)", spec->name, spec->example);
		value = argv[i + 1];
		used = 2;
	}
	if (spec->kind == STRING) {
		if (value[0] == '\0')
			bad_usage("%s: needs %s, not an empty string (try %s)", spec->name, spec->expected, spec->example);
		store(opt, spec, value, 0);
		return used;
	}
	if (spec->kind == IPV4 || spec->kind == IPV4_PORT || spec->kind == IPV4_PREFIX) {
		enum net_text form = spec->kind == IPV4 ? NET_ADDR : spec->kind == IPV4_PORT ? NET_ADDR_PORT : NET_ADDR_PREFIX;
		if (!net_text_valid(value, form))
			bad_usage("%s: '%s' is not %s (try %s)", spec->name, value, spec->expected, spec->example);
		store(opt, spec, value, 0);
		return used;
	}
	if (parse_value(spec, value, &number) != 0)
		bad_usage("%s: '%s' is not %s (try %s)", spec->name, value, spec->expected, spec->example);
	store(opt, spec, NULL, number);
	return used;
}

/* Options may come before or after the workload names; workloads[] collects the names in order.
 * net_peer is no workload but the host side of the network ones: *peer says it was named. */
static int parse_args(int argc, char **argv, struct options *opt, const struct workload **workloads, int *peer)
{
	int count = 0;
	int options_done = 0;

	for (int i = 1; i < argc;) {
		const char *arg = argv[i];
		if (!options_done && strcmp(arg, "--") == 0) {
			options_done = 1;
			i++;
		} else if (!options_done && strcmp(arg, "--list") == 0) {
			list_workloads();
			exit(0);
		} else if (!options_done && strcmp(arg, "--version") == 0) {
			printf("%s %s (protocol %d)\n", AGENT_NAME, AGENT_VERSION, PROTOCOL_VERSION);
			exit(0);
		} else if (!options_done && strcmp(arg, "--drop-caches") == 0) {
			opt->drop_caches = 1;
			i++;
		} else if (!options_done && arg[0] == '-') {
			i += take_option(opt, argc, argv, i);
		} else if (strcmp(arg, "net_peer") == 0) {
			*peer = 1;
			i++;
		} else {
			workloads[count] = find_workload(arg);
			if (!workloads[count])
				bad_usage("unknown workload '%s' (gbagent --list shows the names)", arg);
			count++;
			i++;
			if (strcmp(arg, "exec") == 0) {
				/* Everything after exec is its command, options included. */
				if (i >= argc)
					bad_usage("exec needs a program to run (try exec /usr/bin/true)");
				opt->command = argv + i;
				break;
			}
		}
	}
	if (*peer && count > 0)
		bad_usage("net_peer serves until it is killed, so it runs alone, not with %s", workloads[0]->name);
	if (*peer && (!!opt->listen + !!opt->listen_unix + !!opt->listen_vsock) != 1)
		bad_usage("net_peer needs one of --listen A.B.C.D, --listen-unix PATH or --listen-vsock PORT, "
			  "where it listens (try --listen 127.0.0.1)");
	if (count == 0 && !*peer)
		bad_usage("no workload named; " USAGE);
	return count;
}

/* The clock check's marks: CLOCK_MARKS records, each when the agent's own clock has moved
 * another ms / CLOCK_MARKS since the hello, before any workload runs. The host times their
 * arrival: a guest clock that runs fast or slow shows in every run, however short the run
 * is on the host's clock (docs/statistics.md, "The clock check"). */
#define CLOCK_MARKS 3

static void clock_marks(unsigned ms)
{
	if (ms == 0)
		return;
	uint64_t start = monotonic_ns();
	for (unsigned k = 1; k <= CLOCK_MARKS; k++) {
		uint64_t due = start + (uint64_t)ms * UINT64_C(1000000) * k / CLOCK_MARKS;
		struct timespec at = { (time_t)(due / UINT64_C(1000000000)), (long)(due % UINT64_C(1000000000)) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		proto_clock(k);
	}
}

int main(int argc, char **argv)
{
	struct options opt = {
		.min_time_s = 0.1,
		.values = 1,
		.array_mib = 0,
		.ntimes = 10,
		.pages = 4096,
		.seconds = 0,
		.placement = PLACEMENT_SAME,
		.count = 30,
		.size_mib = 256,
		.cpu = NO_CPU,
	};
	const struct workload **workloads = calloc((size_t)argc, sizeof *workloads);
	int ok = 1;
	int peer = 0;

	if (!workloads) {
		fputs("gbagent: out of memory\n", stderr);
		return 1;
	}
	int count = parse_args(argc, argv, &opt, workloads, &peer);
	/* The peer's standard output is its one listening line: no hello, no end. */
	if (peer)
		return net_peer(&opt);
	proto_init();
	proto_hello(argc - 1, argv + 1);
	clock_marks(opt.clock_marks_ms);
	for (int i = 0; i < count; i++) {
		outcome_clear();
		if (workloads[i]->run(workloads[i]->name, &opt) != 0) {
			proto_error(workloads[i]->name, outcome_message(), outcome_unsupported());
			ok = 0;
		}
	}
	proto_end(ok);
	free(workloads);
	return ok && !proto_write_failed() ? 0 : 1;
}
