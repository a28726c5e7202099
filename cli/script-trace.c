/*
 * TRACING_DATA -> libtraceevent. The layout (perf's trace-event-read.c, version 0.5/0.6):
 *   "\027\010\104tracing" version\0 big_endian:u8 long_size:u8 page_size:u32
 *   "header_page\0" u64 size, data; "header_event\0" u64 size, data
 *   u32 nr ftrace formats { u64 size, data }
 *   u32 nr systems { name\0 u32 nr { u64 size, data } }
 *   u32 size kallsyms; u32 size printk formats; (0.6) u64 size saved cmdlines
 * Integers are in the file's byte order.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include "cmd.h"
#include "script-trace.h"

/* libtraceevent is loaded when a file's tracepoint formats are first read, not linked:
 * the commands and files without tracepoints do not map it. The names below are its
 * functions through the loaded library. */
#define TEP_SONAME "libtraceevent.so.1"
#define TEP_FUNCS(X) X(tep_alloc) X(tep_free) X(tep_find_event) X(tep_find_event_by_record) \
	X(tep_find_field) X(tep_parse_event) X(tep_parse_header_page) X(tep_parse_kallsyms) \
	X(tep_parse_printk_formats) X(tep_parse_saved_cmdlines) X(tep_print_event) \
	X(tep_read_number) X(tep_read_number_field) X(tep_set_file_bigendian) \
	X(tep_set_local_bigendian) X(tep_set_long_size) X(tep_set_page_size) \
	X(trace_seq_init) X(trace_seq_destroy) X(trace_seq_printf) X(trace_seq_putc) \
	X(trace_seq_puts) X(trace_seq_terminate)
#define TEP_FIELD(name) __typeof__(&name) name;
static struct {
	TEP_FUNCS(TEP_FIELD)
} tp;

static bool tep_load(void)
{
	void *h;

	if (tp.tep_alloc)
		return true;
	h = dlopen(TEP_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		cli_error("cannot load %s for tracepoint fields (%s)", TEP_SONAME, dlerror());
		return false;
	}
#define TEP_SYM(name) *(void **)&tp.name = dlsym(h, #name);
	TEP_FUNCS(TEP_SYM)
#define TEP_MISSING(name) !tp.name ||
	if (TEP_FUNCS(TEP_MISSING) false) {
		memset(&tp, 0, sizeof(tp));
		dlclose(h);
		cli_error("%s lacks a function tally needs for tracepoint fields", TEP_SONAME);
		return false;
	}
	return true;	/* kept open: its code runs until exit */
}

#define tep_alloc tp.tep_alloc
#define tep_free tp.tep_free
#define tep_find_event tp.tep_find_event
#define tep_find_event_by_record tp.tep_find_event_by_record
#define tep_find_field tp.tep_find_field
#define tep_parse_event tp.tep_parse_event
#define tep_parse_header_page tp.tep_parse_header_page
#define tep_parse_kallsyms tp.tep_parse_kallsyms
#define tep_parse_printk_formats tp.tep_parse_printk_formats
#define tep_parse_saved_cmdlines tp.tep_parse_saved_cmdlines
#define tep_print_event tp.tep_print_event
#define tep_read_number tp.tep_read_number
#define tep_read_number_field tp.tep_read_number_field
#define tep_set_file_bigendian tp.tep_set_file_bigendian
#define tep_set_local_bigendian tp.tep_set_local_bigendian
#define tep_set_long_size tp.tep_set_long_size
#define tep_set_page_size tp.tep_set_page_size
#define trace_seq_init tp.trace_seq_init
#define trace_seq_destroy tp.trace_seq_destroy
#define trace_seq_printf tp.trace_seq_printf
#define trace_seq_putc tp.trace_seq_putc
#define trace_seq_puts tp.trace_seq_puts
#define trace_seq_terminate tp.trace_seq_terminate

struct script_trace {
	struct tep_handle *tep;
};

struct cursor {
	const unsigned char *p, *end;
	bool swap;
	bool bad;
};

static bool take(struct cursor *c, void *dst, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	if (dst)
		memcpy(dst, c->p, n);
	c->p += n;
	return true;
}

static uint32_t get32(struct cursor *c)
{
	uint32_t v = 0;

	take(c, &v, 4);
	return c->swap ? __builtin_bswap32(v) : v;
}

static uint64_t get64(struct cursor *c)
{
	uint64_t v = 0;

	take(c, &v, 8);
	return c->swap ? __builtin_bswap64(v) : v;
}

static const char *getstr(struct cursor *c)
{
	const unsigned char *nul;

	if (c->bad)
		return NULL;
	nul = memchr(c->p, 0, (size_t)(c->end - c->p));
	if (!nul) {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->p;

	c->p = nul + 1;
	return s;
}

/* A NUL-terminated copy of the next n bytes (libtraceevent wants strings). */
static char *getblob(struct cursor *c, uint64_t n)
{
	char *s;

	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, c->p, n);
	s[n] = 0;
	c->p += n;
	return s;
}

