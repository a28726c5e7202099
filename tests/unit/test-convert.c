/*
 * The exporters (tally/convert.h) on the checked-in perf.data fixtures, their samples
 * resolved by a session as the commands do: the pprof profile decodes (gunzip, then
 * protobuf-c's own decoder) into what the file holds (every sample counted once, its
 * periods summed, ids that resolve, the binary's build-id, labels, the functions of
 * the call chains), and perf's JSON has one entry per sample in perf's layout.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "tally/convert.h"
#include "tally/format.h"
#include "profile.pb-c.h"

static char fix[4096];

static const char *fixture(const char *name)
{
	const char *top = getenv("TALLY_TOP");

	snprintf(fix, sizeof(fix), "%s/tests/data/perf/%s", top ? top : "..", name);
	return fix;
}

struct walk {
	struct tally_data *d;
	struct tally_session *s;
	struct tally_pprof *pprof;
	struct tally_json_export *json;
	uint64_t samples, period;
};

/* a sample's chain resolved as the commands do: markers set the cpumode */
static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct walk *w = arg;
	const struct tally_data_event *ev;
	struct tally_convert_sample cs = { .evidx = ctx->evidx < 0 ? 0 : ctx->evidx };
	struct tally_addr_loc frames[256];
	struct tally_sample smp;
	uint8_t mode;

	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(w->s, hdr) == -ENOMEM ? -ENOMEM : 0;
	ev = tally_data__event(w->d, (size_t)cs.evidx);
	assert_int_equal(tally_sample__parse(&ev->layout, hdr, &smp), 0);
	mode = smp.misc & PERF_RECORD_MISC_CPUMODE_MASK;
	for (uint64_t i = 0; i < smp.callchain_nr && cs.nr_frames < 256; i++) {
		uint64_t ip = smp.callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			mode = ip == PERF_CONTEXT_KERNEL ? PERF_RECORD_MISC_KERNEL :
			       PERF_RECORD_MISC_USER;
			continue;
		}
		tally_session__resolve(w->s, (pid_t)smp.pid, (pid_t)smp.tid, mode, ip,
				       &frames[cs.nr_frames]);
		frames[cs.nr_frames++].cpumode = mode;
	}
	cs.smp = &smp;
	cs.thread = tally_session__thread(w->s, (pid_t)smp.pid, (pid_t)smp.tid);
	cs.period = tally_sample__period(&smp, &ev->attr);
	cs.frames = frames;
	cs.chain = true;
	w->samples++;
	w->period += cs.period;
	if (w->pprof)
		assert_int_equal(tally_pprof__add(w->pprof, &cs), 0);
	if (w->json)
		assert_int_equal(tally_json_export__sample(w->json, &cs), 0);
	return 0;
}

static void open_fixture(struct walk *w, const char *name)
{
	struct tally_session_opts so = { .kallsyms = "/dev/null" };
	const void *buf;
	size_t len;

	memset(w, 0, sizeof(*w));
	assert_int_equal(tally_data__open(&w->d, fixture(name), NULL, NULL), 0);
	so.symfs = fixture("symfs");
	assert_int_equal(tally_session__new(&w->s, &so), 0);
	if (tally_data__feature(w->d, TALLY_FEAT_BUILD_ID, &buf, &len) == 0)
		tally_session__add_build_ids(w->s, buf, len);
}

static void close_fixture(struct walk *w)
{
	tally_pprof__delete(w->pprof);
	tally_json_export__delete(w->json);
	tally_session__delete(w->s);
	tally_data__delete(w->d);
}

