/*
 * topsyms: the ten symbols with the most samples in a perf.data, on libtally's reader
 * (tally/data.h), session (tally/session.h) and histograms (tally/hist.h): a small
 * `perf report --sort sym`.
 *
 *   topsyms [FILE]        (default perf.data; "-" reads a pipe stream from stdin)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tally/tally.h>

struct state {
	struct tally_data *data;
	struct tally_session *session;
	struct tally_hists *hists;
};

/* every record, in time order: side-band records build the session, samples count */
static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct state *st = arg;
	size_t evidx = ctx->evidx >= 0 ? (size_t)ctx->evidx : 0;
	const struct tally_data_event *ev = tally_data__event(st->data, evidx);
	struct tally_sample s;

	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(st->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	if (!ev || tally_sample__parse(&ev->layout, hdr, &s))
		return 0;
	return tally_hists__add_sample(st->hists, evidx, &s, 1);	/* count samples */
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "perf.data";
	static const enum tally_hist_col by_sym[] = { TALLY_HIST_SYM };
	struct tally_hists_opts opts = { .keys = by_sym, .nr_keys = 1 };
	struct tally_data_error err = { 0 };
	struct state st = { 0 };
	struct tally_hist *h = NULL;
	const void *ids;
	size_t len, nr;
	int ret = tally_data__open(&st.data, path, NULL, &err);

	if (!ret)
		ret = tally_session__new(&st.session, NULL);
	/* the build-ids let the session find binaries and the recording kernel's symbols */
	if (!ret && tally_data__feature(st.data, TALLY_FEAT_BUILD_ID, &ids, &len) == 0)
		ret = tally_session__add_build_ids(st.session, ids, len);
	if (!ret)
		ret = tally_hists__new(&st.hists, st.session, tally_data__nr_events(st.data), &opts);
	if (!ret)
		ret = tally_data__for_each(st.data, TALLY_DATA_ORDERED, on_record, &st, &err);
	if (!ret && (h = tally_hists__hist(st.hists, 0)) && !(ret = tally_hist__sort(h, false))) {
		struct tally_hist_entry *const *e = tally_hist__sorted(h, &nr);
		uint64_t total = tally_hist__totals(h)->period;

		for (size_t i = 0; i < nr && i < 10; i++) {
			printf("%6.2f%%  ", 100.0 * (double)e[i]->period / (double)total);
			if (e[i]->sym)
				printf("%-40s", e[i]->sym->name);
			else	/* unresolved: the address, as report shows it */
				printf("%#018" PRIx64 "%22s", e[i]->ip, "");
			printf(" %s\n", e[i]->dso_name);
		}
		if (tally_session__kernel_symbols_problem(st.session))
			fprintf(stderr, "no kernel symbols: %s\n",
				tally_session__kernel_symbols_problem(st.session));
	}
	if (ret)
		fprintf(stderr, "%s: %s\n", path, err.msg[0] ? err.msg : strerror(-ret));
	tally_hists__delete(st.hists);
	tally_session__delete(st.session);
	tally_data__delete(st.data);
	return ret ? 1 : 0;
}
