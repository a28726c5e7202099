/*
 * tally inject: read a perf.data stream, add to it, write it out again, as perf inject.
 *
 *   -i FILE / -o FILE   input and output ("-", the default, is standard input/output);
 *                       a file or a pipe stream either way: a pipe becomes a file, a
 *                       file a pipe
 *   -b, --build-ids     a HEADER_BUILD_ID record before the first sample that hits each
 *                       binary (its id read from the file when the recording has none),
 *                       so that a pipe recording's readers can check the binaries
 *   --buildid-all       the same for every binary mapped, before its MMAP
 *   -s, --sched-stat    each sched:sched_stat_* sample becomes the task's last
 *                       sched:sched_switch sample, with the stat's period and time
 *                       (where and how long tasks slept); switch and exit samples go
 *   -j, --jit           replace each jit-PID.dump marker map with one MMAP2 per jitted
 *                       function, pointing at an ELF file written beside the dump
 *                       (jitted-PID-INDEX.so); anonymous maps of that process go
 *   -f, --force         read a file another user owns
 *
 * The records pass through as they are, in file order; with -s and --jit in time order
 * (their rewriting needs it), without FINISHED_ROUND records (the jitted maps of a whole
 * dump go out at its marker, so no round is whole; perf drops them too). A file output's
 * BUILD_ID lists the binaries samples hit whose ids are known or readable (and the
 * vdso), as perf writes it. The header features of the input are kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <tally/buildid.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/jitdump.h>
#include <tally/session.h>
#include <tally/synth.h>
#include <tally/writer.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"
#include "script-trace.h"

struct inject_opts {
	const char *input, *output;
	bool build_ids, buildid_all, sched_stat, jit, force;
};

#define CLI_OPTS struct inject_opts
static const struct cli_opt inject_options[] = {
	OPT_BOOL('b', "build-ids", build_ids, "Inject build-ids into the output stream"),
	OPT_BOOL(0, "buildid-all", buildid_all, "Inject build-ids of all DSOs into the output stream"),
	OPT_STRING('i', "input", input, "file", "input file name"),
	OPT_STRING('o', "output", output, "file", "output file name"),
	OPT_BOOL('s', "sched-stat", sched_stat,
		 "Merge sched-stat and sched-switch for getting events where and how long tasks slept"),
	OPT_BOOL('j', "jit", jit, "merge jitdump files into perf.data file"),
	OPT_VERBOSE("be more verbose (show build ids, etc)"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_END(),
};

static const char *const inject_usage[] = { "inject [<options>]", NULL };

/* What -s does with an event's samples. */
enum ev_role { EV_PLAIN, EV_SWITCH, EV_EXIT, EV_STAT };

struct saved_switch {
	uint32_t tid;
	uint8_t *rec;
};

struct inject {
	const struct inject_opts *o;
	struct tally_data *d;
	struct tally_writer *w;
	struct tally_session *s;	/* maps and dsos, no symbols */
	const char *out_path;
	bool ordered, pipe_out;
	enum ev_role *role;
	struct script_trace *trace;	/* -s: tracepoint fields */
	struct saved_switch *sw;	/* -s: last switch sample per task */
	size_t nr_sw, cap_sw;
	pid_t *jit_pids;		/* --jit: processes whose dump was merged */
	size_t nr_jit;
	struct { uint64_t shift, mult, zero; bool have; } tc;	/* TIME_CONV */
	uint64_t jitted;
};

static int out(struct inject *in, const void *rec, size_t size)
{
	return tally_writer__write(in->w, rec, size);
}

/* ---- build-ids ----------------------------------------------------------- */

/* A HEADER_BUILD_ID record for dso D (perf's: the sample's cpumode as misc, pid -1,
 * no size flag, the name padded to 64), written now and given to the session so the
 * dso has its id for the BUILD_ID feature. Binaries only: perf reads the id from the
 * file, which the kernel and the vdso are not. */
