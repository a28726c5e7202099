/*
 * perf 6.1's JSON export (`perf data convert --to-json`), see tally/convert.h.
 *
 * The layout is perf's to the byte: tabs for indentation, each value on its own line
 * after its delimiter, ", " nowhere, the sample's opening brace after the comma of the
 * previous one. Tools that read perf's JSON read this. Where perf's output is broken
 * tally writes what perf meant: bytes above 0x7f (UTF-8 in symbol names) go out as
 * they are where perf 6.1 prints them as a negative "\u" escape.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tally/convert.h>
#include <tally/format.h>

struct tally_json_export {
	FILE *fp;
	bool first;
	bool cpu;		/* some event samples PERF_SAMPLE_CPU */
	uint64_t nr_samples;
};

int tally_json_string(FILE *fp, const char *s, unsigned flags)
{
	fputc('"', fp);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"':
			fputs("\\\"", fp);
			break;
		case '\\':
			fputs("\\\\", fp);
			break;
		case '\b':
			fputs("\\b", fp);
			break;
		case '\f':
			fputs("\\f", fp);
			break;
		case '\n':
			fputs("\\n", fp);
			break;
		case '\r':
			fputs("\\r", fp);
			break;
		case '\t':
			fputs("\\t", fp);
			break;
		case '<': case '>': case '&':
			if (flags & TALLY_JSON_HTML)
				fprintf(fp, "\\u%04x", c);
			else
				fputc(c, fp);
			break;
		default:
			if (c <= 0x1f)
				fprintf(fp, "\\u%04x", c);
			else
				fputc(c, fp);
		}
	}
	fputc('"', fp);
	return ferror(fp) ? -EIO : 0;
}

/* a new value: the comma after the previous one, a newline, depth tabs */
static void delim(FILE *fp, bool comma, int depth)
{
	if (comma)
		fputc(',', fp);
	fputc('\n', fp);
	while (depth-- > 0)
		fputc('\t', fp);
}

static void key(FILE *fp, bool comma, int depth, const char *k)
{
	delim(fp, comma, depth);
	tally_json_string(fp, k, 0);
	fputs(": ", fp);
}

static void key_string(FILE *fp, bool comma, int depth, const char *k, const char *v)
{
	key(fp, comma, depth, k);
	tally_json_string(fp, v, 0);
}

static void key_u64(FILE *fp, bool comma, int depth, const char *k, uint64_t v)
{
	key(fp, comma, depth, k);
	fprintf(fp, "%" PRIu64, v);
}

static void headers(struct tally_json_export *x, const struct tally_data *d,
		    const struct tally_json_export_opts *o)
{
	const struct tally_file_header *fh = tally_data__header(d);
	bool pipe = tally_data__is_pipe(d);
	FILE *fp = x->fp;
	const void *buf;
	size_t len, nr;
	char **argv;

	key_u64(fp, false, 2, "header-version", 1);
	if (o && o->captured_on >= 0) {
		time_t t = (time_t)o->captured_on;
		struct tm tm;
		char tb[64];

		if (gmtime_r(&t, &tm) && strftime(tb, sizeof(tb), "%FT%TZ", &tm))
			key_string(fp, true, 2, "captured-on", tb);
	}
	key_u64(fp, true, 2, "data-offset", pipe ? 0 : fh->data.offset);
	key_u64(fp, true, 2, "data-size", pipe ? 0 : fh->data.size);
	key_u64(fp, true, 2, "feat-offset", pipe ? 0 : fh->data.offset + fh->data.size);
	key_string(fp, true, 2, "hostname", tally_data__feature_string(d, TALLY_FEAT_HOSTNAME));
	key_string(fp, true, 2, "os-release", tally_data__feature_string(d, TALLY_FEAT_OSRELEASE));
	key_string(fp, true, 2, "arch", tally_data__feature_string(d, TALLY_FEAT_ARCH));
	key_string(fp, true, 2, "cpu-desc", tally_data__feature_string(d, TALLY_FEAT_CPUDESC));
	key_string(fp, true, 2, "cpuid", tally_data__feature_string(d, TALLY_FEAT_CPUID));
	{
		uint32_t n[2] = { 0, 0 };	/* available, online */

		if (tally_data__feature(d, TALLY_FEAT_NRCPUS, &buf, &len) == 0 && len >= 8)
			memcpy(n, buf, sizeof(n));
		key_u64(fp, true, 2, "nrcpus-online", n[1]);
		key_u64(fp, true, 2, "nrcpus-avail", n[0]);
	}
	if (tally_data__feature(d, TALLY_FEAT_CLOCK_DATA, &buf, &len) == 0 && len >= 24) {
		struct {
			uint32_t version, clockid;
			uint64_t wall_ns, clock_ns;
		} cd;

		memcpy(&cd, buf, sizeof(cd));
		key_u64(fp, true, 2, "clockid", cd.clockid);
		key_u64(fp, true, 2, "clock-time", cd.clock_ns);
		key_u64(fp, true, 2, "real-time", cd.wall_ns);
	}
	key_string(fp, true, 2, "perf-version", tally_data__feature_string(d, TALLY_FEAT_VERSION));
	key(fp, true, 2, "cmdline");
	fputc('[', fp);
	if (tally_data__feature_strings(d, TALLY_FEAT_CMDLINE, &argv, &nr) == 0) {
		for (size_t i = 0; i < nr; i++) {
			delim(fp, i != 0, 3);
			tally_json_string(fp, argv[i], 0);
		}
		free(argv);
	}
	delim(fp, false, 2);
	fputc(']', fp);
}

