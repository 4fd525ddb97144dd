/* upload.c: the upload workload, which moves N MiB from the host into the guest through a
 * channel (a serial line, a virtio-serial port, a file on a 9p or hostfs mount) and writes
 * it to a file on the guest's disk, or throws it away, or writes as much generated in the
 * guest without any upload (the libguestfs UML-vs-KVM upload comparison's three modes).
 *
 * The data is guestbench's upload pattern (guestbench/workloads/transfer.py makes the host
 * file): 4 KiB blocks, block b starting with the 64-bit little-endian word b ^ PATTERN_MAGIC
 * ("gbupload" for block 0), its other bytes (b + offset) & 0xff. Every block's first word
 * and the whole first block of every MiB are checked as they arrive, so a short, shifted or
 * corrupted transfer fails instead of giving a number. On a character device the agent
 * first puts the line in raw mode, then writes READY_TOKEN: the host starts sending when it
 * reads it, so nothing arrives before the line is raw. */
#define _GNU_SOURCE
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define BLOCK 4096u
#define BLOCKS_PER_MIB (MIB / BLOCK)
#define PATTERN_MAGIC UINT64_C(0x64616f6c70756267) /* "gbupload" in little-endian bytes */
#define READY_TOKEN "gb-upload-ready\n"
/* A channel that says nothing for this long has lost data or its host side. */
#define SILENCE_MS 20000
/* virtio-serial ports appear a moment after the module loads; wait this long for the path. */
#define APPEAR_MS 10000

enum mode { MODE_WRITE, MODE_NO_WRITE, MODE_NO_UPLOAD };

static const char *const mode_names[] = { "write", "no_write", "no_upload" };

static int parse_mode(const char *text, enum mode *mode)
{
	for (int i = 0; i < 3; i++) {
		if (strcmp(text, mode_names[i]) == 0) {
			*mode = (enum mode)i;
			return 0;
		}
	}
	return -1;
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* MiB number `index` of the pattern: every MiB holds the same bytes but for the block words. */
static void fill_mib(unsigned char *buf, uint64_t index)
{
	for (unsigned b = 0; b < BLOCKS_PER_MIB; b++)
		put_le64(buf + (size_t)b * BLOCK, (index * BLOCKS_PER_MIB + b) ^ PATTERN_MAGIC);
}

static void make_template(unsigned char *buf)
{
	for (size_t i = 0; i < MIB; i++)
		buf[i] = (unsigned char)(i / BLOCK + i % BLOCK);
	fill_mib(buf, 0);
}

/* 0 if MiB number `index` of the stream holds the pattern; else workload_fail's -1. */
static int check_mib(const unsigned char *got, const unsigned char *template, uint64_t index)
{
	for (unsigned b = 0; b < BLOCKS_PER_MIB; b++) {
		uint64_t want = (index * BLOCKS_PER_MIB + b) ^ PATTERN_MAGIC;
		uint64_t word = get_le64(got + (size_t)b * BLOCK);
		if (word != want) {
			uint64_t at = index * MIB + (uint64_t)b * BLOCK;
			if ((word ^ PATTERN_MAGIC) < (UINT64_C(1) << 32))
				return workload_fail("data check failed at byte %" PRIu64 ": block %" PRIu64
						     " arrived there, block %" PRIu64 " was due (bytes lost or reordered)",
						     at, word ^ PATTERN_MAGIC, at / BLOCK);
			return workload_fail("data check failed at byte %" PRIu64 ": not the upload pattern "
					     "(word 0x%016" PRIx64 "; bytes lost, or a tty not in raw mode?)",
					     at, word);
		}
	}
	if (memcmp(got + 8, template + 8, BLOCK - 8) != 0)
		return workload_fail("data check failed in the first 4 KiB of MiB %" PRIu64 " (corrupted bytes)", index);
	return 0;
}

#define PORT_LINKS "/dev/virtio-ports/"
#define PORT_CLASS "/sys/class/virtio-ports"

/* The device of the virtio-serial port named `name` (what udev's /dev/virtio-ports/NAME link
 * points to), into `out`; 0 if found. vportNpM numbers depend on the probe order. */
static int find_port(const char *name, char *out, size_t size)
{
	DIR *dir = opendir(PORT_CLASS);
	struct dirent *entry;
	int found = -1;

	if (!dir)
		return -1;
	while (found != 0 && (entry = readdir(dir)) != NULL) {
		char path[512], text[256];
		ssize_t n;
		int fd;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, PORT_CLASS "/%s/name", entry->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, text, sizeof text - 1);
		close(fd);
		if (n <= 0)
			continue;
		text[n] = '\0';
		text[strcspn(text, "\n")] = '\0';
		if (strcmp(text, name) == 0 && (size_t)snprintf(out, size, "/dev/%s", entry->d_name) < size)
			found = 0;
	}
	closedir(dir);
	return found;
}

