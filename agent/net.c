/* net.c: the network workloads, run inside an environment against a peer on the host:
 * net_rr (1-byte TCP round trips) and net_stream (TCP throughput each way), and the host
 * side, net_peer, which main runs on its own, outside the record stream.
 *
 * The peer's protocol, per TCP connection. The client first sends a 12-byte header:
 *
 *   bytes 0-3   "GBN1"
 *   byte  4     op: 'R', 'U' or 'D'
 *   bytes 5-7   zero
 *   bytes 8-11  the chunk size in bytes, little-endian (1 to 1 GiB; 'R' ignores it)
 *
 * then, until the client closes the connection:
 *
 *   'R' request/response: the peer writes back every byte it reads, at once;
 *   'U' client to host: the peer reads a 4-byte little-endian count N, then exactly N
 *       chunks, then writes the byte 'K';
 *   'D' host to client: the peer reads one byte (any), then writes one chunk.
 *
 * Round trips set TCP_NODELAY on both ends; streams keep Nagle, as iperf3 does by default.
 *
 * A bad header (magic, op, a chunk out of range) closes the connection. Every write of
 * bulk data is of at most IO_BYTES, iperf3's default length for TCP, on both sides.
 *
 * net_stream always sends a chunk of NET_UNIT (1 MiB) in its headers and moves a measured
 * chunk of N MiB as N units back to back: to the host, the count N, N MiB, then one ack;
 * to the guest, N request bytes at once then N MiB. So each of its two connections is opened once, before
 * the warm-up, and stays warm (its congestion window grown) through the calibration and
 * the values; a connection opened afresh for the final size would start slow again.
 */
#define _GNU_SOURCE /* accept4 */
#include "calibrate.h"
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#define NET_MAGIC "GBN1"
#define HEADER_BYTES 12
#define IO_BYTES (128u * 1024u)
/* Bulk data is copied from and to IO_OFFSET bytes past a page boundary, on both sides.
 * Written whole, IO_BYTES at a time, a buffer on a page boundary lines up with the
 * kernel's socket pages, and the copies ran about a third slower on an AMD EPYC host
 * (docs/measurements.md); where malloc put a buffer depended on what came before it. */
#define IO_OFFSET 64u
static char io_out[IO_BYTES + IO_OFFSET] __attribute__((aligned(4096)));
static char io_in[IO_BYTES + IO_OFFSET] __attribute__((aligned(4096)));
#define NET_UNIT (1024u * 1024u)
/* A measured chunk of at most 16 GiB: at 30 Gbit/s a value of 4 s (a chunk costs no memory:
 * its units reuse one buffer) */
#define MAX_UNITS 16384u
#define MAX_CHUNK (1024u * NET_UNIT) /* the largest chunk a header may name: 1 GiB */
/* A value of net_rr keeps every round trip's time, 8 bytes each: 2M of them is 16 MiB. A
 * value that would last longer (a --min-time over 20 s at 10 us a round trip) stops at this
 * many round trips, and so lasts less than --min-time. */
#define RR_MAX_TRIPS (UINT64_C(1) << 21)
/* Warm-ups, or --run-in-ms where longer: a fresh TCP connection's first exchanges go
 * through slow start, delayed ACKs and cold caches on both sides. */
#define RR_WARMUP_MS 50
#define STREAM_WARMUP_MS 100
/* The peer may start listening, or the guest's interface come up, a moment late. */
#define CONNECT_RETRY_MS 5000
/* A virtio NIC appears when its driver has probed, which may be after the agent starts. */
#define APPEAR_MS 10000
#define POLL_NS 10000000L
/* A connection that moves nothing for this long has lost its peer. */
#define SILENCE_S 20

static void pause_poll(void)
{
	struct timespec pause = { 0, POLL_NS };

	nanosleep(&pause, NULL);
}

static uint64_t ms_to_ns(uint64_t ms)
{
	return ms * UINT64_C(1000000);
}

/* ---- addresses ---- */

/* The IPv4 address in text[0..len) (dotted quad only, as inet_pton takes it for AF_INET). */
static int parse_ipv4(const char *text, size_t len, struct in_addr *addr)
{
	char buf[INET_ADDRSTRLEN];

	if (len == 0 || len >= sizeof buf)
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return inet_pton(AF_INET, buf, addr) == 1 ? 0 : -1;
}

