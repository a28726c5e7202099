/*
 * tally flamegraph: a perf.data's call stacks as one self-contained, interactive HTML
 * page (or FlameGraph's folded text with --folded), and with --diff two files as a
 * differential flame graph, red where the new profile grew and blue where it shrank.
 *
 * The stacks are folded by the library (tally/flame.h); the page itself (cli/flamegraph/
 * page.html, page.css, page.js, embedded at build time) reads the folded tree from a
 * JSON block this command writes into it. Nothing is loaded from the network.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tally/convert.h>
#include <tally/flame.h>
#include <tally/sample-memo.h>

#include "cmd.h"
#include "options.h"
#include "out-file.h"
#include "sample-stacks.h"

/* the page, with @@TITLE@@ and @@DATA@@ where this command fills in (flamegraph-page.c,
 * generated from cli/flamegraph/ by embed.py) */
extern const char tally_flamegraph_page[];

struct flame_opts {
	struct stack_walk_opts in;
	const char *output;
	const char *title;
	const char *old_input;	/* --diff: the first of the two files */
	bool diff;
	bool folded;
	bool inverted, reverse;
	bool no_inline;
	bool no_normalize;
};

#define CLI_OPTS struct flame_opts
static const struct cli_opt flame_options[] = {
	OPT_STRING('i', "input", in.input, "file", "input file name (default perf.data, - for "
		   "stdin)"),
	OPT_STRING('o', "output", output, "file", "the page (default flamegraph.html, - for "
		   "stdout)"),
	OPT_STRING('e', "event", in.event, "name", "the event to draw (default: the first one "
		   "sampled)"),
	OPT_STRING(0, "pid", in.pids, "pid[,pid]", "only these processes"),
	OPT_STRING(0, "tid", in.tids, "tid[,tid]", "only these threads"),
	OPT_STRING(0, "comm", in.comms, "comm[,comm]", "only these commands"),
	OPT_STRING(0, "title", title, "text", "the page's title"),
	OPT_BOOL(0, "diff", diff, "differential graph of two files, OLD and NEW:\nred where NEW "
		 "grew, blue where it shrank"),
	OPT_BOOL(0, "no-normalize", no_normalize, "(--diff) compare raw weights; by default\n"
		 "OLD is scaled to NEW's total first"),
	OPT_BOOL(0, "inverted", inverted, "open as an icicle graph (the root at the top)"),
	OPT_BOOL(0, "reverse", reverse, "open with stacks reversed (callers above callees)"),
	OPT_BOOL(0, "no-inline", no_inline, "no frames for inlined functions"),
	OPT_BOOL(0, "folded", folded, "write FlameGraph's folded stacks (sample counts) instead"),
	OPT_BOOL('f', "force", in.force, "don't complain about file ownership"),
	OPT_STRING('k', "kallsyms", in.kallsyms, "file", "kernel symbols"),
	OPT_STRING(0, "symfs", in.symfs, "dir", "look for binaries under dir"),
	OPT_VERBOSE("be more verbose"),
	OPT_END(),
};
#undef CLI_OPTS

static const char *const flame_usage[] = {
	"flamegraph [<options>]",
	"flamegraph --diff [<options>] OLD NEW",
	NULL,
};

/* The options that go together, the two files of --diff. 0 or exit status 129. */
static int check_opts(struct flame_opts *o, const struct cli_args *args)
{
	if (o->diff) {
		if (o->in.input || args->argc != 2)
			return cli_usage_error(&cmd_flamegraph, "--diff: give the two files to "
					       "compare, OLD then NEW (tally flamegraph --diff "
					       "old.data new.data)");
		o->old_input = args->argv[0];
		o->in.input = args->argv[1];
		if (!strcmp(o->old_input, "-") && !strcmp(o->in.input, "-"))
			return cli_usage_error(&cmd_flamegraph, "--diff: only one of the two "
					       "files can be a pipe");
		return 0;
	}
	if (args->argc)
		return cli_usage_error(&cmd_flamegraph, "unexpected argument '%s' (use -i to name "
				       "the input file, --diff OLD NEW to compare two)",
				       args->argv[0]);
	if (o->no_normalize)
		return cli_usage_error(&cmd_flamegraph, "--no-normalize is for --diff");
	if (!o->in.input)
		o->in.input = "perf.data";
	return 0;
}

/* ---- folding ------------------------------------------------------------------------ */

struct folder {
	struct flame_opts *o;
	struct tally_flame *flame;
	unsigned series;
	struct stack_walk *w;
	struct tally_sample_memo *memo;	/* a sample's identity -> the node it folded to */
	struct tally_flame_frame *fv;
	size_t cap;
	char **names;			/* "[dso]" names made for unknown symbols */
	size_t nr_names, cap_names;
	int evidx;			/* the event drawn (-1: the first one sampled) */
	uint64_t skipped;		/* samples of other events */
	int skipped_ev;
};

