/* gbgate: the gate a long-running child of guestbench waits at, on the host
 * (guestbench/process/gate.py says why).
 *
 *     gbgate pipe|null PROGRAM [ARG...]
 *
 * Reads one byte of standard input. At its end (guestbench died before it
 * wrote that byte) exits 111 without starting PROGRAM. Then asks the kernel
 * for SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG, kept across exec),
 * exits 111 if that parent has died already, makes standard input /dev/null
 * unless told "pipe", and execs PROGRAM, searched in PATH. Exits 127 with one
 * line on standard error if PROGRAM cannot start, 2 on a wrong command line. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define GATE_CLOSED 111

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "pipe") != 0 && strcmp(argv[1], "null") != 0)) {
        fprintf(stderr, "usage: gbgate pipe|null PROGRAM [ARG...]\n");
        return 2;
    }
    pid_t parent = getppid();
    char byte;
    ssize_t got;
    do
        got = read(STDIN_FILENO, &byte, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1)
        return GATE_CLOSED;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        return GATE_CLOSED;
    if (strcmp(argv[1], "null") == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0)
            return GATE_CLOSED;
        if (null != STDIN_FILENO)
            close(null);
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "gbgate: cannot start %s: %s\n", argv[2], strerror(errno));
    return 127;
}