/* Digits only, from lo to hi: strtoul would take signs and spaces. */
static int parse_small(const char *text, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long v = 0;

	if (!*text || strlen(text) > 5)
		return -1;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* ADDR, ADDR:PORT (1-65535) or ADDR/PREFIX (1-32) as `form` says; *number gets the part after. */
static int parse_net_text(const char *text, enum net_text form, struct in_addr *addr, unsigned *number)
{
	const char *sep = NULL;

	*number = 0;
	if (form == NET_ADDR)
		return parse_ipv4(text, strlen(text), addr);
	sep = strrchr(text, form == NET_ADDR_PORT ? ':' : '/');
	if (!sep || parse_ipv4(text, (size_t)(sep - text), addr) != 0)
		return -1;
	return form == NET_ADDR_PORT ? parse_small(sep + 1, 1, 65535, number) : parse_small(sep + 1, 1, 32, number);
}

int net_text_valid(const char *text, enum net_text form)
{
	struct in_addr addr;
	unsigned number;

	return parse_net_text(text, form, &addr, &number) == 0;
}

/* ---- the guest's network, configured with ioctls (a guest has no ip program) ---- */

/* Why the configuration failed, kept so that a second workload reports it again. */
static struct {
	int unsupported;
	char why[240];
} setup;

static int setup_fail(int unsupported, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int setup_fail(int unsupported, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(setup.why, sizeof setup.why, fmt, ap);
	va_end(ap);
	setup.unsupported = unsupported;
	return -1;
}

/* Lacking CAP_NET_ADMIN is the environment's limit (a container, a user), not a failure. */
static int ioctl_fail(const char *call, const char *ifname)
{
	int err = errno;

	if (err == EPERM || err == EACCES)
		return setup_fail(1, "configuring interface %s needs CAP_NET_ADMIN: %s: %s", ifname, call, strerror(err));
	return setup_fail(0, "configuring interface %s: %s: %s", ifname, call, strerror(err));
}

static void ifreq_name(struct ifreq *ifr, const char *ifname)
{
	memset(ifr, 0, sizeof *ifr);
	snprintf(ifr->ifr_name, sizeof ifr->ifr_name, "%s", ifname);
}

/* An interface already up is left alone, so that an unprivileged agent can get this far. */
static int bring_up(int s, const char *ifname)
{
	struct ifreq ifr;

	ifreq_name(&ifr, ifname);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
		return ioctl_fail("SIOCGIFFLAGS", ifname);
	if (ifr.ifr_flags & IFF_UP)
		return 0;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
		return ioctl_fail("SIOCSIFFLAGS (up)", ifname);
	return 0;
}

/* The names of the interfaces there are, for a message; "?" when they cannot be listed. */
static void list_interfaces(char *out, size_t size)
{
	struct if_nameindex *all = if_nameindex();
	size_t len = 0;

	snprintf(out, size, all ? "none" : "?");
	for (struct if_nameindex *i = all; i && i->if_index != 0 && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", i->if_name);
	if (all)
		if_freenameindex(all);
}

/* The non-loopback interface of lowest index, into name; 1 if there is one, 0 if not yet,
 * -1 after setup_fail. */
static int first_non_loopback(int s, char *name)
{
	struct if_nameindex *all = if_nameindex();
	unsigned best = 0;

	if (!all)
		return setup_fail(0, "listing the network interfaces (if_nameindex): %s", strerror(errno));
	for (struct if_nameindex *i = all; i->if_index != 0; i++) {
		struct ifreq ifr;

		ifreq_name(&ifr, i->if_name);
		if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0 || (ifr.ifr_flags & IFF_LOOPBACK))
			continue;
		if (best == 0 || i->if_index < best) {
			best = i->if_index;
			snprintf(name, IFNAMSIZ, "%s", i->if_name);
		}
	}
	if_freenameindex(all);
	return best != 0;
}

/* Waits for the interface `wanted` (auto: the first that is not loopback) to exist. */
static int wait_interface(int s, const char *wanted, char *name)
{
	uint64_t until = monotonic_ns() + ms_to_ns(APPEAR_MS);
	int automatic = strcmp(wanted, "auto") == 0;
	char present[160];

	if (!automatic && strlen(wanted) >= IFNAMSIZ)
		return setup_fail(0, "--net-if %s: an interface name has at most %d characters", wanted, IFNAMSIZ - 1);
	for (;;) {
		if (automatic) {
			int found = first_non_loopback(s, name);
			if (found != 0)
				return found > 0 ? 0 : -1;
		} else {
			struct ifreq ifr;

			ifreq_name(&ifr, wanted);
			if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
				snprintf(name, IFNAMSIZ, "%s", wanted);
				return 0;
			}
			if (errno != ENODEV)
				return ioctl_fail("SIOCGIFFLAGS", wanted);
		}
		if (monotonic_ns() > until)
			break;
		pause_poll();
	}
	list_interfaces(present, sizeof present);
	if (automatic)
		return setup_fail(0, "--net-if auto: no network interface but loopback appeared in %d s (interfaces: %s)",
				  APPEAR_MS / 1000, present);
	return setup_fail(0, "--net-if %s: no such network interface after %d s (interfaces: %s)", wanted,
			  APPEAR_MS / 1000, present);
}

static int set_address(int s, const char *ifname, const char *net_addr)
{
	struct in_addr addr;
	unsigned prefix;
	struct ifreq ifr;
	struct sockaddr_in sin = { .sin_family = AF_INET };

	/* main checked the form already. */
	if (parse_net_text(net_addr, NET_ADDR_PREFIX, &addr, &prefix) != 0)
		return setup_fail(0, "--net-addr %s is not A.B.C.D/PREFIX", net_addr);
	ifreq_name(&ifr, ifname);
	sin.sin_addr = addr;
	memcpy(&ifr.ifr_addr, &sin, sizeof sin);
	if (ioctl(s, SIOCSIFADDR, &ifr) != 0)
		return ioctl_fail("SIOCSIFADDR", ifname);
	/* After the address, which sets its class's netmask. */
	sin.sin_addr.s_addr = htonl(prefix == 32 ? UINT32_MAX : ~(UINT32_MAX >> prefix));
	memcpy(&ifr.ifr_netmask, &sin, sizeof sin);
	if (ioctl(s, SIOCSIFNETMASK, &ifr) != 0)
		return ioctl_fail("SIOCSIFNETMASK", ifname);
	return 0;
}

/* A default route through gateway on ifname (the interface is up): for a peer beyond the
 * guest's subnet, as inside an L1 machine, where the host is behind the L1's own network. */
static int add_default_route(int s, const char *ifname, const char *gateway)
{
	struct rtentry route;
	struct sockaddr_in *sin;
	char device[IFNAMSIZ];
	struct in_addr addr;
	unsigned port;

	if (parse_net_text(gateway, NET_ADDR, &addr, &port) != 0)
		return setup_fail(0, "--net-gw %s is not A.B.C.D", gateway);
	memset(&route, 0, sizeof route);
	sin = (struct sockaddr_in *)&route.rt_gateway;
	sin->sin_family = AF_INET;
	sin->sin_addr = addr;
	((struct sockaddr_in *)&route.rt_dst)->sin_family = AF_INET;
	((struct sockaddr_in *)&route.rt_genmask)->sin_family = AF_INET;
	route.rt_flags = RTF_UP | RTF_GATEWAY;
	snprintf(device, sizeof device, "%s", ifname);
	route.rt_dev = device;
	if (ioctl(s, SIOCADDRT, &route) != 0 && errno != EEXIST)
		return ioctl_fail("SIOCADDRT (default route)", ifname);
	return 0;
}

/* lo up; then, given --net-if or --net-addr, the interface's address and netmask (its subnet's
 * route comes with them; a default route only with --net-gw) and it up. */
static int configure_network(const struct options *opt)
{
	char name[IFNAMSIZ];
	int result = -1;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return setup_fail(errno == EAFNOSUPPORT, "socket(AF_INET) to configure the network: %s", strerror(errno));
	if (bring_up(s, "lo") != 0 || wait_interface(s, opt->net_if ? opt->net_if : "auto", name) != 0)
		goto out;
	if (opt->net_addr && set_address(s, name, opt->net_addr) != 0)
		goto out;
	result = bring_up(s, name);
	if (result == 0 && opt->net_gw)
		result = add_default_route(s, name, opt->net_gw);
out:
	close(s);
	return result;
}

/* Once per process: net_rr and net_stream in one run share the configuration. */
static int network_ready(const struct options *opt)
{
	static int state; /* 0: not tried, 1: done, -1: failed, as setup says */

	if (!opt->net_if && !opt->net_addr)
		return 0;
	if (state == 0)
		state = configure_network(opt) == 0 ? 1 : -1;
	if (state > 0)
		return 0;
	if (setup.unsupported)
		return workload_unsupported("%s", setup.why);
	return workload_fail("%s", setup.why);
}

/* ---- the client's connections ---- */

struct conn {
	int fd;
	const char *peer;
	const char *what; /* the connection's use, for messages: "round trips", "to_host", "to_guest" */
};

static int io_fail(const struct conn *c, const char *verb, ssize_t n)
{
	if (n == 0)
		return workload_fail("%s: %s %s: the peer closed the connection", c->what, verb, c->peer);
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return workload_fail("%s: %s %s: nothing moved for %d s", c->what, verb, c->peer, SILENCE_S);
	return workload_fail("%s: %s %s: %s", c->what, verb, c->peer, strerror(errno));
}

/* All of len bytes, sent or received on fd: 1 once moved, else the failed call's result (0:
 * the other end closed; -1: errno says why). MSG_NOSIGNAL: a vanished peer is a failed
 * write, not a SIGPIPE that kills the process. */
static ssize_t move_fd(int fd, char *p, size_t len, int sending)
{
	while (len > 0) {
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

static int send_all(const struct conn *c, const void *data, size_t len)
{
	ssize_t n = move_fd(c->fd, (char *)data, len, 1);

	return n > 0 ? 0 : io_fail(c, "write to", n);
}

static int recv_all(const struct conn *c, void *data, size_t len)
{
	ssize_t n = move_fd(c->fd, data, len, 0);

	return n > 0 ? 0 : io_fail(c, "read from", n);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The kernel's list, for an error line: "reno cubic bbr", or why it could not be read. */
static const char *offered_congestion(char *out, size_t size)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");

	if (!f || !fgets(out, (int)size, f))
		snprintf(out, size, "unknown: no /proc/sys/net/ipv4/tcp_available_congestion_control");
	if (f)
		fclose(f);
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/* Set before connect: Linux applies SO_SNDTIMEO to connect too, so a peer address that
 * drops SYNs fails in SILENCE_S rather than after the kernel's two minutes of retries.
 * --congestion comes first: an environment that refuses it makes the run unsupported. */
static int set_options(int fd, const struct options *opt, const char *what, char op)
{
	int one = 1;
	struct timeval silence = { SILENCE_S, 0 };
	char offered[256];

	if (opt->congestion &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, opt->congestion, (socklen_t)strlen(opt->congestion)) != 0) {
		int err = errno;
		/* Offered, yet refused: the environment (qemu-user, gVisor) did not pass the option on. */
		return workload_unsupported("congestion %s: setsockopt TCP_CONGESTION: %s (this kernel offers: %s)",
					    opt->congestion, strerror(err), offered_congestion(offered, sizeof offered));
	}

	/* Round trips: without it, a 1-byte write waits for the ACK of the one before (Nagle).
	 * Streams keep Nagle, as iperf3 does by default: a write's tail shorter than a segment
	 * then waits to be joined with the next write instead of leaving as a packet alone. */
	if (op == 'R' && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		return workload_fail("%s: setsockopt TCP_NODELAY: %s", what, strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &silence, sizeof silence) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &silence, sizeof silence) != 0)
		return workload_fail("%s: setsockopt SO_RCVTIMEO/SO_SNDTIMEO: %s", what, strerror(errno));
	return 0;
}

/* The 12-byte header that says what the connection is for (the file's opening comment). */
static int send_header(struct conn *c, char op, uint32_t chunk)
{
	unsigned char header[HEADER_BYTES] = NET_MAGIC;

	header[4] = (unsigned char)op;
	put_le32(header + 8, chunk);
	if (send_all(c, header, sizeof header) != 0) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

/* The peer's "connection refused" while it starts, or "unreachable" while the guest's
 * interface comes up, is retried for CONNECT_RETRY_MS; then a connection and its header. */
static int connect_peer(const struct options *opt, const char *what, char op, uint32_t chunk, struct conn *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned port;
	uint64_t until = monotonic_ns() + ms_to_ns(CONNECT_RETRY_MS);

	c->fd = -1;
	c->peer = opt->peer;
	c->what = what;
	if (parse_net_text(opt->peer, NET_ADDR_PORT, &sin.sin_addr, &port) != 0)
		return workload_fail("--peer %s is not A.B.C.D:PORT", opt->peer);
	sin.sin_port = htons((uint16_t)port);
	for (int tries = 1;; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return workload_fail("%s: socket(AF_INET, SOCK_STREAM): %s", what, strerror(errno));
		if (set_options(fd, opt, what, op) != 0) {
			close(fd);
			return -1;
		}
		if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0) {
			c->fd = fd;
			break;
		}
		int err = errno;
		close(fd);
		if (err == EINPROGRESS || err == ETIMEDOUT)
			return workload_fail("%s: connect to %s: no answer in %d s", what, opt->peer, SILENCE_S);
		int transient = err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == EINTR;
		if (!transient || monotonic_ns() > until)
			return workload_fail("%s: connect to %s: %s%s", what, opt->peer, strerror(err),
					     tries > 1 ? " (retried for 5 s)" : "");
		pause_poll();
	}
	return send_header(c, op, chunk);
}

/* vsock_rr's connection: AF_VSOCK to the host (CID 2), port --vsock-port, where the VMM
 * hands it on (Firecracker and Cloud Hypervisor: to the Unix socket UDS_PORT beside their
 * vsock socket; vhost-vsock: to the host's AF_VSOCK listener). A reset or refusal while the
 * peer starts, or no transport while the driver loads, is retried for CONNECT_RETRY_MS. */
static int connect_vsock(const struct options *opt, const char *what, struct conn *c)
{
	static char shown[32];
	struct sockaddr_vm svm = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST, .svm_port = opt->vsock_port };
	uint64_t until = monotonic_ns() + ms_to_ns(CONNECT_RETRY_MS);
	struct timeval silence = { .tv_sec = SILENCE_S };

	snprintf(shown, sizeof shown, "vsock %u:%u", (unsigned)VMADDR_CID_HOST, opt->vsock_port);
	c->fd = -1;
	c->peer = shown;
	c->what = what;
	for (int tries = 1;; tries++) {
		int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			int err = errno;
			if (err == EAFNOSUPPORT)
				return workload_unsupported("%s: socket(AF_VSOCK): %s (the guest has no vsock "
							    "driver, or its kernel no vsock)", what, strerror(err));
			return workload_fail("%s: socket(AF_VSOCK): %s", what, strerror(err));
		}
		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &silence, sizeof silence) != 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &silence, sizeof silence) != 0) {
			close(fd);
			return workload_fail("%s: setsockopt SO_RCVTIMEO/SO_SNDTIMEO: %s", what, strerror(errno));
		}
		if (connect(fd, (struct sockaddr *)&svm, sizeof svm) == 0) {
			c->fd = fd;
			break;
		}
		int err = errno;
		close(fd);
		int transient = err == ECONNRESET || err == ECONNREFUSED || err == ENODEV ||
				err == ENETUNREACH || err == EHOSTUNREACH || err == EINTR || err == ETIMEDOUT;
		if (!transient || monotonic_ns() > until)
			return workload_fail("%s: connect to %s: %s%s", what, shown, strerror(err),
					     tries > 1 ? " (retried for 5 s)" : "");
		pause_poll();
	}
	return send_header(c, 'R', 0);
}