/* Append a frame (its name lives as long as the session). */
static int push(struct folder *f, size_t *n, const char *name, unsigned kind)
{
	if (*n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 128;
		struct tally_flame_frame *v = realloc(f->fv, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->fv = v;
		f->cap = cap;
	}
	f->fv[(*n)++] = (struct tally_flame_frame){ .name = name, .kind = kind };
	return 0;
}

/* FlameGraph's name for a frame without a symbol: its dso's base name in brackets */
static const char *unknown_name(struct folder *f, const struct tally_addr_loc *l)
{
	const char *dso = l->dso ? tally_dso__name(l->dso) : NULL;
	const char *base;
	char *s;

	if (!dso)
		return "[unknown]";
	if (dso[0] == '[')
		return dso;
	base = strrchr(dso, '/');
	base = base ? base + 1 : dso;
	if (asprintf(&s, "[%s]", base) < 0)
		return NULL;
	if (f->nr_names == f->cap_names) {
		size_t cap = f->cap_names ? f->cap_names * 2 : 16;
		char **v = realloc(f->names, cap * sizeof(*v));

		if (!v) {
			free(s);
			return NULL;
		}
		f->names = v;
		f->cap_names = cap;
	}
	f->names[f->nr_names++] = s;
	return s;
}

/* The sample's frames, innermost first, then its process; folded. */
static int fold_frames(struct folder *f, const struct tally_convert_sample *s, uint32_t *leaf)
{
	size_t n = 0;
	int err;

	for (size_t i = 0; i < s->nr_frames; i++) {
		const struct tally_addr_loc *l = &s->frames[i];
		const char *name = l->sym && l->sym->name ? l->sym->name : unknown_name(f, l);

		if (!name)
			return -ENOMEM;
		/* the session gives a frame per function inlined at an address (innermost
		 * first), their names kept as long as it lives */
		if (l->inlined) {
			if (push(f, &n, l->inlined, TALLY_FRAME_INLINED))
				return -ENOMEM;
		} else if (push(f, &n, name, tally_addr_loc__kind(l))) {
			return -ENOMEM;
		}
	}
	if (push(f, &n, s->thread ? tally_thread__comm(s->thread) : "[unknown]",
		 TALLY_FLAME_PROCESS))
		return -ENOMEM;
	err = tally_flame__add(f->flame, f->series, f->fv, n, s->period, leaf);
	return err;
}

static int on_sample(void *arg, const struct tally_convert_sample *s)
{
	struct folder *f = arg;
	const struct tally_sample *smp = s->smp;
	struct tally_sample_key key = {
		.pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid, .cpu = -1,
		.evidx = (uint16_t)s->evidx, .cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK,
		.ip = smp->ip,
	};
	uint64_t *e;
	size_t nw;
	uint64_t hash;
	uint32_t leaf;
	int err;

	if (f->evidx < 0)
		f->evidx = s->evidx;	/* FlameGraph's rule: the first event seen */
	if (s->evidx != f->evidx) {
		f->skipped++;
		f->skipped_ev = s->evidx;
		return 0;
	}
	/* as perf script's text folds: a damaged chain (perf prints none) is no stack */
	if (s->chain_damaged)
		return 0;
	/* the memo knows a sample by its recorded chain, which a dwarf sample's user
	 * frames are not in */
	if (tally_sample__has_user_stack(smp))
		return fold_frames(f, s, &leaf);
	if (s->chain) {
		key.chain = smp->callchain;
		key.nr_chain = (size_t)smp->callchain_nr;
	}
	e = tally_sample_memo__find(f->memo, f->w->session, &key, &hash, &nw);
	if (e)
		return tally_flame__add_to(f->flame, f->series, (uint32_t)*e, s->period);
	err = fold_frames(f, s, &leaf);
	if (err)
		return err;
	e = tally_sample_memo__add(f->memo, f->w->session, &key, hash, 1);
	if (e)
		*e = leaf;
	return 0;
}

static void folder_exit(struct folder *f)
{
	tally_sample_memo__delete(f->memo);
	free(f->fv);
	for (size_t i = 0; i < f->nr_names; i++)
		free(f->names[i]);
	free(f->names);
}

/* Fold one file into series; fills *event with the event drawn (its name). */
static int fold_file(struct flame_opts *o, struct tally_flame *flame, unsigned series,
		     const char *input, char *event, size_t elen)
{
	struct folder f = { .o = o, .flame = flame, .series = series, .evidx = -1 };
	struct stack_walk_opts wo = o->in;
	struct stack_walk w;
	int ret, status = 1;

	wo.input = input;
	if (stack_walk__open(&w, &wo))
		goto out;
	f.w = &w;
	if (w.evidx >= 0)
		f.evidx = w.evidx;
	/* inlined functions at every user frame (a recorded chain's too), from the DWARF,
	 * as perf names them */
	tally_session__set_inline(w.session, o->no_inline ? TALLY_INLINE_NONE : TALLY_INLINE_ALL);
	if (!(f.memo = tally_sample_memo__new(0, 0))) {
		cli_error("out of memory");
		goto out;
	}
	ret = stack_walk__run(&w, on_sample, &f);
	if (ret < 0)
		cli_error("out of memory");
	if (ret)
		goto out;
	if (f.skipped) {
		const char *other = tally_data__event(w.data, (size_t)f.skipped_ev)->name;

		cli_warn("%s: left out %" PRIu64 " samples of other events (e.g. '%s'): a flame "
			 "graph draws one event, choose it with -e", input, f.skipped,
			 other ? other : "?");
	}
	if (!w.nr_samples)
		cli_warn("%s has no samples%s", input,
			 o->in.pids || o->in.tids || o->in.comms ? " that pass the filters" : "");
	{
		const char *name = f.evidx >= 0 ? tally_data__event(w.data, (size_t)f.evidx)->name
					       : NULL;

		snprintf(event, elen, "%s", name ? name : "");
	}
	status = 0;
out:
	folder_exit(&f);
	stack_walk__close(&w);
	return status;
}

/* ---- the page ----------------------------------------------------------------------- */

/* s as HTML text */
static void html_text(FILE *fp, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", fp);
			break;
		case '>':
			fputs("&gt;", fp);
			break;
		case '&':
			fputs("&amp;", fp);
			break;
		case '"':
			fputs("&quot;", fp);
			break;
		default:
			fputc(*s, fp);
		}
	}
}

