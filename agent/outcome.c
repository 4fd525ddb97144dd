/* outcome.c: the failure a workload records for its error record, kept here rather than in
 * main so that the workload families and calibrate depend on this file, not on the entry point. */
#include "outcome.h"

#include <stdarg.h>
#include <stdio.h>

static char failure[256];

static int failure_unsupported;

static int record_failure(const char *fmt, va_list ap)
{
	vsnprintf(failure, sizeof failure, fmt, ap);
	/* The protocol promises a one-line message. */
	for (char *p = failure; *p; p++) {
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	}
	return -1;
}

int workload_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record_failure(fmt, ap);
	va_end(ap);
	return -1;
}

int workload_unsupported(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record_failure(fmt, ap);
	va_end(ap);
	failure_unsupported = 1;
	return -1;
}

void outcome_clear(void)
{
	failure[0] = '\0';
	failure_unsupported = 0;
}

const char *outcome_message(void)
{
	/* A workload that returned -1 without a word still gets a message: the record needs one. */
	return failure[0] ? failure : "failed";
}

int outcome_unsupported(void)
{
	return failure_unsupported;
}