static void close_conn(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* The parameters every network workload records. */
static void announce(const char *name, const struct options *opt)
{
	struct param params[7] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_STR("peer", opt->peer ? opt->peer : ""),
		PARAM_STR("net_if", opt->net_if ? opt->net_if : (opt->net_addr ? "auto" : "")),
		PARAM_STR("net_addr", opt->net_addr ? opt->net_addr : ""),
	};
	size_t count = 5;

	/* the settings a run may leave out: each only when given */
	if (opt->cpu != NO_CPU)
		params[count++] = (struct param)PARAM_NUM("agent_cpu", opt->cpu);
	if (opt->congestion)
		params[count++] = (struct param)PARAM_STR("congestion", opt->congestion);
	proto_workload(name, params, count);
}

/* The checks every client workload makes before it connects. */
static int client_ready(const char *name, const struct options *opt)
{
	if (!opt->peer)
		return workload_fail("%s needs --peer A.B.C.D:PORT, where the host's gbagent net_peer listens"
				     " (try --peer 10.0.2.2:40123)", name);
	return network_ready(opt);
}

/* --cpu: the agent measures on that one CPU of its environment, as iperf3's -A pins its
 * client (the host pins the peer). The mask before is restored for the workloads after. */
struct pin {
	cpu_set_t saved;
	int pinned;
};