struct page_nodes {
	FILE *fp;
	bool diff;
	bool first;
	/* names by the flame's interning: the walk's name pointers are stable and
	 * repeat, so a node refers to its name by a number */
	const char **names;
	size_t nr_names, cap;
	struct { const char *p; uint32_t id; } *slots;
	size_t nr_slots;
};

static int64_t name_id(struct page_nodes *pn, const char *name)
{
	size_t mask, i;

	if ((pn->nr_names + 1) * 2 > pn->nr_slots) {
		size_t n = pn->nr_slots ? pn->nr_slots * 2 : 4096;
		void *v = calloc(n, sizeof(*pn->slots));

		if (!v)
			return -ENOMEM;
		free(pn->slots);
		pn->slots = v;
		pn->nr_slots = n;
		for (size_t k = 0; k < pn->nr_names; k++) {
			for (i = ((uintptr_t)pn->names[k] >> 3) * 0x9e3779b97f4a7c15ull & (n - 1);
			     pn->slots[i].p; i = (i + 1) & (n - 1))
				;
			pn->slots[i].p = pn->names[k];
			pn->slots[i].id = (uint32_t)k;
		}
	}
	mask = pn->nr_slots - 1;
	for (i = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ull & mask; pn->slots[i].p;
	     i = (i + 1) & mask)
		if (pn->slots[i].p == name)
			return pn->slots[i].id;
	if (pn->nr_names == pn->cap) {
		size_t cap = pn->cap ? pn->cap * 2 : 4096;
		const char **v = realloc(pn->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pn->names = v;
		pn->cap = cap;
	}
	pn->slots[i].p = name;
	pn->slots[i].id = (uint32_t)pn->nr_names;
	pn->names[pn->nr_names] = name;
	return (int64_t)pn->nr_names++;
}

/* nodes: name, kind, depth, value, samples[, old value, old samples] per node */
static int page_node(void *arg, const struct tally_flame_node *n)
{
	struct page_nodes *pn = arg;
	int64_t id = name_id(pn, n->name);
	unsigned s = pn->diff ? 1 : 0;

	if (id < 0)
		return -ENOMEM;
	fprintf(pn->fp, "%s%" PRId64 ",%u,%u,%" PRIu64 ",%" PRIu64, pn->first ? "" : ",", id,
		n->kind, n->depth, n->value[s], n->samples[s]);
	if (pn->diff)
		fprintf(pn->fp, ",%" PRIu64 ",%" PRIu64, n->value[0], n->samples[0]);
	pn->first = false;
	return 0;
}

static int write_data(FILE *fp, struct flame_opts *o, struct tally_flame *flame,
		      const char *event, const char *subtitle)
{
	struct page_nodes pn = { .fp = fp, .diff = o->diff, .first = true };
	static const char *const kinds[TALLY_FLAME_NR_KINDS] = {
		[TALLY_FRAME_USER] = "user", [TALLY_FRAME_KERNEL] = "kernel",
		[TALLY_FRAME_INLINED] = "inlined", [TALLY_FRAME_JIT] = "jit",
		[TALLY_FLAME_PROCESS] = "process", [TALLY_FLAME_ROOT] = "root",
	};
	int err;

	fputs("{\"version\":1,\"event\":", fp);
	tally_json_string(fp, event, TALLY_JSON_HTML);
	fputs(",\"subtitle\":", fp);
	tally_json_string(fp, subtitle, TALLY_JSON_HTML);
	fprintf(fp, ",\"diff\":%s,\"normalize\":%s,\"inverted\":%s,\"reverse\":%s,\"kinds\":[",
		o->diff ? "true" : "false", o->no_normalize ? "false" : "true",
		o->inverted ? "true" : "false", o->reverse ? "true" : "false");
	for (unsigned k = 0; k < TALLY_FLAME_NR_KINDS; k++) {
		fputs(k ? "," : "", fp);
		tally_json_string(fp, kinds[k], TALLY_JSON_HTML);
	}
	fputs("],\"nodes\":[", fp);
	err = tally_flame__walk(flame, page_node, &pn);
	fputs("],\"names\":[", fp);
	for (size_t i = 0; !err && i < pn.nr_names; i++) {
		fputs(i ? "," : "", fp);
		tally_json_string(fp, pn.names[i], TALLY_JSON_HTML);
	}
	fputs("]}", fp);
	free(pn.names);
	free(pn.slots);
	return err;
}

/* The page: the template with the title and the data filled in. */
static int write_page(FILE *fp, struct flame_opts *o, struct tally_flame *flame,
		      const char *event, const char *subtitle)
{
	const char *t = tally_flamegraph_page, *at;
	const char *title = o->title ? o->title : o->diff ? "Differential Flame Graph" :
			    "Flame Graph";
	int err = 0;

	while ((at = strstr(t, "@@")) && !err) {
		fwrite(t, 1, (size_t)(at - t), fp);
		if (!strncmp(at, "@@TITLE@@", 9)) {
			html_text(fp, title);
			t = at + 9;
		} else if (!strncmp(at, "@@DATA@@", 8)) {
			err = write_data(fp, o, flame, event, subtitle);
			t = at + 8;
		} else {
			fputs("@@", fp);
			t = at + 2;
		}
	}
	fputs(t, fp);
	return err;
}

static void subtitle_of(struct flame_opts *o, struct tally_flame *flame, const char *event,
			char *buf, size_t len)
{
	if (o->diff)
		snprintf(buf, len, "%s: %" PRIu64 " samples (old: %s, %" PRIu64 " samples)%s%s",
			 o->in.input, tally_flame__total_samples(flame, 1), o->old_input,
			 tally_flame__total_samples(flame, 0), event[0] ? ", event " : "", event);
	else
		snprintf(buf, len, "%s: %" PRIu64 " samples%s%s", o->in.input,
			 tally_flame__total_samples(flame, 0), event[0] ? " of " : "", event);
}

static int flamegraph_exec(void *opts, const struct cli_args *args)
{
	struct flame_opts o = *(struct flame_opts *)opts;
	struct tally_flame *flame = NULL;
	struct out_file out = { 0 };
	char event[256] = "", old_event[256] = "", subtitle[1024];
	int ret, status = 1;

	ret = check_opts(&o, args);
	if (ret)
		return ret;
	if (!o.output)
		o.output = o.folded ? "-" : "flamegraph.html";
	if (tally_flame__new(&flame)) {
		cli_error("out of memory");
		return 1;
	}
	if (o.diff && fold_file(&o, flame, 0, o.old_input, old_event, sizeof(old_event)))
		goto out;
	if (fold_file(&o, flame, o.diff ? 1 : 0, o.in.input, event, sizeof(event)))
		goto out;
	if (o.diff && old_event[0] && event[0] && strcmp(old_event, event))
		cli_warn("--diff: the files' events differ ('%s' and '%s')", old_event, event);
	if (out_file__open(&out, o.output, false))
		goto out;
	if (o.folded) {
		ret = tally_flame__write_folded(flame, o.diff ? 1 : 0,
						o.diff ? TALLY_FLAME_FOLDED_DIFF : 0, out.fp);
	} else {
		subtitle_of(&o, flame, event, subtitle, sizeof(subtitle));
		ret = write_page(out.fp, &o, flame, event, subtitle);
	}
	if (ret == -ENOMEM) {
		cli_error("out of memory");
		goto out;
	}
	status = out_file__commit(&out);
out:
	out_file__abort(&out);
	tally_flame__delete(flame);
	return status;
}

const struct cli_command cmd_flamegraph = {
	.name = "flamegraph",
	.summary = "Read perf.data and write an interactive flame graph page",
	.usage = flame_usage,
	.opts = flame_options,
	.max_args = 2,
	.args_hint = "(use -i to name the input file, --diff OLD NEW to compare two)",
	.size = sizeof(struct flame_opts),
	.exec = flamegraph_exec,
};