static int inject_build_id(struct inject *in, struct tally_dso *d, uint8_t cpumode)
{
	const char *name = tally_dso__long_name(d);
	struct tally_build_id id = *tally_dso__bid(d);
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	size_t nlen = strlen(name) + 1, pad;
	struct perf_event_header h;
	uint8_t *rec;
	int32_t pid = -1;
	int err;

	if (name[0] != '/' || !strncmp(name, "/tmp/perf-", 10) || !strncmp(name, "/memfd:", 7))
		return 0;
	if (!id.size && tally_build_id__from_elf(&id, name)) {
		if (verbose)
			fprintf(stderr, "no build_id found for %s\n", name);
		return 0;
	}
	pad = (nlen + TALLY_NAME_ALIGN - 1) / TALLY_NAME_ALIGN * TALLY_NAME_ALIGN;
	if (TALLY_BUILD_ID_RECORD_HEADER + pad > UINT16_MAX)
		return 0;
	rec = calloc(1, TALLY_BUILD_ID_RECORD_HEADER + pad);
	if (!rec)
		return -ENOMEM;
	h.type = TALLY_RECORD_HEADER_BUILD_ID;
	h.misc = cpumode;
	h.size = (uint16_t)(TALLY_BUILD_ID_RECORD_HEADER + pad);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, id.data, id.size);
	memcpy(rec + TALLY_BUILD_ID_RECORD_HEADER, name, nlen);
	if (verbose)
		fprintf(stderr, "injecting build-id %s %s\n", tally_build_id__hex(&id, hex), name);
	tally_session__process(in->s, (const struct perf_event_header *)rec);
	err = out(in, rec, h.size);
	free(rec);
	return err;
}

struct feature_ctx {
	struct inject *in;
	int err;
};

/* The BUILD_ID feature of a file output: the dsos hit (and the vdso), with the id the
 * recording gave or one read from the file. */
static int feature_dso(void *arg, struct tally_dso *d)
{
	struct feature_ctx *f = arg;
	const char *name = tally_dso__long_name(d);
	struct tally_build_id id = *tally_dso__bid(d);

	if (!tally_dso__hit(d) && strcmp(name, "[vdso]"))
		return 0;
	if (!id.size && (name[0] != '/' || tally_build_id__from_elf(&id, name)))
		return 0;
	f->err = tally_writer__add_build_id(f->in->w, -1, id.data, id.size, name,
					    tally_dso__is_kernel(d));
	return f->err;
}

/* ---- --sched-stat -------------------------------------------------------- */

static int setup_sched_stat(struct inject *in)
{
	size_t n = tally_data__nr_events(in->d);
	int err;

	in->role = calloc(n ? n : 1, sizeof(*in->role));
	if (!in->role)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct tally_data_event *ev = tally_data__event(in->d, i);

		if (!strcmp(ev->name, "sched:sched_switch")) {
			if (!(ev->attr.sample_type & PERF_SAMPLE_TID)) {
				cli_error("inject -s: samples of sched:sched_switch have no TID: "
					  "record them with it (perf record's default)");
				return -EINVAL;
			}
			in->role[i] = EV_SWITCH;
		} else if (!strcmp(ev->name, "sched:sched_process_exit")) {
			in->role[i] = EV_EXIT;
		} else if (!strncmp(ev->name, "sched:sched_stat_", 17)) {
			in->role[i] = EV_STAT;
		}
	}
	err = script_trace__new(&in->trace, in->d);
	if (err == -ENOENT)
		return 0;	/* no tracepoints: nothing to merge */
	if (err)
		cli_error("inject -s: the file's tracepoint formats (TRACING_DATA) are damaged");
	return err;
}

static struct saved_switch *find_switch(struct inject *in, uint32_t tid)
{
	for (size_t i = 0; i < in->nr_sw; i++)
		if (in->sw[i].tid == tid)
			return &in->sw[i];
	return NULL;
}

static void drop_switch(struct inject *in, uint32_t tid)
{
	struct saved_switch *s = find_switch(in, tid);

	if (s) {
		free(s->rec);
		*s = in->sw[--in->nr_sw];
	}
}

