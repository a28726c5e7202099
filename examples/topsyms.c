/*
 * topsyms: the ten symbols with the most samples in a perf.data, from libtally's reader
 * (tally/data.h) and session (tally/session.h). A small `perf report --sort sym`.
 *
 *   topsyms [FILE]        (default perf.data; "-" reads a pipe stream from stdin)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/tally.h>

struct row {
	const struct tally_symbol *sym;		/* NULL: [unknown] */
	const struct tally_dso *dso;
	uint64_t samples;
};

struct state {
	struct tally_data *data;
	struct tally_session *session;
	struct row *rows;
	size_t nr, cap;
	uint64_t total;
};

static int add(struct state *st, const struct tally_addr_loc *loc)
{
	for (size_t i = 0; i < st->nr; i++) {
		if (st->rows[i].sym == loc->sym && st->rows[i].dso == loc->dso) {
			st->rows[i].samples++;
			return 0;
		}
	}
	if (st->nr == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		struct row *r = realloc(st->rows, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		st->rows = r;
		st->cap = cap;
	}
	st->rows[st->nr++] = (struct row){ loc->sym, loc->dso, 1 };
	return 0;
}

/* every record, in time order: side-band records build the session, samples count */
static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct state *st = arg;
	const struct tally_data_event *ev;
	struct tally_sample s;
	struct tally_addr_loc loc;

	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(st->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	ev = tally_data__event(st->data, ctx->evidx >= 0 ? (size_t)ctx->evidx : 0);
	if (!ev || tally_sample__parse(&ev->layout, hdr, &s))
		return 0;
	tally_session__resolve(st->session, (pid_t)s.pid, (pid_t)s.tid,
			       s.misc & PERF_RECORD_MISC_CPUMODE_MASK, s.ip, &loc);
	st->total++;
	return add(st, &loc);
}

static int by_samples(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "perf.data";
	struct state st = { 0 };
	struct tally_data_error err = { 0 };
	const void *ids;
	size_t len;
	int ret;

	ret = tally_data__open(&st.data, path, NULL, &err);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, err.msg[0] ? err.msg : strerror(-ret));
		return 1;
	}
	ret = tally_session__new(&st.session, NULL);
	/* the build-ids let the session find binaries and the recording kernel's symbols */
	if (!ret && tally_data__feature(st.data, TALLY_FEAT_BUILD_ID, &ids, &len) == 0)
		ret = tally_session__add_build_ids(st.session, ids, len);
	if (!ret)
		ret = tally_data__for_each(st.data, TALLY_DATA_ORDERED, on_record, &st, &err);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, err.msg[0] ? err.msg : strerror(-ret));
	} else {
		qsort(st.rows, st.nr, sizeof(*st.rows), by_samples);
		for (size_t i = 0; i < st.nr && i < 10; i++)
			printf("%6.2f%%  %-40s %s\n", 100.0 * (double)st.rows[i].samples / (double)st.total,
			       st.rows[i].sym ? st.rows[i].sym->name : "[unknown]",
			       st.rows[i].dso ? tally_dso__short_name(st.rows[i].dso) : "[unknown]");
		if (tally_session__kernel_symbols_problem(st.session))
			fprintf(stderr, "no kernel symbols: %s\n",
				tally_session__kernel_symbols_problem(st.session));
	}
	free(st.rows);
	tally_session__delete(st.session);
	tally_data__delete(st.data);
	return ret ? 1 : 0;
}
