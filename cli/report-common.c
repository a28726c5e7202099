/*
 * Helpers shared by report and script (see report-common.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <tally/format.h>

#include "cmd.h"
#include "report-common.h"

int report_open(struct tally_data **d, const char *path, bool force)
{
	struct tally_data_open_opts opts = { .force = force };
	struct tally_data_error err = { 0 };
	int ret = tally_data__open(d, path, &opts, &err);

	if (ret == 0)
		return 0;
	if (ret == -ENOENT && !err.msg[0])
		cli_error("%s: no such file (record one with 'tally record' or 'perf record')", path);
	else if (err.msg[0] && err.offset)
		cli_error("%s: file offset %#" PRIx64 ": %s", path, err.offset, err.msg);
	else if (err.msg[0])
		cli_error("%s: %s", path, err.msg);
	else
		cli_error("%s: cannot read: %s", path, strerror(-ret));
	return 1;
}

int report_session_new(struct tally_session **s, struct tally_data *d,
		       const struct tally_session_opts *opts)
{
	const void *buf = NULL;
	size_t len = 0;
	int ret = tally_session__new(s, opts);

	/* the dsos' build-ids, and the recording kernel's: where its symbols are */
	if (ret == 0 && tally_data__feature(d, TALLY_FEAT_BUILD_ID, &buf, &len) == 0)
		tally_session__add_build_ids(*s, buf, len);
	return ret;
}

#define MAX_DSO_NOTES 10

static int dso_note(void *arg, struct tally_dso *d)
{
	unsigned *n = arg;
	const char *why = tally_dso__problem(d);

	if (why && (*n)++ < MAX_DSO_NOTES)
		cli_warn("%s", why);
	return 0;
}

int report_buildid_session(struct tally_data **d, struct tally_session **s, const char *path,
			   bool force, bool *with_hits)
{
	struct tally_session_opts so = { .no_symbols = true };
	struct tally_data_error err = { 0 };
	const void *buf;
	size_t len;
	int ret;

	*s = NULL;
	if (report_open(d, path, force))
		return 1;
	if (tally_session__new(s, &so)) {
		cli_error("out of memory");
		goto fail;
	}
	if (!tally_data__feature(*d, TALLY_FEAT_BUILD_ID, &buf, &len) &&
	    tally_session__add_build_ids(*s, buf, len))
		cli_warn("%s: the BUILD_ID list is damaged; going on with what could be read", path);
	if (!with_hits)
		return 0;
	if (!tally_data__is_pipe(*d) && tally_data__has_feature(*d, TALLY_FEAT_AUXTRACE))
		*with_hits = false;
	if (!tally_data__has_feature(*d, TALLY_FEAT_BUILD_ID))
		*with_hits = true;
	if (!*with_hits && !tally_data__is_pipe(*d))
		return 0;
	ret = tally_session__read_hits(*s, *d, &err);
	if (ret >= 0)
		return 0;
	if (err.msg[0])
		cli_error("%s: file offset %#" PRIx64 ": %s", path, err.offset, err.msg);
	else
		cli_error("%s: reading failed: %s", path, strerror(-ret));
fail:
	tally_session__delete(*s);
	tally_data__delete(*d);
	*s = NULL;
	*d = NULL;
	return 1;
}

int report_walk_end(struct tally_data *d, const char *input, int ret,
		    const struct tally_data_error *derr, const char *done)
{
	if (ret < 0) {
		if (derr->msg[0])
			cli_error("%s: file offset %#" PRIx64 ": %s", input, derr->offset, derr->msg);
		else
			cli_error("%s: reading failed: %s", input, strerror(-ret));
		return 1;
	}
	if (tally_data__truncated(d))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; "
			 "%s the complete records before it", input, tally_data__truncated(d), done);
	if (tally_data__nr_unknown_records(d))
		cli_warn("%s: skipped %" PRIu64 " record(s) of unknown type (a newer perf?)",
			 input, tally_data__nr_unknown_records(d));
	return 0;
}

uint64_t record_lost_samples(const struct perf_event_header *hdr)
{
	uint64_t lost = 0;

	if (hdr->type == PERF_RECORD_LOST_SAMPLES && hdr->size >= 16)
		memcpy(&lost, hdr + 1, sizeof(lost));
	return lost;
}