/* The path to open for --source: waits for it to appear (ports come a moment after their
 * module loads); a /dev/virtio-ports/NAME link that no udev made is looked up by name. */
static int resolve_source(const char *path, char *out, size_t size)
{
	struct stat st;
	uint64_t until = monotonic_ns() + (uint64_t)APPEAR_MS * 1000000u;
	struct timespec pause_10ms = { 0, 10000000 };
	int is_port = strncmp(path, PORT_LINKS, strlen(PORT_LINKS)) == 0;

	for (;;) {
		if (stat(path, &st) == 0) {
			snprintf(out, size, "%s", path);
			return 0;
		}
		if (errno != ENOENT)
			return workload_fail("--source %s: %s", path, strerror(errno));
		if (is_port && find_port(path + strlen(PORT_LINKS), out, size) == 0 && stat(out, &st) == 0)
			return 0;
		if (monotonic_ns() > until)
			return workload_fail("--source %s: %s (waited %d s for it to appear)", path,
					     is_port ? "no virtio-serial port of that name" : strerror(ENOENT),
					     APPEAR_MS / 1000);
		nanosleep(&pause_10ms, NULL);
	}
}

static int write_all(int fd, const void *data, size_t len, const char *what)
{
	const char *p = data;

	while (len > 0) {
		ssize_t done = write(fd, p, len);
		if (done < 0) {
			if (errno == EINTR)
				continue;
			return workload_fail("write to %s failed: %s", what, strerror(errno));
		}
		p += done;
		len -= (size_t)done;
	}
	return 0;
}

/* A serial line or port: raw, 8 bits, no echo, no flow control characters, 115200 baud. */
static int make_raw(int fd, const char *path)
{
	struct termios tio;

	if (tcgetattr(fd, &tio) != 0)
		return errno == ENOTTY ? 0 : workload_fail("tcgetattr %s: %s", path, strerror(errno));
	cfmakeraw(&tio);
	/* A 16550's top speed with its standard 1.8432 MHz clock (a new line starts at 9600). */
	cfsetspeed(&tio, B115200);
	tio.c_cflag |= CLOCAL | CREAD;
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &tio) != 0)
		return workload_fail("tcsetattr %s (raw mode): %s", path, strerror(errno));
	tcflush(fd, TCIFLUSH);
	return 0;
}