/* Offsets in a sample of TYPE of its time and period (-1: not there). */
static void time_period_offsets(uint64_t t, int *time_off, int *period_off)
{
	int pos = 8;

	pos += (t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	pos += (t & PERF_SAMPLE_IP) ? 8 : 0;
	pos += (t & PERF_SAMPLE_TID) ? 8 : 0;
	*time_off = (t & PERF_SAMPLE_TIME) ? pos : -1;
	pos += (t & PERF_SAMPLE_TIME) ? 8 : 0;
	pos += (t & PERF_SAMPLE_ADDR) ? 8 : 0;
	pos += (t & PERF_SAMPLE_ID) ? 8 : 0;
	pos += (t & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	pos += (t & PERF_SAMPLE_CPU) ? 8 : 0;
	*period_off = (t & PERF_SAMPLE_PERIOD) ? pos : -1;
}

static int sched_stat_sample(struct inject *in, const struct perf_event_header *h,
			     const struct tally_sample *smp, enum ev_role role)
{
	struct saved_switch *s;
	struct tally_sample sw;
	const struct tally_data_event *ev;
	int time_off, period_off, evidx;
	uint64_t pid;
	uint8_t *copy;
	int err;

	switch (role) {
	case EV_SWITCH:
		drop_switch(in, smp->tid);
		if (in->nr_sw == in->cap_sw) {
			size_t cap = in->cap_sw ? 2 * in->cap_sw : 64;
			void *v = realloc(in->sw, cap * sizeof(*in->sw));

			if (!v)
				return -ENOMEM;
			in->sw = v;
			in->cap_sw = cap;
		}
		copy = malloc(h->size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, h, h->size);
		in->sw[in->nr_sw++] = (struct saved_switch){ smp->tid, copy };
		return 0;
	case EV_EXIT:
		drop_switch(in, smp->tid);
		return 0;
	default:
		break;
	}
	if (script_trace__field(in->trace, smp->raw, smp->raw_size, "pid", &pid))
		return 0;
	s = find_switch(in, (uint32_t)pid);
	if (!s)
		return 0;
	/* the task's switch-out sample, now carrying the stat's time and period */
	h = (const struct perf_event_header *)s->rec;
	evidx = tally_data__event_of(in->d, h);
	ev = evidx >= 0 ? tally_data__event(in->d, (size_t)evidx) : NULL;
	if (!ev || tally_sample__parse(&ev->layout, h, &sw))
		return 0;
	time_period_offsets(ev->attr.sample_type, &time_off, &period_off);
	if (time_off > 0)
		memcpy(s->rec + time_off, &smp->time, 8);
	if (period_off > 0)
		memcpy(s->rec + period_off, &smp->period, 8);
	tally_session__mark_hit(in->s, (pid_t)sw.pid, (pid_t)sw.tid,
				h->misc & PERF_RECORD_MISC_CPUMODE_MASK, sw.ip);
	err = out(in, s->rec, h->size);
	return err;
}

/* ---- --jit --------------------------------------------------------------- */

static bool jit_pid_done(const struct inject *in, pid_t pid)
{
	for (size_t i = 0; i < in->nr_jit; i++)
		if (in->jit_pids[i] == pid)
			return true;
	return false;
}

/* A jitdump timestamp as the recording's time. */
static uint64_t jit_time(const struct inject *in, uint64_t flags, uint64_t ts)
{
	uint64_t quot, rem;

	if (!(flags & TALLY_JITDUMP_FLAGS_ARCH_TIMESTAMP) || in->tc.shift >= 64)
		return ts;
	quot = ts >> in->tc.shift;
	rem = ts & ((1ULL << in->tc.shift) - 1);
	return in->tc.zero + quot * in->tc.mult + ((rem * in->tc.mult) >> in->tc.shift);
}

/* The MMAP2 perf synthesizes for jitted code: the ELF file at PATH mapped at START
 * (LEN bytes, its code at pgoff 0x80), the file's device, inode and mode, MAP_SHARED,
 * and a sample_id trailer with the task and the time, as event 0's sample_type lays it
 * out. */
static int jit_mmap2(struct inject *in, const char *path, uint32_t pid, uint32_t tid,
		     uint64_t start, uint64_t len, uint64_t time)
{
	const struct tally_data_event *ev0 = tally_data__event(in->d, 0);
	uint64_t st_type = ev0->attr.sample_type;
	size_t id_size = tally_synth__id_hdr_size(&ev0->attr);
	size_t nlen = (strlen(path) + 1 + 7) & ~(size_t)7;
	uint8_t rec[8 + 64 + PATH_MAX + 64];
	struct perf_event_header h = { PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 0 };
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
	} __attribute__((packed)) m;
	struct stat st;
	uint8_t *p;
	int err;

	if (stat(path, &st) || nlen > PATH_MAX)
		return -ENOENT;
	m = (typeof(m)){ pid, tid, start, len, TALLY_JIT_ELF_TEXT_OFFSET, major(st.st_dev),
			 minor(st.st_dev), st.st_ino, 1, st.st_mode, MAP_SHARED };
	h.size = (uint16_t)(sizeof(h) + sizeof(m) + nlen + id_size);
	memset(rec, 0, sizeof(rec));
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), &m, sizeof(m));
	memcpy(rec + sizeof(h) + sizeof(m), path, strlen(path));
	p = rec + sizeof(h) + sizeof(m) + nlen;
	if (ev0->attr.sample_id_all) {
		if (st_type & PERF_SAMPLE_TID) {
			memcpy(p, &pid, 4);
			memcpy(p + 4, &tid, 4);
			p += 8;
		}
		if (st_type & PERF_SAMPLE_TIME)
			memcpy(p, &time, 8);
	}
	tally_session__process(in->s, (const struct perf_event_header *)rec);
	/* the jitted file counts as hit: it goes into the BUILD_ID feature */
	tally_session__mark_hit(in->s, (pid_t)pid, (pid_t)tid, PERF_RECORD_MISC_USER, start);
	err = out(in, rec, h.size);
	if (!err)
		in->jitted++;
	return err;
}