/* "0-3,6": the CPUs of a mask, in ranges. */
static void cpu_ranges(const cpu_set_t *set, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (int cpu = 0; cpu < CPU_SETSIZE && used < size; cpu++) {
		if (!CPU_ISSET(cpu, set) || (cpu > 0 && CPU_ISSET(cpu - 1, set)))
			continue;
		int last = cpu;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		int n = last > cpu ? snprintf(out + used, size - used, "%s%d-%d", used ? "," : "", cpu, last)
				   : snprintf(out + used, size - used, "%s%d", used ? "," : "", cpu);
		used += n > 0 ? (size_t)n : 0;
	}
}

static int pin_agent(const struct options *opt, struct pin *pin)
{
	cpu_set_t one;
	char allowed[160];

	pin->pinned = 0;
	if (opt->cpu == NO_CPU)
		return 0;
	if (sched_getaffinity(0, sizeof pin->saved, &pin->saved) != 0)
		return workload_fail("sched_getaffinity failed: %s", strerror(errno));
	if (opt->cpu >= CPU_SETSIZE || !CPU_ISSET(opt->cpu, &pin->saved)) {
		cpu_ranges(&pin->saved, allowed, sizeof allowed);
		return workload_unsupported("agent_cpu %u: the agent may run on CPUs %s in this environment",
					    opt->cpu, allowed);
	}
	CPU_ZERO(&one);
	CPU_SET(opt->cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0)
		return workload_fail("sched_setaffinity (agent to CPU %u) failed: %s", opt->cpu, strerror(errno));
	pin->pinned = 1;
	return 0;
}