void report_warn_lost(const struct lost_counts *c, bool chunks)
{
	uint64_t taken = c->nr_samples + c->lost_samples;

	if (chunks && c->nr_lost_records)
		fprintf(stderr, "Warning:\nProcessed %" PRIu64 " events and lost %" PRIu64
			" chunks!\n\nCheck IO/CPU overload!\n\n", c->nr_records, c->nr_lost_records);
	/* perf: a drop rate over 5% of the samples taken or lost */
	if (taken && (double)c->lost_samples / (double)taken > 0.05)
		fprintf(stderr, "Warning:\nProcessed %" PRIu64 " samples and lost %3.2f%%!\n\n",
			taken, 100.0 * (double)c->lost_samples / (double)taken);
}

void report_kernel_symbols_note(struct tally_session *s)
{
	const char *why = s ? tally_session__kernel_symbols_problem(s) : NULL;
	unsigned n = 0;

	if (why)
		cli_warn("no kernel symbols: %s", why);
	why = s ? tally_session__kernel_symbols_note(s) : NULL;
	if (why)
		cli_warn("%s", why);
	if (s)
		tally_session__for_each_dso(s, dso_note, &n);
	if (n > MAX_DSO_NOTES)
		cli_warn("%u more binaries went without symbols for the same kind of reason",
			 n - MAX_DSO_NOTES);
}

unsigned sysctl_max_stack(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");
	unsigned v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 127;
}

char **strlist_parse(const char *s, size_t *nr)
{
	size_t n = 1, i = 0;
	char **l, *copy, *tok, *save = NULL;

	for (const char *p = s; *p; p++)
		n += *p == ',';
	l = calloc(n + 1, sizeof(*l));
	copy = strdup(s);
	if (!l || !copy) {
		free(l);
		free(copy);
		return NULL;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		l[i] = strdup(tok);
		if (!l[i]) {
			free(copy);
			strlist_free(l);
			return NULL;
		}
		i++;
	}
	free(copy);
	if (nr)
		*nr = i;
	return l;
}

