#define _GNU_SOURCE
/* exec.c: the exec workload, which runs a program (fio, dbench, make) and reports its
 * output and its resource use the way kernbench and /usr/bin/time do (wait4's rusage). */
#include "outcome.h"
#include "protocol.h"
#include "timing.h"
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 2048
#define TAIL 240

/* sync, then drop the page cache, dentries and inodes of this kernel. */
static int drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return workload_fail("cannot drop caches: open /proc/sys/vm/drop_caches: %s", strerror(errno));
	if (write(fd, "3\n", 2) != 2) {
		int saved = errno;
		close(fd);
		return workload_fail("cannot drop caches: write /proc/sys/vm/drop_caches: %s", strerror(saved));
	}
	close(fd);
	return 0;
}

/* What one output pipe has gathered but not yet sent, and the last bytes of it. */
struct stream {
	const char *name;
	int fd;
	char buf[CHUNK];
	size_t len;
	char tail[TAIL + 1];
	size_t tail_len;
};

static void keep_tail(struct stream *s, const char *data, size_t n)
{
	if (n >= TAIL) {
		memcpy(s->tail, data + n - TAIL, TAIL);
		s->tail_len = TAIL;
	} else {
		size_t keep = s->tail_len + n > TAIL ? TAIL - n : s->tail_len;
		memmove(s->tail, s->tail + s->tail_len - keep, keep);
		memcpy(s->tail + keep, data, n);
		s->tail_len = keep + n;
	}
	s->tail[s->tail_len] = '\0';
}

static void flush_stream(const char *workload, struct stream *s)
{
	if (s->len > 0)
		proto_output(workload, s->name, s->buf, s->len);
	s->len = 0;
}

/* Reads what the pipe has; returns 0 at its end. */
static int drain(const char *workload, struct stream *s)
{
	ssize_t n = read(s->fd, s->buf + s->len, CHUNK - s->len);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	keep_tail(s, s->buf + s->len, (size_t)n);
	s->len += (size_t)n;
	if (s->len == CHUNK)
		flush_stream(workload, s);
	return 1;
}

/* The path execvp would run for name; a wrapper (qemu-user) takes only paths. */
static const char *search_path(const char *name)
{
	static char found[4096];
	const char *path = getenv("PATH");

	if (strchr(name, '/') || !path)
		return name;
	while (*path) {
		size_t len = strcspn(path, ":");
		snprintf(found, sizeof found, "%.*s/%s", (int)len, len ? path : ".", name);
		if (access(found, X_OK) == 0)
			return found;
		path += len + (path[len] == ':');
	}
	return name;
}

_Noreturn static void child(const struct options *opt, int out, int err)
{
	char **argv = opt->command;

	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	if (opt->cwd && chdir(opt->cwd) != 0) {
		dprintf(STDERR_FILENO, "gbagent exec: cannot enter %s: %s\n", opt->cwd, strerror(errno));
		_exit(127);
	}
	if (opt->wrapper) {
		size_t n = 0;
		while (argv[n])
			n++;
		char **wrapped = calloc(n + 2, sizeof *wrapped);
		if (!wrapped)
			_exit(127);
		wrapped[0] = (char *)opt->wrapper;
		memcpy(wrapped + 1, argv, n * sizeof *argv);
		wrapped[1] = (char *)search_path(argv[0]);
		argv = wrapped;
	}
	execvp(argv[0], argv);
	dprintf(STDERR_FILENO, "gbagent exec: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static double seconds_of(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* One untimed run, output thrown away; nonzero (after workload_fail) if it failed. */
static int warm_up(const struct options *opt, unsigned number)
{
	int status;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null < 0)
		return workload_fail("open /dev/null: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return workload_fail("fork: %s", strerror(errno));
	if (pid == 0)
		child(opt, null, null);
	close(null);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return workload_fail("waitpid: %s", strerror(errno));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return workload_fail("warm-up run %u of %s failed (status 0x%x)", number, opt->command[0], status);
	return 0;
}

static int run_exec(const char *name, const struct options *opt)
{
	const struct param params[] = {
		PARAM_STR("program", opt->command[0]),
		PARAM_STR("cwd", opt->cwd ? opt->cwd : ""),
		PARAM_STR("wrapper", opt->wrapper ? opt->wrapper : ""),
		PARAM_NUM("drop_caches", opt->drop_caches),
		PARAM_NUM("warmup_runs", opt->warmup_runs),
	};
	struct stream streams[2] = { { .name = "stdout" }, { .name = "stderr" } };
	int pipes[2][2];
	struct rusage ru;
	int status;

	proto_workload(name, params, sizeof params / sizeof params[0]);
	if (opt->drop_caches && drop_caches() != 0)
		return -1;
	for (unsigned i = 1; i <= opt->warmup_runs; i++) {
		if (warm_up(opt, i) != 0)
			return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (pipe2(pipes[i], O_CLOEXEC) != 0)
			return workload_fail("pipe: %s", strerror(errno));
		streams[i].fd = pipes[i][0];
	}
	fflush(stdout);
	uint64_t start = monotonic_ns();
	pid_t pid = fork();
	if (pid < 0)
		return workload_fail("fork: %s", strerror(errno));
	if (pid == 0)
		child(opt, pipes[0][1], pipes[1][1]);
	close(pipes[0][1]);
	close(pipes[1][1]);

	int open_count = 2;
	while (open_count > 0) {
		struct pollfd fds[2];
		int map[2], n = 0;
		for (int i = 0; i < 2; i++) {
			if (streams[i].fd >= 0) {
				fds[n] = (struct pollfd){ .fd = streams[i].fd, .events = POLLIN };
				map[n++] = i;
			}
		}
		if (poll(fds, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return workload_fail("poll: %s", strerror(errno));
		}
		for (int k = 0; k < n; k++) {
			struct stream *s = &streams[map[k]];
			if (fds[k].revents && !drain(name, s)) {
				close(s->fd);
				s->fd = -1;
				open_count--;
			}
		}
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR)
			return workload_fail("wait4: %s", strerror(errno));
	}
	uint64_t end = monotonic_ns();
	flush_stream(name, &streams[0]);
	flush_stream(name, &streams[1]);

	if (WIFSIGNALED(status))
		return workload_fail("%s was killed by signal %d (%s); stderr: %s", opt->command[0],
				     WTERMSIG(status), strsignal(WTERMSIG(status)), streams[1].tail);
	if (WEXITSTATUS(status) != 0)
		return workload_fail("%s exited with status %d; stderr: %s", opt->command[0],
				     WEXITSTATUS(status), streams[1].tail);
	double elapsed = (double)(end - start) / 1e9;
	double user = seconds_of(ru.ru_utime), sys = seconds_of(ru.ru_stime);
	proto_sample(name, "elapsed", "s", elapsed);
	proto_sample(name, "user", "s", user);
	proto_sample(name, "sys", "s", sys);
	proto_sample(name, "cpu_percent", "%", elapsed > 0 ? (user + sys) / elapsed * 100 : 0);
	proto_sample(name, "context_switches", "count", (double)ru.ru_nivcsw);
	proto_sample(name, "sleeps", "count", (double)ru.ru_nvcsw);
	proto_sample(name, "max_rss", "KiB", (double)ru.ru_maxrss);
	return 0;
}

const struct workload exec_workloads[] = {
	{ "exec", run_exec },
	{ NULL, NULL },
};