/* Opens the source; on a character device, makes it raw and tells the host to send. */
static int open_source(const char *source, int *chardev)
{
	char path[512];
	struct stat st;
	int fd;

	if (resolve_source(source, path, sizeof path) != 0)
		return -1;
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EISDIR))
		fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return workload_fail("cannot open --source %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		close(fd);
		return workload_fail("fstat %s: %s", path, strerror(errno));
	}
	*chardev = S_ISCHR(st.st_mode);
	if (!*chardev && !S_ISREG(st.st_mode)) {
		close(fd);
		return workload_fail("--source %s is neither a character device nor a file", path);
	}
	if (*chardev && (make_raw(fd, path) != 0 || write_all(fd, READY_TOKEN, strlen(READY_TOKEN), path) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads exactly one MiB (the host sends whole MiB); -1 after workload_fail. */
static int read_mib(int fd, int chardev, unsigned char *buf, uint64_t index, const char *path)
{
	size_t got = 0;

	while (got < MIB) {
		/* poll, then a blocking read. Reading first on an O_NONBLOCK line and polling only on
		 * EAGAIN saves calls, but stalled UML 6.1's serial line for good in 3 of 4 runs. */
		if (chardev) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			int ready = poll(&pfd, 1, SILENCE_MS);
			if (ready < 0 && errno == EINTR)
				continue;
			if (ready < 0)
				return workload_fail("poll %s: %s", path, strerror(errno));
			if (ready == 0)
				return workload_fail("%s went silent for %d s after %" PRIu64 " bytes (data lost?)",
						     path, SILENCE_MS / 1000, index * MIB + got);
		}
		ssize_t n = read(fd, buf + got, MIB - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return workload_fail("read %s after %" PRIu64 " bytes: %s", path, index * MIB + got, strerror(errno));
		if (n == 0)
			return workload_fail("%s ended after %" PRIu64 " bytes (short upload)", path, index * MIB + got);
		got += (size_t)n;
	}
	return 0;
}

static int run_upload(const char *name, const struct options *opt)
{
	const struct param params[] = {
		PARAM_STR("mode", opt->mode ? opt->mode : "write"),
		PARAM_NUM("size_mib", opt->size_mib),
		PARAM_STR("source", opt->source ? opt->source : ""),
		PARAM_STR("dest", opt->dest ? opt->dest : ""),
	};
	enum mode mode = MODE_WRITE;
	unsigned char *buf = NULL, *template = NULL;
	int src = -1, dst = -1, chardev = 0, created = 0, status = -1;
	uint64_t start, elapsed_ns;
	double bytes = (double)opt->size_mib * MIB;

	proto_workload(name, params, sizeof params / sizeof params[0]);
	if (opt->mode && parse_mode(opt->mode, &mode) != 0)
		return workload_fail("--mode '%s' is not one of write, no_write, no_upload", opt->mode);
	if (mode != MODE_NO_UPLOAD && !opt->source)
		return workload_fail("--mode %s needs --source PATH (the channel's device or file in the guest)",
				     mode_names[mode]);
	if (mode != MODE_NO_WRITE && !opt->dest)
		return workload_fail("--mode %s needs --dest PATH (a file on the guest's scratch filesystem)",
				     mode_names[mode]);
	buf = malloc(MIB);
	template = malloc(MIB);
	if (!buf || !template) {
		workload_fail("malloc(1 MiB) failed");
		goto out;
	}
	make_template(template);
	if (mode != MODE_NO_WRITE) {
		dst = open(opt->dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (dst < 0) {
			workload_fail("cannot create --dest %s: %s", opt->dest, strerror(errno));
			goto out;
		}
		created = 1;
	}
	if (mode != MODE_NO_UPLOAD) {
		src = open_source(opt->source, &chardev);
		if (src < 0)
			goto out;
	} else {
		memcpy(buf, template, MIB);
	}

	start = monotonic_ns();
	for (uint64_t i = 0; i < opt->size_mib; i++) {
		if (mode == MODE_NO_UPLOAD) {
			fill_mib(buf, i);
		} else if (read_mib(src, chardev, buf, i, opt->source) != 0 || check_mib(buf, template, i) != 0) {
			goto out;
		}
		if (dst >= 0 && write_all(dst, buf, MIB, opt->dest) != 0)
			goto out;
	}
	if (dst >= 0) {
		if (fsync(dst) != 0) {
			workload_fail("fsync %s: %s", opt->dest, strerror(errno));
			goto out;
		}
		if (close(dst) != 0) {
			dst = -1;
			workload_fail("close %s: %s", opt->dest, strerror(errno));
			goto out;
		}
		dst = -1;
	}
	elapsed_ns = monotonic_ns() - start;

	proto_sample(name, "elapsed", "s", (double)elapsed_ns / 1e9);
	proto_sample(name, "bandwidth", "MB/s", elapsed_ns ? bytes / ((double)elapsed_ns / 1e9) / 1e6 : 0);
	proto_sample(name, "bytes", "bytes", bytes);
	status = 0;
out:
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	/* The file is not needed once measured; a second run starts from an empty disk. */
	if (created)
		unlink(opt->dest);
	free(buf);
	free(template);
	return status;
}

const struct workload upload_workloads[] = {
	{ "upload", run_upload },
	{ NULL, NULL },
};
