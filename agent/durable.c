/* durable.c: the fsync_records workload, the guest's half of the fsync_honoured durability check.
 *
 * It writes numbered records to a raw block device, each followed by fdatasync, and reports
 * every acknowledgement at once. The host records which writes and flushes reached its own
 * storage and when, and counts a record durable only if a flush (or FUA write) covering it
 * completed there before the acknowledgement arrived (guestbench/workloads/durability.py). */
#include "outcome.h"
#include "protocol.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_BYTES 4096

/* Record i fills its block with "guestbench record i\n" repeated, so a dump of the disk
 * shows which record each block holds. */
static void fill_record(char *block, unsigned index)
{
	char line[32];
	int len = snprintf(line, sizeof line, "guestbench record %u\n", index);

	for (size_t at = 0; at < RECORD_BYTES; at += (size_t)len) {
		size_t left = RECORD_BYTES - at;
		memcpy(block + at, line, left < (size_t)len ? left : (size_t)len);
	}
}

/* Record i lives at offset i * RECORD_BYTES, so records 1..count need count + 1 blocks. */
static int check_size(int fd, const char *device, unsigned count)
{
	struct stat st;
	off_t size;

	if (fstat(fd, &st) != 0)
		return workload_fail("cannot stat %s: %s", device, strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return workload_fail("%s is not a block device (fsync_records writes a raw disk)", device);
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		return workload_fail("cannot find the size of %s: %s", device, strerror(errno));
	if ((unsigned long long)size < ((unsigned long long)count + 1) * RECORD_BYTES)
		return workload_fail("%s holds %lld bytes; %u records of %d bytes need %llu", device,
				     (long long)size, count, RECORD_BYTES,
				     ((unsigned long long)count + 1) * RECORD_BYTES);
	return 0;
}

static int write_record(int fd, const char *device, unsigned index)
{
	static char block[RECORD_BYTES];
	ssize_t done;

	fill_record(block, index);
	done = pwrite(fd, block, RECORD_BYTES, (off_t)index * RECORD_BYTES);
	if (done < 0)
		return workload_fail("writing record %u to %s failed: %s", index, device, strerror(errno));
	if (done != RECORD_BYTES)
		return workload_fail("writing record %u to %s wrote %zd of %d bytes", index, device, done,
				     RECORD_BYTES);
	if (fdatasync(fd) != 0)
		return workload_fail("fdatasync after record %u on %s failed: %s", index, device,
				     strerror(errno));
	return 0;
}

static int run_fsync_records(const char *name, const struct options *opt)
{
	unsigned count = opt->count; /* main's default: 30 */
	const struct param params[] = {
		PARAM_STR("device", opt->device ? opt->device : ""),
		PARAM_NUM("count", count),
		PARAM_NUM("record_bytes", RECORD_BYTES),
	};
	int fd;
	int status = 0;

	proto_workload(name, params, sizeof params / sizeof params[0]);
	if (!opt->device)
		return workload_fail("fsync_records needs the disk to write (try --device /dev/vdb)");
	fd = open(opt->device, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return workload_fail("cannot open %s for writing: %s", opt->device, strerror(errno));
	status = check_size(fd, opt->device, count);
	for (unsigned i = 1; status == 0 && i <= count; i++) {
		status = write_record(fd, opt->device, i);
		/* The acknowledgement: the guest believes record i is on stable storage now. */
		if (status == 0)
			proto_sample(name, "ack", "index", i);
	}
	close(fd);
	return status;
}

const struct workload durable_workloads[] = {
	{ "fsync_records", run_fsync_records },
	{ NULL, NULL },
};
