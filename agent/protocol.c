/* protocol.c: builds, checksums and prints the @GB1 records the host parses. */
#include "protocol.h"
#include "timing.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <termios.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* A growing buffer holding one record's JSON; reused for every record. */
struct jbuf {
	char *text;
	size_t len;
	size_t cap;
};

static struct jbuf record;
static uint64_t next_seq;
static int write_failed;
static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[n] = c;
	}
}

static uint32_t crc32_ieee(const char *data, size_t len)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < len; i++)
		c = crc_table[(c ^ (unsigned char)data[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* Running out of memory for a record cannot be reported as a record. */
static void reserve(struct jbuf *j, size_t extra)
{
	size_t need = j->len + extra + 1;

	if (need <= j->cap)
		return;
	size_t cap = j->cap ? j->cap : 1024;
	while (cap < need)
		cap *= 2;
	char *text = realloc(j->text, cap);
	if (!text) {
		fprintf(stderr, "gbagent: out of memory building a record\n");
		exit(1);
	}
	j->text = text;
	j->cap = cap;
}

static void put_bytes(struct jbuf *j, const char *s, size_t n)
{
	reserve(j, n);
	memcpy(j->text + j->len, s, n);
	j->len += n;
	j->text[j->len] = '\0';
}

static void put_str(struct jbuf *j, const char *s)
{
	put_bytes(j, s, strlen(s));
}

static void put_fmt(struct jbuf *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(struct jbuf *j, const char *fmt, ...)
{
	char small[64];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		put_bytes(j, small, (size_t)n);
		return;
	}
	reserve(j, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(j->text + j->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	j->len += (size_t)n;
}

/* Invalid UTF-8 becomes U+FFFD, one byte at a time, so any argv is printable. */
static size_t utf8_decode(const unsigned char *p, uint32_t *cp)
{
	static const uint32_t smallest[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len;
	uint32_t v;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	} else if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		v = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		v = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		v = p[0] & 0x07;
	} else {
		goto invalid;
	}
	/* The terminating NUL fails the continuation test, so this never overreads. */
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			goto invalid;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < smallest[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		goto invalid;
	*cp = v;
	return len;
invalid:
	*cp = 0xfffd;
	return 1;
}

/* The protocol wants ASCII-only JSON, so everything else is \u-escaped. */
static void put_code_point(struct jbuf *j, uint32_t cp)
{
	if (cp == '"' || cp == '\\') {
		char esc[2] = { '\\', (char)cp };
		put_bytes(j, esc, 2);
	} else if (cp >= 0x20 && cp < 0x7f) {
		char c = (char)cp;
		put_bytes(j, &c, 1);
	} else if (cp < 0x10000) {
		put_fmt(j, "\\u%04x", (unsigned)cp);
	} else {
		cp -= 0x10000;
		put_fmt(j, "\\u%04x\\u%04x", 0xd800u + (unsigned)(cp >> 10), 0xdc00u + (unsigned)(cp & 0x3ff));
	}
}

static void put_string(struct jbuf *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	put_bytes(j, "\"", 1);
	while (*p) {
		uint32_t cp;

		p += utf8_decode(p, &cp);
		put_code_point(j, cp);
	}
	put_bytes(j, "\"", 1);
}

/* Shortest of %.15g..%.17g that reads back as the same double. */
static void put_number(struct jbuf *j, double v)
{
	char text[40];

	if (!isfinite(v)) {
		put_str(j, "null");
		return;
	}
	for (int precision = 15; precision <= 17; precision++) {
		snprintf(text, sizeof text, "%.*g", precision, v);
		if (strtod(text, NULL) == v)
			break;
	}
	put_str(j, text);
}

static void put_key(struct jbuf *j, const char *key)
{
	put_bytes(j, ",", 1);
	put_string(j, key);
	put_bytes(j, ":", 1);
}

static void field_str(const char *key, const char *value)
{
	put_key(&record, key);
	put_string(&record, value);
}

static void field_num(const char *key, double value)
{
	put_key(&record, key);
	put_number(&record, value);
}

static void field_uint(const char *key, uint64_t value)
{
	put_key(&record, key);
	put_fmt(&record, "%" PRIu64, value);
}

/* t_ns is taken here: the moment the record is made. */
static void begin(const char *type)
{
	record.len = 0;
	put_str(&record, "{\"type\":");
	put_string(&record, type);
	field_uint("t_ns", monotonic_ns());
}

/* Header, JSON and newline go out in one flush so a killed agent leaves whole lines. */
static void emit(void)
{
	char header[64];

	put_bytes(&record, "}", 1);
	int n = snprintf(header, sizeof header, "@GB1 %" PRIu64 " %08" PRIx32 " ", next_seq,
			 crc32_ieee(record.text, record.len));
	next_seq++;
	fwrite(header, 1, (size_t)n, stdout);
	fwrite(record.text, 1, record.len, stdout);
	fputc('\n', stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		write_failed = 1;
}

void proto_init(void)
{
	static char outbuf[1 << 16];

	crc_init();
	/* Large enough that a typical record leaves in a single write(). */
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
}

void proto_hello(int argc, char *const argv[])
{
	begin("hello");
	field_str("agent", AGENT_NAME);
	field_str("version", AGENT_VERSION);
	field_uint("protocol", PROTOCOL_VERSION);
	put_key(&record, "tsc");
	put_str(&record, HAVE_TSC ? "true" : "false");
	put_key(&record, "argv");
	put_bytes(&record, "[", 1);
	for (int i = 0; i < argc; i++) {
		if (i > 0)
			put_bytes(&record, ",", 1);
		put_string(&record, argv[i]);
	}
	put_bytes(&record, "]", 1);
	emit();
}

static void put_param_value(struct jbuf *j, const struct param *p)
{
	if (p->kind == PARAM_STRING) {
		put_string(j, p->text);
		return;
	}
	if (p->kind == PARAM_NUMBER) {
		put_number(j, p->value);
		return;
	}
	put_bytes(j, "[", 1);
	for (size_t i = 0; i < p->count; i++)
		put_fmt(j, i > 0 ? ",%d" : "%d", p->ints[i]);
	put_bytes(j, "]", 1);
}

void proto_workload(const char *workload, const struct param *params, size_t count)
{
	begin("workload");
	field_str("workload", workload);
	put_key(&record, "params");
	put_bytes(&record, "{", 1);
	for (size_t i = 0; i < count; i++) {
		if (i > 0)
			put_bytes(&record, ",", 1);
		put_string(&record, params[i].key);
		put_bytes(&record, ":", 1);
		put_param_value(&record, &params[i]);
	}
	put_bytes(&record, "}", 1);
	emit();
}

void proto_sample(const char *workload, const char *metric, const char *unit, double value)
{
	begin("sample");
	field_str("workload", workload);
	field_str("metric", metric);
	field_str("unit", unit);
	field_num("value", value);
	emit();
}

void proto_output(const char *workload, const char *stream, const char *data, size_t len)
{
	char *text = malloc(len + 1);

	if (!text) {
		write_failed = 1;
		return;
	}
	for (size_t i = 0; i < len; i++)
		text[i] = data[i] ? data[i] : '?';
	text[len] = '\0';
	begin("output");
	field_str("workload", workload);
	field_str("stream", stream);
	field_str("text", text);
	emit();
	free(text);
}

void proto_error(const char *workload, const char *message, int unsupported)
{
	begin("error");
	field_str("workload", workload);
	field_str("message", message);
	if (unsupported) {
		put_key(&record, "unsupported");
		put_str(&record, "true");
	}
	emit();
}

void proto_clock(unsigned mark)
{
	begin("clock");
	field_uint("mark", mark);
	emit();
}

void proto_end(int ok)
{
	begin("end");
	field_str("status", ok ? "ok" : "failed");
	field_uint("records", next_seq);
	emit();
	/* A guest's init powers off as soon as the agent exits, and the kernel's own "reboot:
	 * Power down" can then overtake the record's last bytes still queued in the console's
	 * tty: wait until they are sent. */
	if (isatty(STDOUT_FILENO))
		tcdrain(STDOUT_FILENO);
}

int proto_write_failed(void)
{
	return write_failed;
}