/* gunzip a pprof file and decode it */
static Perftools__Profiles__Profile *decode(const char *gz, size_t len)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20, n = 0;
	unsigned char *out = malloc(cap);
	Perftools__Profiles__Profile *p;
	int r;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	do {
		if (n == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		z.next_out = out + n;
		z.avail_out = (uInt)(cap - n);
		r = inflate(&z, Z_NO_FLUSH);
		assert_true(r == Z_OK || r == Z_STREAM_END);
		n = cap - z.avail_out;
	} while (r != Z_STREAM_END);
	inflateEnd(&z);
	p = perftools__profiles__profile__unpack(NULL, n, out);
	free(out);
	assert_non_null(p);
	return p;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static int64_t label_num(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
			 const char *key, const char **text)
{
	for (size_t i = 0; i < s->n_label; i++) {
		if (!strcmp(str(p, s->label[i]->key), key)) {
			if (text)
				*text = str(p, s->label[i]->str);
			return s->label[i]->num;
		}
	}
	fail_msg("no label %s", key);
	return -1;
}

/* the function name of location id's last line (the function itself) */
static const char *loc_function(const Perftools__Profiles__Profile *p, uint64_t id)
{
	const Perftools__Profiles__Location *l;

	assert_true(id >= 1 && id <= p->n_location);
	l = p->location[id - 1];
	assert_int_equal(l->id, id);
	if (!l->n_line)
		return NULL;
	uint64_t f = l->line[l->n_line - 1]->function_id;

	assert_true(f >= 1 && f <= p->n_function);
	assert_int_equal(p->function[f - 1]->id, f);
	return str(p, p->function[f - 1]->name);
}

static int find_hot(void *arg, struct tally_dso *d)
{
	const struct tally_dso **hot = arg;

	if (!strcmp(tally_dso__name(d), "/tmp/tally-fixture/hot"))
		*hot = d;
	return 0;
}

static void pprof_of_callchain(void **state)
{
	const char *keys[] = { "host" }, *values[] = { "unit-test" };
	struct tally_pprof_opts po = { .label_keys = keys, .label_values = values, .nr_labels = 1,
				       .end_ns = 2000000000000000000ll };
	struct tally_data_error err = { 0 };
	const struct tally_dso *hot = NULL;
	Perftools__Profiles__Profile *p;
	char *buf = NULL, hex[TALLY_BUILD_ID_HEX_SIZE];
	size_t len = 0, nr_s, nr_l, nr_f, nr_m;
	uint64_t count = 0, period = 0;
	bool spin_from_hot_a = false, hot_mapping = false;
	struct walk w;
	FILE *fp;

	(void)state;
	open_fixture(&w, "callchain.data");
	assert_int_equal(tally_pprof__new(&w.pprof, w.d, w.s, &po), 0);
	assert_int_equal(tally_data__for_each(w.d, TALLY_DATA_ORDERED, on_record, &w, &err), 0);
	assert_int_equal(w.samples, 100);
	tally_pprof__counts(w.pprof, &nr_s, &nr_l, &nr_f, &nr_m);
	assert_true(nr_s > 0 && nr_s < w.samples);	/* samples alike were summed */
	fp = open_memstream(&buf, &len);
	assert_non_null(fp);
	assert_int_equal(tally_pprof__write(w.pprof, fp), 0);
	fclose(fp);
	p = decode(buf, len);

	assert_string_equal(p->string_table[0], "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), tally_data__event(w.d, 0)->name);
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");	/* cpu-clock */
	assert_int_equal(p->default_sample_type, p->sample_type[1]->type);
	assert_true(p->duration_nanos > 0);
	assert_int_equal(p->time_nanos, po.end_ns - p->duration_nanos);
	assert_int_equal(p->n_sample, nr_s);
	assert_int_equal(p->n_location, nr_l);
	assert_int_equal(p->n_function, nr_f);
	assert_int_equal(p->n_mapping, nr_m);

	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const char *comm = NULL, *host = NULL;

		assert_int_equal(s->n_value, 2);
		count += (uint64_t)s->value[0];
		period += (uint64_t)s->value[1];
		assert_true(label_num(p, s, "pid", NULL) > 0);
		assert_true(label_num(p, s, "tid", NULL) > 0);
		label_num(p, s, "comm", &comm);
		label_num(p, s, "host", &host);
		assert_string_equal(host, "unit-test");
		for (size_t k = 0; k < s->n_location_id; k++)
			loc_function(p, s->location_id[k]);
		if (s->n_location_id >= 3 && !strcmp(comm, "hot")) {
			const char *leaf = loc_function(p, s->location_id[0]);
			const char *caller = loc_function(p, s->location_id[1]);

			spin_from_hot_a |= leaf && caller && !strcmp(leaf, "spin") &&
					   !strcmp(caller, "hot_a");
		}
	}
	assert_int_equal(count, w.samples);
	assert_int_equal(period, w.period);
	assert_true(spin_from_hot_a);

	/* the binary's mapping carries the build-id the recording gave */
	tally_session__for_each_dso(w.s, find_hot, &hot);
	assert_non_null(hot);
	assert_non_null(tally_dso__bid(hot));
	tally_build_id__hex(tally_dso__bid(hot), hex);
	assert_true(strlen(hex) >= 40);
	for (size_t i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];

		assert_int_equal(m->id, i + 1);
		assert_true(m->memory_start < m->memory_limit);
		if (!strcmp(str(p, m->filename), "/tmp/tally-fixture/hot")) {
			hot_mapping = true;
			assert_string_equal(str(p, m->build_id), hex);
			assert_true(m->has_functions);
			assert_int_equal(i, 0);		/* the main binary comes first */
		}
	}
	assert_true(hot_mapping);
	for (size_t i = 0; i < p->n_location; i++) {
		uint64_t m = p->location[i]->mapping_id;

		assert_true(m <= p->n_mapping);
		if (m)
			assert_true(p->location[i]->address >= p->mapping[m - 1]->memory_start &&
				    p->location[i]->address < p->mapping[m - 1]->memory_limit);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	close_fixture(&w);
}

/* several events: a pair of values each, each sample counting for its own event */
static void pprof_of_several_events(void **state)
{
	struct tally_data_error err = { 0 };
	Perftools__Profiles__Profile *p;
	uint64_t per_event[8] = { 0 };
	char *buf = NULL;
	size_t len = 0, nev;
	struct walk w;
	FILE *fp;

	(void)state;
	open_fixture(&w, "multi.data");
	nev = tally_data__nr_events(w.d);
	assert_true(nev >= 2 && nev <= 4);
	assert_int_equal(tally_pprof__new(&w.pprof, w.d, w.s, NULL), 0);
	assert_int_equal(tally_data__for_each(w.d, TALLY_DATA_ORDERED, on_record, &w, &err), 0);
	fp = open_memstream(&buf, &len);
	assert_int_equal(tally_pprof__write(w.pprof, fp), 0);
	fclose(fp);
	p = decode(buf, len);
	assert_int_equal(p->n_sample_type, 2 * nev);
	for (size_t e = 0; e < nev; e++) {
		char want[256];

		snprintf(want, sizeof(want), "%s_samples", tally_data__event(w.d, e)->name);
		assert_string_equal(str(p, p->sample_type[2 * e]->type), want);
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		size_t nonzero = 0;

		for (size_t e = 0; e < nev; e++) {
			per_event[e] += (uint64_t)p->sample[i]->value[2 * e];
			nonzero += p->sample[i]->value[2 * e] != 0;
		}
		assert_int_equal(nonzero, 1);
	}
	uint64_t sum = 0;

	for (size_t e = 0; e < nev; e++)
		sum += per_event[e];
	assert_int_equal(sum, w.samples);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	close_fixture(&w);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *at = hay; (at = strstr(at, needle)); at++)
		n++;
	return n;
}