int tally_json_export__new(struct tally_json_export **out, FILE *fp, const struct tally_data *d,
			   const struct tally_json_export_opts *opts)
{
	struct tally_json_export *x = calloc(1, sizeof(*x));

	*out = NULL;
	if (!x)
		return -ENOMEM;
	x->fp = fp;
	x->first = true;
	for (size_t i = 0; i < tally_data__nr_events(d); i++)
		x->cpu |= !!(tally_data__event(d, i)->attr.sample_type & PERF_SAMPLE_CPU);
	fputc('{', fp);
	delim(fp, false, 1);
	fputs("\"linux-perf-json-version\": 1", fp);
	delim(fp, true, 1);
	fputs("\"headers\": {", fp);
	headers(x, d, opts);
	delim(fp, false, 1);
	fputc('}', fp);
	delim(fp, true, 1);
	fputs("\"samples\": [", fp);
	*out = x;
	return ferror(fp) ? -EIO : 0;
}

static void frame(FILE *fp, const struct tally_addr_loc *l)
{
	delim(fp, false, 4);
	fputc('{', fp);
	key(fp, false, 5, "ip");
	fprintf(fp, "\"0x%" PRIx64 "\"", l->addr);
	if (l->sym && l->sym->name && l->sym->name[0]) {
		fputc(',', fp);
		key_string(fp, false, 5, "symbol", l->sym->name);
		if (l->dso && tally_dso__short_name(l->dso)[0]) {
			fputc(',', fp);
			key_string(fp, false, 5, "dso", tally_dso__short_name(l->dso));
		}
	}
	delim(fp, false, 4);
	fputc('}', fp);
}

int tally_json_export__sample(struct tally_json_export *x, const struct tally_convert_sample *s)
{
	const struct tally_sample *smp = s->smp;
	/* perf's JSON walks the recorded chain, not what unwinding or inlines add */
	const struct tally_addr_loc *v = s->recorded ? s->recorded : s->frames;
	size_t n = s->recorded ? s->nr_recorded : s->nr_frames;
	FILE *fp = x->fp;

	x->nr_samples++;
	if (!x->first)
		fputc(',', fp);
	x->first = false;
	delim(fp, false, 2);
	fputc('{', fp);
	/* perf's values for fields a sample lacks: -1 */
	key(fp, false, 3, "timestamp");
	fprintf(fp, "%" PRIi64, smp->type & PERF_SAMPLE_TIME ? (int64_t)smp->time : -1);
	/* perf prints its thread's pid: threads are found by tid, so a sample of a task
	 * that is exiting (tid -1) shows the pid of the first such sample, not its own */
	key(fp, true, 3, "pid");
	fprintf(fp, "%i", !(smp->type & PERF_SAMPLE_TID) ? -1 :
			  s->thread ? (int)tally_thread__pid(s->thread) : (int)smp->pid);
	key(fp, true, 3, "tid");
	fprintf(fp, "%i", smp->type & PERF_SAMPLE_TID ? (int)smp->tid : -1);
	if (x->cpu) {	/* some event has it: the others' samples say -1 */
		key(fp, true, 3, "cpu");
		fprintf(fp, "%i", smp->type & PERF_SAMPLE_CPU ? (int)smp->cpu : -1);
	}
	key_string(fp, true, 3, "comm", s->thread ? tally_thread__comm(s->thread) : ":-1");
	key(fp, true, 3, "callchain");
	fputc('[', fp);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', fp);
		frame(fp, &v[i]);
	}
	delim(fp, false, 3);
	fputc(']', fp);
	delim(fp, false, 2);
	fputc('}', fp);
	return ferror(fp) ? -EIO : 0;
}

int tally_json_export__finish(struct tally_json_export *x)
{
	delim(x->fp, false, 1);
	fputc(']', x->fp);
	delim(x->fp, false, 0);
	fputs("}\n", x->fp);
	return ferror(x->fp) ? -EIO : 0;
}

uint64_t tally_json_export__nr_samples(const struct tally_json_export *x)
{
	return x->nr_samples;
}

void tally_json_export__delete(struct tally_json_export *x)
{
	free(x);
}