/* perf's requirement: without architecture timestamps the recording's clock must be
 * the jitdump's, CLOCK_MONOTONIC (record -k monotonic). */
static bool monotonic_recording(const struct inject *in)
{
	for (size_t i = 0; i < tally_data__nr_events(in->d); i++) {
		const struct perf_event_attr *a = &tally_data__event(in->d, i)->attr;

		if (!a->use_clockid || a->clockid != CLOCK_MONOTONIC)
			return false;
	}
	return true;
}

/* Merge the jitdump named by a marker map of process PID. 1: merged (the marker goes),
 * 0: not a dump we can read (the marker stays), -1: error (message printed). */
static int jit_merge(struct inject *in, const char *marker, uint32_t pid)
{
	char dirbuf[PATH_MAX], elf[PATH_MAX + 64];
	struct tally_jitdump *j;
	struct tally_jit_record r;
	const char *dir;
	uint64_t flags;
	int ret, err = 0;

	ret = tally_jitdump__open(&j, marker);
	if (ret) {
		cli_warn("inject --jit: cannot read %s: %s", marker,
			 ret == -EINVAL ? "not a jitdump file of a known version" : strerror(-ret));
		return 0;
	}
	flags = tally_jitdump__flags(j);
	if (flags & TALLY_JITDUMP_FLAGS_ARCH_TIMESTAMP) {
		if (!in->tc.have) {
			cli_error("inject --jit: %s has architecture timestamps, and the recording "
				  "has no TIME_CONV record to convert them", marker);
			tally_jitdump__delete(j);
			return -1;
		}
	} else if (!monotonic_recording(in)) {
		cli_error("inject --jit: jitted code must be sampled with the jitdump's clock: "
			  "record with -k monotonic (perf record -k 1)");
		tally_jitdump__delete(j);
		return -1;
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", marker);
	dir = dirname(dirbuf);
	while (!err && (ret = tally_jitdump__next(j, &r)) > 0) {
		if (r.type != TALLY_JIT_CODE_LOAD && r.type != TALLY_JIT_CODE_MOVE)
			continue;
		snprintf(elf, sizeof(elf), "%s/jitted-%u-%" PRIu64 ".so", dir, r.pid, r.code_index);
		if (r.type == TALLY_JIT_CODE_LOAD) {
			err = tally_jitdump__write_elf(elf, &r, (uint16_t)tally_jitdump__elf_mach(j),
						       NULL);
			if (err) {
				cli_error("inject --jit: cannot write %s: %s", elf, strerror(-err));
				break;
			}
		} else if (access(elf, F_OK)) {
			continue;	/* a move of code never loaded: nothing to map */
		}
		err = jit_mmap2(in, elf, r.pid, r.tid, r.code_addr, r.code_size,
				jit_time(in, flags, r.timestamp));
		if (err && err != -ENOENT)
			break;
		err = 0;
	}
	if (ret < 0)
		cli_warn("inject --jit: %s is damaged after its last good record; merged what came "
			 "before", marker);
	tally_jitdump__delete(j);
	if (err == -ENOMEM)
		cli_error("out of memory");
	else if (err && !in->pipe_out)
		cli_error("writing %s failed: %s", in->out_path, strerror(-err));
	if (err)
		return -1;
	if (!jit_pid_done(in, (pid_t)pid)) {
		pid_t *v = realloc(in->jit_pids, (in->nr_jit + 1) * sizeof(*v));

		if (!v)
			return -1;
		in->jit_pids = v;
		in->jit_pids[in->nr_jit++] = (pid_t)pid;
	}
	return 1;
}

/* ---- records ------------------------------------------------------------- */

static int on_mmap(struct inject *in, const struct perf_event_header *h)
{
	size_t name_off = h->type == PERF_RECORD_MMAP ? 40 : 72;
	char name[PATH_MAX];
	uint32_t pid, tid;
	uint64_t start;
	int err;

	if (h->size <= name_off)
		return out(in, h, h->size);
	memcpy(&pid, (const char *)h + 8, 4);
	memcpy(&tid, (const char *)h + 12, 4);
	memcpy(&start, (const char *)h + 16, 8);
	snprintf(name, sizeof(name), "%.*s", (int)(h->size - name_off), (const char *)h + name_off);
	if (in->o->jit) {
		if (tally_jitdump__is_marker(name, (pid_t)pid)) {
			int r = jit_merge(in, name, pid);

			if (r < 0)
				return -ECANCELED;
			if (r > 0)
				return 0;
		} else if (jit_pid_done(in, (pid_t)pid) &&
			   (!strncmp(name, "//anon", 6) || !strncmp(name, "[anon:", 6) ||
			    !strncmp(name, "/memfd:", 7))) {
			return 0;	/* the jitted code's anonymous memory: its maps replace it */
		}
	}
	tally_session__process(in->s, h);
	/* as perf 6.1: user-space maps (the kernel's is not a file) */
	if (in->o->buildid_all && !(h->misc & PERF_RECORD_MISC_MMAP_DATA) &&
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
		struct tally_dso *d = tally_session__mark_hit(in->s, (pid_t)pid, (pid_t)tid,
							      h->misc & PERF_RECORD_MISC_CPUMODE_MASK,
							      start);

		if (d) {
			err = inject_build_id(in, d, h->misc & PERF_RECORD_MISC_CPUMODE_MASK);
			if (err)
				return err;
		}
	}
	return out(in, h, h->size);
}

static int on_sample(struct inject *in, const struct perf_event_header *h, int evidx)
{
	const struct tally_data_event *ev = evidx >= 0 ? tally_data__event(in->d, (size_t)evidx) : NULL;
	uint8_t cpumode = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct tally_sample smp;
	struct tally_dso *first;
	int err;

	if (!ev || tally_sample__parse(&ev->layout, h, &smp))
		return out(in, h, h->size);
	if (in->o->sched_stat && in->role && in->role[evidx] != EV_PLAIN)
		return sched_stat_sample(in, h, &smp, in->role[evidx]);
	if (in->o->buildid_all)
		return out(in, h, h->size);	/* every map was marked already (perf's list) */
	first = tally_session__mark_hit(in->s, (pid_t)smp.pid, (pid_t)smp.tid, cpumode, smp.ip);
	if (first && in->o->build_ids) {
		err = inject_build_id(in, first, cpumode);
		if (err)
			return err;
	}
	return out(in, h, h->size);
}

static int on_record(void *arg, const struct perf_event_header *h, const struct tally_record_ctx *ctx)
{
	struct inject *in = arg;

	if (exiting)
		return -EINTR;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(in, h, ctx->evidx);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(in, h);
	case TALLY_RECORD_FINISHED_ROUND:
		return in->ordered ? 0 : out(in, h, h->size);
	case TALLY_RECORD_TIME_CONV:
		if (h->size >= 8 + 24) {
			memcpy(&in->tc.shift, (const char *)h + 8, 8);
			memcpy(&in->tc.mult, (const char *)h + 16, 8);
			memcpy(&in->tc.zero, (const char *)h + 24, 8);
			in->tc.have = true;
		}
		return out(in, h, h->size);
	default:
		tally_session__process(in->s, h);
		return out(in, h, h->size);
	}
}