static void json_of_callchain(void **state)
{
	struct tally_json_export_opts jo = { .captured_on = 0 };
	struct tally_data_error err = { 0 };
	char *buf = NULL;
	size_t len = 0;
	struct walk w;
	FILE *fp;

	(void)state;
	open_fixture(&w, "callchain.data");
	fp = open_memstream(&buf, &len);
	assert_int_equal(tally_json_export__new(&w.json, fp, w.d, &jo), 0);
	assert_int_equal(tally_data__for_each(w.d, TALLY_DATA_ORDERED, on_record, &w, &err), 0);
	assert_int_equal(tally_json_export__finish(w.json), 0);
	assert_int_equal(tally_json_export__nr_samples(w.json), w.samples);
	fclose(fp);
	assert_true(!strncmp(buf, "{\n\t\"linux-perf-json-version\": 1,\n\t\"headers\": {\n"
			     "\t\t\"header-version\": 1,\n\t\t\"captured-on\": \"1970-01-01T00:00:00Z\",",
			     strlen("{\n\t\"linux-perf-json-version\": 1,\n\t\"headers\": {\n"
				    "\t\t\"header-version\": 1,\n\t\t\"captured-on\": \"1970-01-01T00:00:00Z\",")));
	assert_int_equal(count_of(buf, "\n\t\t\t\"timestamp\": "), w.samples);
	assert_true(count_of(buf, "\t\t\t\t\t\"symbol\": \"spin\",\n\t\t\t\t\t\"dso\": \"hot\"\n") > 0);
	{
		const char *end = "\t\t\t]\n\t\t}\n\t]\n}\n";

		assert_true(len > strlen(end) && !strcmp(buf + len - strlen(end), end));
	}
	free(buf);
	close_fixture(&w);
}

