/* protocol.h: emission of @GB1 records on standard output (docs/agent-protocol.md). */
#ifndef GB_PROTOCOL_H
#define GB_PROTOCOL_H

#include <stddef.h>

#define AGENT_NAME "gbagent"
#define AGENT_VERSION "0.1.0"
#define PROTOCOL_VERSION 1

/* One entry of a workload record's "params" object. */
struct param {
	const char *key;
	double value;
};

void proto_init(void);
void proto_hello(int argc, char *const argv[]);
void proto_workload(const char *workload, const struct param *params, size_t count);
void proto_sample(const char *workload, const char *metric, const char *unit, double value);
void proto_error(const char *workload, const char *message);
void proto_end(int ok);
/* Nonzero once a record could not be written out whole. */
int proto_write_failed(void);

#endif