/* The first failure is the one reported; a failed restore is one too, as it would skew later workloads. */
static int unpin_agent(const struct pin *pin, int result)
{
	if (!pin->pinned || sched_setaffinity(0, sizeof pin->saved, &pin->saved) == 0)
		return result;
	if (result != 0)
		return result;
	return workload_fail("sched_setaffinity (restoring the agent's CPUs) failed: %s", strerror(errno));
}

/* ---- net_rr ---- */

struct rr {
	struct conn c;
	uint64_t *trips; /* the round trips of a value (rr_value) */
};

/*
 * One clock read per round trip, between one and the next: each round trip's time
 * includes one read, and together they add up to the value's time exactly, so the mean
 * of the kept times is time_per_op (rr_value times its values the same way). Here, the
 * warm-up and calibration: nothing kept.
 */
static int rr_batch(void *ctx, uint64_t ops, struct batch *b)
{
	struct rr *rr = ctx;
	char byte = 'r';
	uint64_t start = monotonic_ns();
	uint64_t last = start;

	for (uint64_t i = 0; i < ops; i++) {
		if (send_all(&rr->c, &byte, 1) != 0 || recv_all(&rr->c, &byte, 1) != 0)
			return -1;
		last = monotonic_ns();
	}
	b->ns += last - start;
	b->ops = ops;
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One value: round trips until they have lasted min_ns (or `cap` were kept), each kept;
 * its count in *n and its time in *ns. A value ends by time, not by a calibrated count,
 * because round trips can get many times faster after the warm-up (a guest's NIC whose
 * first packets wait for ARP, a host whose scheduler moves the peer beside the agent):
 * a count sized in the slow phase would make values far shorter than --min-time. */
static int rr_value(struct rr *rr, uint64_t min_ns, uint64_t cap, uint64_t *n, uint64_t *ns)
{
	char byte = 'r';
	uint64_t start = monotonic_ns();
	uint64_t last = start, i = 0;

	while (i < cap && last - start < min_ns) {
		if (send_all(&rr->c, &byte, 1) != 0 || recv_all(&rr->c, &byte, 1) != 0)
			return -1;
		uint64_t now = monotonic_ns();
		rr->trips[i++] = now - last;
		last = now;
	}
	*n = i;
	*ns = last - start;
	return 0;
}

/* The warm-up is calibrate()'s; the values are timed here, since each also gives the
 * median and 99th percentile of its own round trips, which measure_timed cannot report. */
static int rr_measure(const char *name, struct rr *rr, const struct options *opt)
{
	uint64_t warmup_ns = ms_to_ns(opt->run_in_ms > RR_WARMUP_MS ? opt->run_in_ms : RR_WARMUP_MS);
	uint64_t ops, cap, timed_ns = 0, total = 0;
	uint64_t min_ns = (uint64_t)(opt->min_time_s * 1e9);

	if (calibrate(rr_batch, rr, opt->min_time_s, &warmup_ns, &ops) != 0)
		return -1;
	/* Room for the calibrated count many times over: values end by time (rr_value). */
	cap = ops > RR_MAX_TRIPS / 16 ? RR_MAX_TRIPS : 16 * ops + 1024;
	rr->trips = malloc(cap * sizeof *rr->trips);
	if (!rr->trips)
		return workload_fail("malloc of %" PRIu64 " KiB for the round-trip times failed",
				     cap * sizeof *rr->trips / 1024);
	/* Touched now, so that no page fault lands in a timed round trip. */
	memset(rr->trips, 0, cap * sizeof *rr->trips);
	for (unsigned v = 0; v < opt->values; v++) {
		uint64_t n, ns;

		if (rr_value(rr, min_ns, cap, &n, &ns) != 0)
			return -1;
		timed_ns += ns;
		total += n;
		qsort(rr->trips, n, sizeof *rr->trips, compare_u64);
		proto_sample(name, "time_per_op", "ns", (double)ns / (double)n);
		proto_sample(name, "rr_p50", "us", sorted_quantile(rr->trips, n, 0.50) / 1e3);
		proto_sample(name, "rr_p99", "us", sorted_quantile(rr->trips, n, 0.99) / 1e3);
	}
	/* operations per value, on average: values end by time, so their counts differ */
	proto_sample(name, "iterations", "count", (double)total / opt->values);
	proto_sample(name, "timed", "s", (double)timed_ns / 1e9);
	return 0;
}

static int run_net_rr(const char *name, const struct options *opt)
{
	struct rr rr = { .c = { .fd = -1 } };
	struct pin pin;
	int result = -1;

	announce(name, opt);
	if (client_ready(name, opt) != 0 || pin_agent(opt, &pin) != 0)
		return -1;
	if (connect_peer(opt, "round trips", 'R', 0, &rr.c) == 0)
		result = rr_measure(name, &rr, opt);
	close_conn(&rr.c);
	free(rr.trips);
	return unpin_agent(&pin, result);
}

/* ---- vsock_rr ---- */

static int run_vsock_rr(const char *name, const struct options *opt)
{
	struct rr rr = { .c = { .fd = -1 } };
	struct pin pin;
	int result = -1;
	struct param params[4] = {
		PARAM_NUM("min_time_s", opt->min_time_s), PARAM_NUM("values", opt->values),
		PARAM_NUM("vsock_port", opt->vsock_port),
	};
	size_t count = 3;

	if (opt->cpu != NO_CPU)
		params[count++] = (struct param)PARAM_NUM("agent_cpu", opt->cpu);
	proto_workload(name, params, count);
	if (!opt->vsock_port)
		return workload_fail("%s needs --vsock-port N, the host's port where its peer listens "
				     "(try --vsock-port 5000)", name);
	if (pin_agent(opt, &pin) != 0)
		return -1;
	if (connect_vsock(opt, "round trips", &rr.c) == 0)
		result = rr_measure(name, &rr, opt);
	close_conn(&rr.c);
	free(rr.trips);
	return unpin_agent(&pin, result);
}

/* ---- net_stream ---- */

struct stream {
	struct conn up;   /* op 'U': the guest writes, the host acks */
	struct conn down; /* op 'D': the guest asks, the host writes */
	char *out;        /* IO_BYTES to write */
	char *in;         /* IO_BYTES to read into */
};

typedef int (*chunk_fn)(struct stream *s, unsigned units, uint64_t *ns);

/* From the count's write to the peer's ack of the chunk's last byte. */
static int chunk_to_host(struct stream *s, unsigned units, uint64_t *ns)
{
	unsigned char count[4], ack;
	uint64_t start = monotonic_ns();

	put_le32(count, units);
	if (send_all(&s->up, count, sizeof count) != 0)
		return -1;
	for (unsigned u = 0; u < units; u++) {
		for (size_t done = 0; done < NET_UNIT; done += IO_BYTES) {
			if (send_all(&s->up, s->out, IO_BYTES) != 0)
				return -1;
		}
	}
	if (recv_all(&s->up, &ack, 1) != 0)
		return -1;
	*ns = monotonic_ns() - start;
	if (ack != 'K')
		return workload_fail("%s: the peer %s answered 0x%02x, not the ack 'K' (not gbagent net_peer?)",
				     s->up.what, s->up.peer, ack);
	return 0;
}

/* From the request bytes to the chunk's last byte. */
static int chunk_to_guest(struct stream *s, unsigned units, uint64_t *ns)
{
	char requests[MAX_UNITS];
	uint64_t start = monotonic_ns();

	memset(requests, 'D', units);
	if (send_all(&s->down, requests, units) != 0)
		return -1;
	for (uint64_t left = (uint64_t)units * NET_UNIT; left > 0;) {
		ssize_t n = recv(s->down.fd, s->in, left < IO_BYTES ? (size_t)left : IO_BYTES, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return io_fail(&s->down, "read from", n);
		left -= (uint64_t)n;
	}
	*ns = monotonic_ns() - start;
	return 0;
}

/* Warms one direction up with 1-MiB chunks, then doubles the chunk from 1 MiB until one
 * lasts a quarter of --min-time, and scales it to last --min-time (MAX_UNITS at most). */
static int size_chunk(struct stream *s, chunk_fn move, const struct options *opt, unsigned *units)
{
	uint64_t warm_ns = ms_to_ns(opt->run_in_ms > STREAM_WARMUP_MS ? opt->run_in_ms : STREAM_WARMUP_MS);
	uint64_t min_ns = (uint64_t)(opt->min_time_s * 1e9);
	uint64_t ns;
	unsigned n = 1;

	for (uint64_t spent = 0; spent < warm_ns; spent += ns) {
		if (move(s, 1, &ns) != 0)
			return -1;
	}
	for (;;) {
		if (move(s, n, &ns) != 0)
			return -1;
		if (ns >= min_ns / 4 || n >= MAX_UNITS)
			break;
		n *= 2;
	}
	double wanted = ns ? (double)n * (double)min_ns / (double)ns : MAX_UNITS;
	*units = wanted >= MAX_UNITS ? MAX_UNITS : wanted < 1 ? 1 : (unsigned)(wanted + 0.5);
	return 0;
}

static double gbit_per_s(unsigned units, uint64_t ns)
{
	/* bits per ns are Gbit/s */
	return (double)units * NET_UNIT * 8 / (double)ns;
}

static int stream_measure(const char *name, struct stream *s, const struct options *opt)
{
	unsigned up_units, down_units;
	uint64_t up_ns, down_ns, timed_ns = 0;

	if (size_chunk(s, chunk_to_host, opt, &up_units) != 0 || size_chunk(s, chunk_to_guest, opt, &down_units) != 0)
		return -1;
	/* Alternating, so that a drift in the environment touches both directions alike. */
	for (unsigned v = 0; v < opt->values; v++) {
		if (chunk_to_host(s, up_units, &up_ns) != 0)
			return -1;
		proto_sample(name, "to_host", "Gbit/s", gbit_per_s(up_units, up_ns));
		if (chunk_to_guest(s, down_units, &down_ns) != 0)
			return -1;
		proto_sample(name, "to_guest", "Gbit/s", gbit_per_s(down_units, down_ns));
		timed_ns += up_ns + down_ns;
	}
	proto_sample(name, "to_host_chunk", "MiB", up_units);
	proto_sample(name, "to_guest_chunk", "MiB", down_units);
	proto_sample(name, "timed", "s", (double)timed_ns / 1e9);
	return 0;
}

static int run_net_stream(const char *name, const struct options *opt)
{
	struct stream s = { .up = { .fd = -1 }, .down = { .fd = -1 } };
	struct pin pin;
	int result = -1;

	announce(name, opt);
	if (client_ready(name, opt) != 0 || pin_agent(opt, &pin) != 0)
		return -1;
	s.out = io_out + IO_OFFSET;
	s.in = io_in + IO_OFFSET;
	/* Not zeros: a link that compresses or skips zero pages would carry less. */
	for (size_t i = 0; i < IO_BYTES; i++)
		s.out[i] = (char)(i * 131 + 7);
	if (connect_peer(opt, "to_host", 'U', NET_UNIT, &s.up) != 0 ||
	    connect_peer(opt, "to_guest", 'D', NET_UNIT, &s.down) != 0)
		goto out;
	result = stream_measure(name, &s, opt);
out:
	close_conn(&s.up);
	close_conn(&s.down);
	return unpin_agent(&pin, result);
}

/* ---- net_peer: the host side ---- */

static int peer_send_all(int fd, const void *data, size_t len)
{
	return move_fd(fd, (char *)data, len, 1) > 0 ? 0 : -1;
}

/* Reads exactly len bytes; -1 on an error or an end, which end the connection alike. */
static int peer_recv_all(int fd, void *data, size_t len)
{
	return move_fd(fd, data, len, 0) > 0 ? 0 : -1;
}

static void serve_echo(int fd, char *buf)
{
	for (;;) {
		ssize_t n = recv(fd, buf, IO_BYTES, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || peer_send_all(fd, buf, (size_t)n) != 0)
			return;
	}
}

static void serve_upload(int fd, char *buf, uint32_t chunk)
{
	unsigned char count[4];

	while (peer_recv_all(fd, count, sizeof count) == 0) {
		for (uint64_t left = (uint64_t)get_le32(count) * chunk; left > 0;) {
			size_t part = left < IO_BYTES ? (size_t)left : IO_BYTES;
			if (peer_recv_all(fd, buf, part) != 0)
				return;
			left -= part;
		}
		if (peer_send_all(fd, "K", 1) != 0)
			return;
	}
}

static void serve_download(int fd, char *buf, uint32_t chunk)
{
	char request;

	for (size_t i = 0; i < IO_BYTES; i++)
		buf[i] = (char)(i * 131 + 7);
	while (peer_recv_all(fd, &request, 1) == 0) {
		for (uint32_t left = chunk; left > 0;) {
			uint32_t part = left < IO_BYTES ? left : IO_BYTES;
			if (peer_send_all(fd, buf, part) != 0)
				return;
			left -= part;
		}
	}
}

/* One connection, in its own process: the header says what to do until the client closes. */
static void serve(int fd)
{
	char *buf = io_in + IO_OFFSET;
	unsigned char header[HEADER_BYTES];
	int one = 1;

	if (peer_recv_all(fd, header, sizeof header) != 0 || memcmp(header, NET_MAGIC, 4) != 0)
		return;
	uint32_t chunk = get_le32(header + 8);
	if (header[4] == 'R') {
		/* TCP: no Nagle delay on the echo; a Unix or vsock connection has none to turn off */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		serve_echo(fd, buf);
	}
	else if (chunk == 0 || chunk > MAX_CHUNK)
		return;
	else if (header[4] == 'U')
		serve_upload(fd, buf, chunk);
	else if (header[4] == 'D')
		serve_download(fd, buf, chunk);
}

static int peer_error(const char *step, const char *addr)
{
	fprintf(stderr, "gbagent: net_peer: %s %s: %s\n", step, addr, strerror(errno));
	return 1;
}

/* The listening socket of --listen (TCP, a port the kernel picks), --listen-unix or
 * --listen-vsock, and the line that says where: "gbagent-peer listening A.B.C.D:PORT",
 * "unix:PATH" or "vsock:PORT". -1 after saying why on stderr (*status: the exit code). */
static int peer_listener(const struct options *opt, int *status)
{
	char shown[INET_ADDRSTRLEN];
	const char *where = opt->listen ? opt->listen : opt->listen_unix ? opt->listen_unix : "vsock";
	int one = 1, fd;

	*status = 1;
	if (opt->listen_unix) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		if (strlen(opt->listen_unix) >= sizeof sun.sun_path) {
			fprintf(stderr, "gbagent: net_peer: --listen-unix %s: longer than a socket path may be (%zu bytes)\n",
				opt->listen_unix, sizeof sun.sun_path - 1);
			*status = 2;
			return -1;
		}
		strcpy(sun.sun_path, opt->listen_unix);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 || listen(fd, 64) != 0)
			return peer_error("listen on", where), -1;
		printf("gbagent-peer listening unix:%s\n", opt->listen_unix);
		return fd;
	}
	if (opt->listen_vsock) {
		struct sockaddr_vm svm = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = opt->listen_vsock };
		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&svm, sizeof svm) != 0 || listen(fd, 64) != 0)
			return peer_error("listen on", where), -1;
		printf("gbagent-peer listening vsock:%u\n", opt->listen_vsock);
		return fd;
	}
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof sin;
	unsigned unused;

	if (parse_net_text(opt->listen, NET_ADDR, &sin.sin_addr, &unused) != 0) {
		fprintf(stderr, "gbagent: net_peer: --listen %s is not an IPv4 address\n", opt->listen);
		*status = 2;
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return peer_error("socket for", where), -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
		return peer_error("setsockopt SO_REUSEADDR on", where), -1;
	/* Set on the listener, every accepted connection has it. */
	if (opt->congestion &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, opt->congestion, (socklen_t)strlen(opt->congestion)) != 0) {
		char offered[256];
		fprintf(stderr, "gbagent: net_peer: congestion %s: %s (this kernel offers: %s)\n", opt->congestion,
			strerror(errno), offered_congestion(offered, sizeof offered));
		*status = 2;
		return -1;
	}
	/* Port 0: the kernel picks a free one, and the line below tells it. */
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0)
		return peer_error("bind", where), -1;
	if (listen(fd, 64) != 0)
		return peer_error("listen on", where), -1;
	if (getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
		return peer_error("getsockname of", where), -1;
	inet_ntop(AF_INET, &sin.sin_addr, shown, sizeof shown);
	printf("gbagent-peer listening %s:%u\n", shown, (unsigned)ntohs(sin.sin_port));
	return fd;
}

int net_peer(const struct options *opt)
{
	pid_t parent = getpid();
	int status;
	int fd = peer_listener(opt, &status);
	const char *where = opt->listen ? opt->listen : opt->listen_unix ? opt->listen_unix : "vsock";

	if (fd < 0)
		return status;
	/* Flushed before any fork, or a child would print it again. */
	if (fflush(stdout) != 0)
		return peer_error("writing the listening line for", where);
	/* Children are reaped by the kernel; a client gone mid-write is EPIPE, not a signal. */
	signal(SIGCHLD, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			/* Out of descriptors or memory for now: a connection ending frees some. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				pause_poll();
				continue;
			}
			return peer_error("accept on", where);
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(fd);
			/* Killed with the peer, whoever kills it; a peer already gone is seen by getppid. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			serve(conn);
			_exit(0);
		}
		if (pid < 0)
			fprintf(stderr, "gbagent: net_peer: fork for a connection: %s\n", strerror(errno));
		close(conn);
	}
}

const struct workload net_workloads[] = {
	{ "net_rr", run_net_rr },
	{ "net_stream", run_net_stream },
	{ "vsock_rr", run_vsock_rr },
	{ NULL, NULL },
};
