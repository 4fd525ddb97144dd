/* protocol.h: emission of @GB1 records on standard output (docs/agent-protocol.md). */
#ifndef GB_PROTOCOL_H
#define GB_PROTOCOL_H

#include <stddef.h>

#define AGENT_NAME "gbagent"
#define AGENT_VERSION "0.1.0"
#define PROTOCOL_VERSION 1

enum param_kind { PARAM_NUMBER, PARAM_STRING, PARAM_INT_LIST };

/* One entry of a workload record's "params" object; build it with the macros below. */
struct param {
	const char *key;
	enum param_kind kind;
	double value;     /* PARAM_NUMBER */
	const char *text; /* PARAM_STRING */
	const int *ints;  /* PARAM_INT_LIST: ints[0..count) */
	size_t count;
};

#define PARAM_NUM(k, v) { .key = (k), .kind = PARAM_NUMBER, .value = (v) }
#define PARAM_STR(k, s) { .key = (k), .kind = PARAM_STRING, .text = (s) }
#define PARAM_INTS(k, a, n) { .key = (k), .kind = PARAM_INT_LIST, .ints = (a), .count = (n) }

void proto_init(void);
void proto_hello(int argc, char *const argv[]);
void proto_workload(const char *workload, const struct param *params, size_t count);
void proto_sample(const char *workload, const char *metric, const char *unit, double value);
/* Output of a command the agent ran, as text (NUL bytes become '?'). */
void proto_output(const char *workload, const char *stream, const char *data, size_t len);
/* unsupported: the environment lacks what the workload needs (not a failure of it). */
void proto_error(const char *workload, const char *message, int unsupported);
void proto_clock(unsigned mark);
void proto_end(int ok);
/* Nonzero once a record could not be written out whole. */
int proto_write_failed(void);

#endif