/* Samples of a task on its way out carry tid -1. perf finds threads by tid, so every
 * such sample is one thread, whose pid is the first of them: its JSON prints that pid
 * for each, whatever pid the sample itself names (seen on system-wide recordings of
 * processes that exit). */
static void json_pid_of_exiting_tasks(void **state)
{
	struct tally_json_export_opts jo = { .captured_on = 0 };
	const uint32_t pids[] = { 7904, 7872, 5531 };
	char *buf = NULL;
	size_t len = 0;
	struct walk w;
	FILE *fp;

	(void)state;
	open_fixture(&w, "callchain.data");
	fp = open_memstream(&buf, &len);
	assert_int_equal(tally_json_export__new(&w.json, fp, w.d, &jo), 0);
	for (size_t i = 0; i < 3; i++) {
		struct tally_sample smp = {
			.type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
			.misc = PERF_RECORD_MISC_KERNEL, .ip = 0xffffffff81000000ull,
			.pid = pids[i], .tid = (uint32_t)-1, .time = 1000 + i,
		};
		struct tally_addr_loc loc = { .addr = smp.ip, .cpumode = PERF_RECORD_MISC_KERNEL };
		struct tally_convert_sample cs = {
			.smp = &smp, .period = 1, .frames = &loc, .nr_frames = 1,
			.thread = tally_session__thread(w.s, (pid_t)smp.pid, (pid_t)smp.tid),
		};

		assert_int_equal(tally_json_export__sample(w.json, &cs), 0);
	}
	/* and a sample of a live thread names its own process */
	{
		struct tally_sample smp = {
			.type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
			.misc = PERF_RECORD_MISC_USER, .ip = 0x1000, .pid = 42, .tid = 43,
			.time = 2000,
		};
		struct tally_addr_loc loc = { .addr = smp.ip, .cpumode = PERF_RECORD_MISC_USER };
		struct tally_convert_sample cs = {
			.smp = &smp, .period = 1, .frames = &loc, .nr_frames = 1,
			.thread = tally_session__thread(w.s, 42, 43),
		};

		assert_int_equal(tally_json_export__sample(w.json, &cs), 0);
	}
	assert_int_equal(tally_json_export__finish(w.json), 0);
	fclose(fp);
	assert_int_equal(count_of(buf, "\t\t\t\"pid\": 7904,\n\t\t\t\"tid\": -1,\n"), 3);
	assert_int_equal(count_of(buf, "\t\t\t\"pid\": 42,\n\t\t\t\"tid\": 43,\n"), 1);
	free(buf);
	close_fixture(&w);
}

/* The one JSON escaper: short forms, \u00XX for other controls, HTML-safe on demand. */
static void json_string_escapes(void **state)
{
	static const char in[] = "a\"b\\c\n\t\x01</script>&é";
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	(void)state;
	fp = open_memstream(&buf, &len);
	assert_non_null(fp);
	assert_int_equal(tally_json_string(fp, in, 0), 0);
	fputc(' ', fp);
	assert_int_equal(tally_json_string(fp, in, TALLY_JSON_HTML), 0);
	fputc(' ', fp);
	assert_int_equal(tally_json_string(fp, NULL, 0), 0);
	assert_int_equal(fclose(fp), 0);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\n\\t\\u0001</script>&é\" "
				 "\"a\\\"b\\\\c\\n\\t\\u0001\\u003c/script\\u003e\\u0026é\" \"\"");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pprof_of_callchain),
		cmocka_unit_test(pprof_of_several_events),
		cmocka_unit_test(json_of_callchain),
		cmocka_unit_test(json_pid_of_exiting_tasks),
		cmocka_unit_test(json_string_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