/* The event formats: ftrace's, then each system's. 0 or -EINVAL. */
static int parse_formats(struct script_trace *t, struct cursor *c)
{
	uint32_t nr = get32(c);	/* ftrace formats */
	char *blob;

	for (uint32_t i = 0; i < nr && !c->bad; i++) {
		blob = getblob(c, get64(c));
		if (!blob)
			return -EINVAL;
		tep_parse_event(t->tep, blob, strlen(blob), "ftrace");
		free(blob);
	}
	nr = get32(c);	/* systems */
	for (uint32_t i = 0; i < nr && !c->bad; i++) {
		const char *sys = getstr(c);
		uint32_t nev = get32(c);

		if (!sys)
			return -EINVAL;
		for (uint32_t k = 0; k < nev && !c->bad; k++) {
			blob = getblob(c, get64(c));
			if (!blob)
				return -EINVAL;
			tep_parse_event(t->tep, blob, strlen(blob), sys);
			free(blob);
		}
	}
	return 0;
}

int script_trace__parse(struct script_trace **out, const void *buf, size_t len)
{
	static const unsigned char magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	struct cursor c = { .p = buf, .end = (const unsigned char *)buf + len };
	struct script_trace *t;
	const char *version, *name;
	uint8_t big, long_size;
	uint32_t page_size;
	int ret = -EINVAL;
	char *blob;

	*out = NULL;
	if (len < sizeof(magic) || memcmp(buf, magic, sizeof(magic)))
		return -EINVAL;
	if (!tep_load())
		return -ELIBACC;
	c.p += sizeof(magic);
	version = getstr(&c);
	take(&c, &big, 1);
	take(&c, &long_size, 1);
	if (c.bad || !version)
		return -EINVAL;
	c.swap = big != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	page_size = get32(&c);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->tep = tep_alloc();
	if (!t->tep) {
		free(t);
		return -ENOMEM;
	}
	tep_set_file_bigendian(t->tep, big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(t->tep, __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ?
				TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_long_size(t->tep, long_size);
	tep_set_page_size(t->tep, (int)page_size);

	/* header_page, header_event */
	name = getstr(&c);
	if (!name || strcmp(name, "header_page"))
		goto fail;
	blob = getblob(&c, get64(&c));
	if (!blob)
		goto fail;
	tep_parse_header_page(t->tep, blob, strlen(blob), long_size);
	free(blob);
	name = getstr(&c);
	if (!name || strcmp(name, "header_event"))
		goto fail;
	blob = getblob(&c, get64(&c));
	if (!blob)
		goto fail;
	free(blob);

	if (parse_formats(t, &c))
		goto fail;
	if (c.bad)
		goto fail;
	/* the rest is optional for formatting: read it when it is there */
	blob = getblob(&c, get32(&c));
	if (blob) {
		tep_parse_kallsyms(t->tep, blob);
		free(blob);
	}
	blob = getblob(&c, get32(&c));
	if (blob) {
		tep_parse_printk_formats(t->tep, blob);
		free(blob);
	}
	if (!c.bad && strcmp(version, "0.5")) {
		blob = getblob(&c, get64(&c));
		if (blob) {
			tep_parse_saved_cmdlines(t->tep, blob);
			free(blob);
		}
	}
	*out = t;
	return 0;
fail:
	script_trace__delete(t);
	return ret;
}

int script_trace__new(struct script_trace **out, struct tally_data *d)
{
	const void *buf;
	size_t len;

	*out = NULL;
	if (tally_data__feature(d, 1 /* TALLY_FEAT_TRACING_DATA */, &buf, &len))
		return -ENOENT;
	return script_trace__parse(out, buf, len);
}

void script_trace__delete(struct script_trace *t)
{
	if (!t)
		return;
	tep_free(t->tep);
	free(t);
}

static bool printable(const char *p, unsigned len)
{
	for (unsigned i = 0; i < len && p[i]; i++)
		if (!isprint((unsigned char)p[i]) && !isspace((unsigned char)p[i]))
			return false;
	return true;
}

/* perf 6.1's --raw-trace text of one field (the libtraceevent it bundles; newer ones
 * print some fields otherwise): strings as text, other arrays as ARRAY[hex, ...],
 * pointers and longs in hex, signed numbers by their size. */
static void print_raw_field(struct tep_handle *tep, struct trace_seq *s, const char *data,
			    unsigned size, struct tep_format_field *f)
{
	unsigned long long v;

	if (f->flags & TEP_FIELD_IS_ARRAY) {
		unsigned off = (unsigned)f->offset, len = (unsigned)f->size;

		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			if (off + len > size)
				return;
			v = tep_read_number(tep, data + off, (int)len);
			off = (unsigned)(v & 0xffff);
			len = (unsigned)(v >> 16) & 0xffff;
			if (f->flags & TEP_FIELD_IS_RELATIVE)
				off += (unsigned)(f->offset + f->size);
		}
		if (off > size || len > size - off)
			return;
		if ((f->flags & TEP_FIELD_IS_STRING) && printable(data + off, len)) {
			trace_seq_printf(s, "%.*s", (int)strnlen(data + off, len), data + off);
			return;
		}
		trace_seq_puts(s, "ARRAY[");
		for (unsigned i = 0; i < len; i++)
			trace_seq_printf(s, "%s%02x", i ? ", " : "", (unsigned char)data[off + i]);
		trace_seq_putc(s, ']');
		f->flags &= ~TEP_FIELD_IS_STRING;	/* as perf: an array from now on */
		return;
	}
	if ((unsigned)f->offset + (unsigned)f->size > size)
		return;
	v = tep_read_number(tep, data + f->offset, f->size);
	if (f->flags & TEP_FIELD_IS_POINTER)
		trace_seq_printf(s, "0x%llx", v);
	else if (f->flags & TEP_FIELD_IS_SIGNED)
		switch (f->size) {
		case 4:
			trace_seq_printf(s, f->flags & TEP_FIELD_IS_LONG ? "0x%x" : "%d", (int)v);
			break;
		case 2:
			trace_seq_printf(s, "%2d", (short)v);
			break;
		case 1:
			trace_seq_printf(s, "%1d", (signed char)v);
			break;
		default:
			trace_seq_printf(s, "%lld", (long long)v);
		}
	else
		trace_seq_printf(s, f->flags & TEP_FIELD_IS_LONG ? "0x%llx" : "%llu", v);
}

/* The event's fields as its print format says (fields: each as " name=value", perf's
 * --raw-trace), into s (initialized here). */
static bool format_info(struct script_trace *t, struct trace_seq *s, int cpu, const void *raw,
			uint32_t size, bool fields)
{
	struct tep_record rec = { 0 };
	struct tep_event *ev = NULL;

	if (!t || !raw || size < 2)
		return false;
	rec.cpu = cpu;
	rec.size = (int)size;
	rec.data = (void *)raw;
	if (fields && !(ev = tep_find_event_by_record(t->tep, &rec)))
		return false;
	trace_seq_init(s);
	if (fields) {
		for (struct tep_format_field *f = ev->format.fields; f; f = f->next) {
			trace_seq_printf(s, " %s=", f->name);
			print_raw_field(t->tep, s, raw, size, f);
		}
	} else
		tep_print_event(t->tep, s, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(s);
	return true;
}

void script_trace__print(struct script_trace *t, FILE *fp, int cpu, const void *raw,
			 uint32_t size)
{
	struct trace_seq s;

	if (!format_info(t, &s, cpu, raw, size, false))
		return;
	fwrite(s.buffer, 1, s.len, fp);
	trace_seq_destroy(&s);
}

char *script_trace__format(struct script_trace *t, int cpu, const void *raw, uint32_t size)
{
	return script_trace__format_as(t, cpu, raw, size, false);
}

char *script_trace__format_as(struct script_trace *t, int cpu, const void *raw, uint32_t size,
			      bool fields)
{
	struct trace_seq s;
	char *out;

	if (!format_info(t, &s, cpu, raw, size, fields))
		return NULL;
	out = malloc(s.len + 1);
	if (out) {
		memcpy(out, s.buffer, s.len);
		out[s.len] = 0;
	}
	trace_seq_destroy(&s);
	return out;
}

int script_trace__field(struct script_trace *t, const void *raw, uint32_t size,
			const char *name, uint64_t *val)
{
	struct tep_record rec = { 0 };
	struct tep_format_field *field;
	struct tep_event *ev;
	unsigned long long v;

	if (!t || !raw || size < 2)
		return -EINVAL;
	rec.size = (int)size;
	rec.data = (void *)raw;
	ev = tep_find_event_by_record(t->tep, &rec);
	field = ev ? tep_find_field(ev, name) : NULL;
	if (!field || field->offset + field->size > (int)size ||
	    tep_read_number_field(field, raw, &v))
		return -ENOENT;
	*val = v;
	return 0;
}

int script_trace__field_names(struct script_trace *t, uint64_t id, char *buf, size_t len)
{
	struct tep_event *ev = t && id <= INT32_MAX ? tep_find_event(t->tep, (int)id) : NULL;
	struct tep_format_field *f = ev ? ev->format.fields : NULL;
	size_t n = 0;

	if (!f || !len)
		return -ENOENT;
	buf[0] = 0;
	for (; f && n < len; f = f->next)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", f->name);
	return 0;
}