/* ---- the output ---------------------------------------------------------- */

/* Features recomputed (BUILD_ID, EVENT_DESC from the events, COMPRESSED) or no longer
 * true of the rewritten data (AUXTRACE offsets, DIR_FORMAT) are not copied. */
static bool copy_feature(int f)
{
	return f != TALLY_FEAT_BUILD_ID && f != TALLY_FEAT_EVENT_DESC && f != TALLY_FEAT_COMPRESSED &&
	       f != TALLY_FEAT_AUXTRACE && f != TALLY_FEAT_DIR_FORMAT;
}

static int open_output(struct inject *in)
{
	struct tally_writer_opts wo = { .pipe = true };
	int err;

	/* standard output always carries a pipe stream, even into a file (as perf) */
	if (!strcmp(in->out_path, "-"))
		err = tally_writer__open_fd(&in->w, STDOUT_FILENO, &wo);
	else
		err = tally_writer__open(&in->w, in->out_path, NULL);
	if (err) {
		cli_error("cannot open %s for writing: %s", in->out_path, strerror(-err));
		return -1;
	}
	in->pipe_out = tally_writer__is_pipe(in->w);
	for (size_t i = 0; i < tally_data__nr_events(in->d); i++) {
		const struct tally_data_event *ev = tally_data__event(in->d, i);

		if (tally_writer__add_event(in->w, &ev->attr, ev->name, ev->ids, ev->nr_ids) < 0)
			goto nomem;
	}
	for (int f = 1; f < TALLY_FEAT_MAX; f++) {
		const void *buf;
		size_t len;

		if (copy_feature(f) && !tally_data__feature(in->d, f, &buf, &len) &&
		    tally_writer__set_feature(in->w, f, buf, len))
			goto nomem;
	}
	err = tally_writer__start(in->w);
	if (err) {
		cli_error("writing %s failed: %s", in->out_path, strerror(-err));
		return -1;
	}
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

static void inject_exit(struct inject *in)
{
	for (size_t i = 0; i < in->nr_sw; i++)
		free(in->sw[i].rec);
	free(in->sw);
	free(in->role);
	free(in->jit_pids);
	script_trace__delete(in->trace);
	tally_writer__delete(in->w);
	tally_session__delete(in->s);
	tally_data__delete(in->d);
}

static int inject_init(void *opts)
{
	struct inject_opts *o = opts;

	o->input = "-";
	o->output = "-";
	return 0;
}

static int inject_exec(void *opts, const struct cli_args *args)
{
	struct inject_opts o = *(struct inject_opts *)opts;
	struct tally_session_opts so = { .no_symbols = true };
	struct tally_data_error derr = { 0 };
	struct inject in = { .o = &o };
	int ret, status = 1;

	(void)args;
	if (o.build_ids && o.buildid_all)
		return cli_usage_error(&cmd_inject, "-b and --buildid-all: choose one");
	in.out_path = o.output;
	if (report_open(&in.d, o.input, o.force))
		return 1;
	if (!tally_data__nr_events(in.d)) {
		cli_error("%s: no events in the file", o.input);
		goto out;
	}
	if (tally_session__new(&in.s, &so)) {
		cli_error("out of memory");
		goto out;
	}
	{
		const void *buf;
		size_t len;

		if (!tally_data__feature(in.d, TALLY_FEAT_BUILD_ID, &buf, &len))
			tally_session__add_build_ids(in.s, buf, len);
	}
	if (o.sched_stat && setup_sched_stat(&in))
		goto out;
	in.ordered = o.sched_stat || o.jit;
	if (open_output(&in))
		goto out;
	ret = tally_data__for_each(in.d, in.ordered ? TALLY_DATA_ORDERED : 0, on_record, &in, &derr);
	if (ret == -ECANCELED)
		goto fail;	/* said already */
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		goto fail;
	}
	if (ret < 0 && derr.msg[0]) {
		cli_error("%s: file offset %#" PRIx64 ": %s", o.input, derr.offset, derr.msg);
		goto fail;
	}
	if (ret < 0) {
		if (ret != -EPIPE)
			cli_error("writing %s failed: %s", in.pipe_out ? "the output stream" : o.output,
				  strerror(-ret));
		goto fail;
	}
	if (tally_data__truncated(in.d))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; injected the "
			 "complete records before it", o.input, tally_data__truncated(in.d));
	if (!in.pipe_out) {
		struct feature_ctx f = { &in, 0 };

		tally_session__for_each_dso(in.s, feature_dso, &f);
		if (f.err) {
			cli_error("out of memory");
			goto fail;
		}
	}
	ret = tally_writer__finish(in.w);
	if (ret) {
		if (ret != -EPIPE)
			cli_error("writing %s failed: %s", in.pipe_out ? "the output stream" : o.output,
				  strerror(-ret));
		goto fail;
	}
	if (o.jit && verbose)
		fprintf(stderr, "injected %" PRIu64 " jitted code maps\n", in.jitted);
	status = 0;
	goto out;
fail:
	/* no output file that could pass for complete */
	if (in.w && !in.pipe_out)
		unlink(o.output);
out:
	inject_exit(&in);
	return status;
}

const struct cli_command cmd_inject = {
	.name = "inject",
	.summary = "Filter to augment the events stream with additional information",
	.usage = inject_usage,
	.opts = inject_options,
	.size = sizeof(struct inject_opts),
	.init = inject_init,
	.exec = inject_exec,
};
