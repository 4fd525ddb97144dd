/* outcome.h: how a workload says why it failed, and how main reads that back for its error record. */
#ifndef GB_OUTCOME_H
#define GB_OUTCOME_H

/* Records why the running workload failed (one line) and returns -1. */
int workload_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for an environment that lacks what the workload needs (a CPU feature, I/O
 * ports): the host records the run as unsupported, not failed. */
int workload_unsupported(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Forgets the last workload's failure, so the next one starts with none. */
void outcome_clear(void);
/* Why the last workload failed: the message it recorded, or "failed" if it recorded none. */
const char *outcome_message(void);
/* Nonzero if that failure came through workload_unsupported(). */
int outcome_unsupported(void);

#endif
