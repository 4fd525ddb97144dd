/* workload.h: what main and the workload families share: options and table entries (a failure
 * is reported through outcome.h). */
#ifndef GB_WORKLOAD_H
#define GB_WORKLOAD_H

/* Where pipe_switch puts its two processes (--placement). */
enum placement { PLACEMENT_SAME, PLACEMENT_DISJOINT, PLACEMENT_FREE, PLACEMENT_COUNT };

/* The --placement values, indexed by enum placement. */
extern const char *const placement_names[PLACEMENT_COUNT];

/* Command-line options after parsing; every field is valid. */
struct options {
	double min_time_s;
	unsigned values; /* timing workloads: measured batches per run, after calibration */
	unsigned array_mib; /* 0: STREAM sizes its arrays from the cache size */
	unsigned ntimes; /* STREAM: passes over the kernels at most, the first not counted */
	double enough_s; /* STREAM: counted passes stop, after MIN_COUNTED, once they took this long */
	const char *kernels; /* stream: the kernels run in turn, "copy,scale,add,triad" (NULL: all four) */
	unsigned pages;
	double seconds;
	enum placement placement;
	/* Strings are NULL when not given. */
	const char *cwd;     /* exec: the command's working directory (the scratch folder) */
	const char *wrapper; /* exec: run the command through this program (qemu-user) */
	const char *device;  /* fsync_records: the block device written */
	const char *source;  /* upload: where the data comes from */
	const char *dest;    /* upload: where it goes */
	const char *mode;    /* upload: write, no_write or no_upload */
	unsigned count;      /* fsync_records: records to write */
	unsigned size_mib;   /* upload: MiB to move */
	int drop_caches;     /* exec: sync and drop the kernel's caches first */
	unsigned warmup_runs; /* exec: untimed runs of the command before the measured one */
	unsigned clock_marks_ms; /* the clock check's marks after the hello, 0: none */
	unsigned run_in_ms;  /* timing workloads: the process's first warm-up lasts this long */
	const char *peer;     /* net_rr, net_stream: the host's net_peer, A.B.C.D:PORT */
	const char *net_if;   /* net_*: the guest interface to configure, or auto */
	const char *net_addr; /* net_*: its address, A.B.C.D/PREFIX */
	const char *net_gw;   /* net_*: its default route's gateway (a peer beyond its subnet), or NULL */
	const char *listen;   /* net_peer: the IPv4 address to listen on */
	const char *listen_unix; /* net_peer: or the Unix socket to listen on (a VMM's hybrid vsock) */
	unsigned listen_vsock;   /* net_peer: or the vsock port to listen on (vhost-vsock); 0: none */
	unsigned vsock_port;     /* vsock_rr: the host's port the agent connects to (CID 2) */
	unsigned cpu;         /* net_*: the CPU the agent measures on (iperf3's -A); NO_CPU: the scheduler's choice */
	const char *congestion; /* net_*, net_peer: TCP congestion control of every connection (iperf3's -C) */
	/* exec: the command (everything after the word exec), NULL-terminated */
	char **command;
};

#define NO_CPU 0xffffffffu

struct workload {
	const char *name;
	/* Prints the workload record and samples; returns -1 after workload_fail() (outcome.h). */
	int (*run)(const char *name, const struct options *opt);
};

/* Each family's table ends with an entry whose name is NULL. */
extern const struct workload micro_workloads[];
extern const struct workload stream_workloads[];
extern const struct workload hang_workloads[];
extern const struct workload boot_workloads[];
extern const struct workload exec_workloads[];
extern const struct workload durable_workloads[];
extern const struct workload upload_workloads[];
extern const struct workload vmexit_workloads[];
extern const struct workload net_workloads[];
extern const struct workload snapshot_workloads[];

/* The forms of the network options' values (net.c checks them for main). */
enum net_text { NET_ADDR, NET_ADDR_PORT, NET_ADDR_PREFIX };
/* Nonzero if text is an IPv4 address, with ":PORT" or "/PREFIX" after it as form says. */
int net_text_valid(const char *text, enum net_text form);
/* The host side of the network workloads (net.c): listens on opt->listen, prints one line
 * and serves until killed; no records. Returns an exit status only if it cannot listen. */
int net_peer(const struct options *opt);

#endif