size_t strlist_len(char *const *l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

void strlist_free(char **l)
{
	if (!l)
		return;
	for (size_t i = 0; l[i]; i++)
		free(l[i]);
	free(l);
}

bool strlist_has(char *const *l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

/* "1,2,3" (parsed by strlist_parse) as numbers, as perf reads them. */
static int pid_list(char *const *l, pid_t **out, size_t *nr)
{
	size_t n = strlist_len(l);

	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (pid_t)strtol(l[i], NULL, 10);
	*nr = n;
	return 0;
}

int sample_filter_make(const struct sample_filter_opts *o, struct tally_hist_filter *f)
{
	f->comms = (const char *const *)o->comms;
	f->dsos = (const char *const *)o->dsos;
	f->syms = (const char *const *)o->syms;
	f->cpus = o->cpus;
	if (o->pids && pid_list(o->pids, (pid_t **)&f->pids, &f->nr_pids))
		return -ENOMEM;
	if (o->tids && pid_list(o->tids, (pid_t **)&f->tids, &f->nr_tids))
		return -ENOMEM;
	return 0;
}

void sample_filter_free(struct tally_hist_filter *f)
{
	free((pid_t *)f->pids);
	free((pid_t *)f->tids);
	f->pids = f->tids = NULL;
}

void sample_filter_opts__exit(struct sample_filter_opts *o)
{
	strlist_free(o->comms);
	strlist_free(o->dsos);
	strlist_free(o->syms);
	strlist_free(o->pids);
	strlist_free(o->tids);
	tally_cpumap__delete(o->cpus);
	memset(o, 0, sizeof(*o));
}

/* "sec[.fraction]" as perf reads it (up to 9 fraction digits, nanoseconds); "" is 0. */
static int time_of(const char *s, size_t n, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0;
	size_t i = 0, digits = 0;

	*ns = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
			if (digits < 9)
				frac = frac * 10 + (uint64_t)(s[i] - '0');
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (i != n || sec > UINT64_MAX / 1000000000ull)
		return -1;
	*ns = sec * 1000000000ull + frac;
	return 0;
}

int parse_time_span(const char *s, uint64_t *start, uint64_t *end)
{
	const char *comma = strchr(s, ',');

	if (strchr(s, '%') || strchr(s, ' ') || (comma && strchr(comma + 1, ','))) {
		cli_error("--time '%s': percent slices and several ranges are not implemented in "
			  "tally; give one START,STOP in seconds (e.g. 5465.17,5465.2)", s);
		return -1;
	}
	if (!comma || time_of(s, (size_t)(comma - s), start) ||
	    time_of(comma + 1, strlen(comma + 1), end) || (*end && *start > *end)) {
		fprintf(stderr, "Invalid time string\n");	/* perf's words */
		return -1;
	}
	return 0;
}

static int evswitch_find(struct tally_data *d, const char *name, const char *opt)
{
	for (size_t i = 0; i < tally_data__nr_events(d); i++) {
		const struct tally_data_event *ev = tally_data__event(d, i);

		if (ev->name && !strcmp(ev->name, name))
			return (int)i;
	}
	cli_error("%s: no event '%s' in the file (use 'tally evlist' to see its events)", opt,
		  name);
	return -1;
}

void evswitch_set(struct evswitch *sw, int on, int off, bool show)
{
	*sw = (struct evswitch){ .on = on, .off = off, .show = show, .discarding = on >= 0 };
}

int evswitch_init(struct evswitch *sw, struct tally_data *d, const char *on, const char *off,
		  bool show)
{
	int ion = -1, ioff = -1;

	if (on && (ion = evswitch_find(d, on, "--switch-on")) < 0)
		return 1;
	if (off && (ioff = evswitch_find(d, off, "--switch-off")) < 0)
		return 1;
	evswitch_set(sw, ion, ioff, show);
	return 0;
}

bool evswitch_discard(struct evswitch *sw, int evidx)
{
	if (sw->on >= 0 && sw->discarding) {
		if (evidx != sw->on)
			return true;
		sw->discarding = false;
		return !sw->show;
	}
	if (sw->off >= 0 && !sw->discarding && evidx == sw->off) {
		sw->discarding = true;
		return !sw->show;
	}
	return false;
}

/* Past a list of perf strings (u32 count, then each u32 length and its bytes) at *off of
 * buf[len]: 0, or -1 when it does not fit. */
static int skip_strings(const uint8_t *buf, size_t len, size_t *off)
{
	uint32_t n, l;

	if (*off + 4 > len)
		return -1;
	memcpy(&n, buf + *off, 4);
	*off += 4;
	for (uint32_t i = 0; i < n; i++) {
		if (*off + 4 > len)
			return -1;
		memcpy(&l, buf + *off, 4);
		if (l > len - *off - 4)
			return -1;
		*off += 4 + l;
	}
	return 0;
}

int32_t *report_cpu_sockets(struct tally_data *d, size_t *nr)
{
	const void *topo, *cpus;
	size_t tlen, clen, off = 0;
	uint32_t n[2];
	int32_t *sock;

	*nr = 0;
	if (tally_data__feature(d, TALLY_FEAT_NRCPUS, &cpus, &clen) || clen < 8 ||
	    tally_data__feature(d, TALLY_FEAT_CPU_TOPOLOGY, &topo, &tlen))
		return NULL;
	memcpy(n, cpus, sizeof(n));	/* n[0]: the available cpus */
	if (skip_strings(topo, tlen, &off) || skip_strings(topo, tlen, &off) ||
	    (tlen - off) / 8 < n[0])
		return NULL;
	sock = malloc((n[0] ? n[0] : 1) * sizeof(*sock));
	if (!sock)
		return NULL;
	for (uint32_t i = 0; i < n[0]; i++)	/* {core, socket} per cpu */
		memcpy(&sock[i], (const uint8_t *)topo + off + 8 * i + 4, 4);
	*nr = n[0];
	return sock;
}

int cli_check_regex(const char *opt, const char *arg)
{
	regex_t re;
	int e = regcomp(&re, arg, REG_EXTENDED | REG_NOSUB);

	if (e) {
		char why[256];

		regerror(e, &re, why, sizeof(why));
		cli_error("%s: invalid regex '%s': %s", opt, arg, why);
		return -1;
	}
	regfree(&re);
	return 0;
}
