/*
 * tally diff: what changed between a baseline profile and newer ones, as perf 6.1's
 * `perf diff` prints it: per event of the baseline, its share of each row and, for each
 * other file, the change (delta, absolute delta, ratio or weighted difference), with
 * the formula and periods on request.
 *
 * The library reads the files into profiles keyed by names and pairs their rows
 * (lib/analysis/diff.c); this file reads options and prints perf's table.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/diff.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

struct diff_opts {
	const char **files;
	size_t nr_files;
	enum tally_diff_compute compute;
	int64_t w1, w2;
	bool formula, period, baseline_only, relative, quiet, force;
	long order;			/* -o: the file ordering rows (default 1) */
	enum tally_diff_key keys[8];
	size_t nr_keys;
	char **comms, **dsos, **syms;
	int32_t *pids, *tids;
	size_t nr_pids, nr_tids;
	struct tally_cpumap *cpus;
	const char *kallsyms, *symfs;
	bool modules;			/* -m: accepted; modules are always looked up */
	const char *defaults[2];	/* the files without arguments */
};

/* -c delta|delta-abs|ratio|wdiff:w1,w2 (perf's words); cycles is refused. */
static int parse_compute(struct diff_opts *o, const char *arg)
{
	static const struct { const char *name; enum tally_diff_compute c; } words[] = {
		{ "delta", TALLY_DIFF_DELTA }, { "delta-abs", TALLY_DIFF_DELTA_ABS },
		{ "ratio", TALLY_DIFF_RATIO }, { "wdiff", TALLY_DIFF_WDIFF },
	};
	size_t n = strcspn(arg, ":");

	if (!strncmp(arg, "cycles", n) && n == 6) {
		cli_error("-c cycles: the cycles of basic blocks come from branch stacks with cycle "
			  "counts (LBR, recorded with -b on hardware that has it); tally diff does "
			  "not compute them");
		return -1;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strlen(words[i].name) != n || strncmp(arg, words[i].name, n))
			continue;
		o->compute = words[i].c;
		if (words[i].c != TALLY_DIFF_WDIFF) {
			if (arg[n]) {
				cli_error("-c %.*s takes no parameter ('%s')", (int)n, arg, arg + n + 1);
				return -1;
			}
			return 0;
		}
		/* wdiff:w1,w2: two non-zero integers */
		char *end;
		const char *p = arg + n;

		if (*p++ != ':')
			goto bad_weights;
		o->w1 = strtoll(p, &end, 10);
		if (end == p || *end != ',')
			goto bad_weights;
		p = end + 1;
		o->w2 = strtoll(p, &end, 10);
		if (end == p || *end || !o->w1 || !o->w2)
			goto bad_weights;
		return 0;
	}
	cli_error("-c: '%s' is not a computation (use delta, delta-abs, ratio or wdiff:w1,w2)", arg);
	return -1;
bad_weights:
	cli_error("-c wdiff needs two non-zero weights: wdiff:w1,w2 (not '%s')", arg);
	return -1;
}

static int parse_sort(struct diff_opts *o, const char *arg)
{
	static const struct { const char *name; enum tally_diff_key k; } words[] = {
		{ "comm", TALLY_DIFF_KEY_COMM }, { "pid", TALLY_DIFF_KEY_PID },
		{ "tid", TALLY_DIFF_KEY_PID }, { "dso", TALLY_DIFF_KEY_DSO },
		{ "sym", TALLY_DIFF_KEY_SYM }, { "symbol", TALLY_DIFF_KEY_SYM },
		{ "cpu", TALLY_DIFF_KEY_CPU },
	};
	size_t n;
	char **l = strlist_parse(arg, &n);

	if (!l)
		return -1;
	o->nr_keys = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < sizeof(words) / sizeof(words[0]); k++)
			if (!strcmp(l[i], words[k].name))
				break;
		if (k == sizeof(words) / sizeof(words[0]) || o->nr_keys == 8) {
			cli_error("--sort: '%s' is not a key tally diff has (comm, pid, dso, sym, cpu)",
				  l[i]);
			strlist_free(l);
			return -1;
		}
		o->keys[o->nr_keys++] = words[k].k;
	}
	strlist_free(l);
	return 0;
}

/* "1,2,3" into ids; 0 or -1 after saying why. */
static int parse_ids(const char *arg, const char *what, int32_t **ids, size_t *nr)
{
	size_t n;
	char **l = strlist_parse(arg, &n);

	free(*ids);
	*ids = l ? calloc(n ? n : 1, sizeof(**ids)) : NULL;
	if (!*ids) {
		strlist_free(l);
		cli_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char *end;
		long v = strtol(l[i], &end, 10);

		if (*end || end == l[i]) {
			cli_error("%s: '%s' is not a number", what, l[i]);
			strlist_free(l);
			return -1;
		}
		(*ids)[i] = (int32_t)v;
	}
	*nr = n;
	strlist_free(l);
	return 0;
}

static int opt_compute(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return parse_compute(opts, arg);
}

static int opt_sort(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return parse_sort(opts, arg);
}

static int opt_pid(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct diff_opts *o = opts;

	(void)opt, (void)unset;
	return parse_ids(arg, "--pid", &o->pids, &o->nr_pids);
}

static int opt_tid(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct diff_opts *o = opts;

	(void)opt, (void)unset;
	return parse_ids(arg, "--tid", &o->tids, &o->nr_tids);
}

static int opt_percentage(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	if (strcmp(arg, "relative") && strcmp(arg, "absolute")) {
		cli_error("--percentage: use 'relative' or 'absolute', not '%s'", arg);
		return -1;
	}
	((struct diff_opts *)opts)->relative = !strcmp(arg, "relative");
	return 0;
}

#define CLI_OPTS struct diff_opts
static const struct cli_opt diff_options[] = {
	OPT_VERBOSE("be more verbose (show symbol address, etc)"),
	OPT_BOOL('q', "quiet", quiet, "Do not show any warnings or messages"),
	OPT_BOOL('b', "baseline-only", baseline_only, "Show only items with match in baseline"),
	OPT_CALLBACK('c', "compute", "delta,delta-abs,ratio,wdiff:w1,w2 (default delta-abs),cycles",
		     "Entries differential computation selection", opt_compute),
	OPT_BOOL('p', "period", period, "Show period values."),
	OPT_BOOL('F', "formula", formula, "Show formula."),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_STRING(0, "kallsyms", kallsyms, "file", "kallsyms pathname"),
	OPT_BOOL('m', "modules", modules, "load module symbols - WARNING: use only with -k and LIVE kernel"),
	OPT_STRLIST('d', "dsos", dsos, "dso[,dso...]", "only consider symbols in these dsos"),
	OPT_STRLIST('C', "comms", comms, "comm[,comm...]", "only consider symbols in these comms"),
	OPT_STRLIST('S', "symbols", syms, "symbol[,symbol...]", "only consider these symbols"),
	OPT_CALLBACK('s', "sort", "key[,key2...]", "sort by key(s): pid, comm, dso, symbol, cpu",
		     opt_sort),
	OPT_LONG('o', "order", order, "n", "Specify compute sorting.", CLI_RANGED(0, LONG_MAX)),
	OPT_STRING(0, "symfs", symfs, "directory",
		   "Look for files with symbols relative to this directory"),
	OPT_CPUMAP(0, "cpu", cpus, "cpu", "list of cpus to profile"),
	OPT_CALLBACK(0, "pid", "pid[,pid...]", "only consider symbols in these pids", opt_pid),
	OPT_CALLBACK(0, "tid", "tid[,tid...]", "only consider symbols in these tids", opt_tid),
	OPT_CALLBACK(0, "percentage", "relative|absolute",
		     "How to display percentage of filtered entries", opt_percentage),
	OPT_REFUSED('D', "dump-raw-trace", NULL, CLI_ARG_NONE, "dump raw trace in ASCII",
		    "-D: dump a file's records with 'tally report -D -i FILE'"),
	OPT_REFUSED('t', "field-separator", "separator", CLI_ARG_REQUIRED,
		    "separator for columns, no spaces will be added between columns '.' is reserved.",
		    "-t/--field-separator is not implemented in tally diff"),
	OPT_REFUSED(0, "cycles-hist", NULL, CLI_ARG_NONE,
		    "Show cycles histogram and standard deviation - WARNING: use only with -c cycles.",
		    "--cycles-hist goes with -c cycles, which needs branch stacks with cycle counts "
		    "(LBR); tally diff does not compute them"),
	OPT_REFUSED(0, "stream", NULL, CLI_ARG_NONE, "Enable hot streams comparison.",
		    "--stream (hot call-chain streams) is not implemented in tally diff"),
	OPT_REFUSED(0, "time", "str", CLI_ARG_REQUIRED, "Time span (time percent or absolute timestamp)",
		    "--time is not implemented in tally diff: cut the files with 'perf record "
		    "--switch-output' or compare whole runs"),
	OPT_END(),
};

static const char *const diff_usage[] = { "diff [<options>] [old_file] [new_file]", NULL };

/* ---- perf's table ------------------------------------------------------------------ */

enum col_kind { COL_BASELINE, COL_BASE_PERIOD, COL_COMPUTE, COL_FORMULA, COL_PERIOD, COL_KEY };

struct col {
	enum col_kind kind;
	size_t file;
	enum tally_diff_key key;
	char header[64];
	size_t width;
};

struct printer {
	const struct diff_opts *o;
	const struct tally_diff *d;
	struct col cols[64];
	size_t nr;
};

static const char *compute_header(enum tally_diff_compute c)
{
	switch (c) {
	case TALLY_DIFF_DELTA:
		return "Delta";
	case TALLY_DIFF_RATIO:
		return "Ratio";
	case TALLY_DIFF_WDIFF:
		return "Weighted diff";
	default:
		return "Delta Abs";
	}
}

/* perf's diff columns: per file, its value column, the formula, the period */
static void value_col(struct printer *pr, enum col_kind kind, size_t file, const char *name,
		      size_t minw)
{
	struct col *c = &pr->cols[pr->nr++];

	c->kind = kind;
	c->file = file;
	if (pr->o->nr_files > 2)
		snprintf(c->header, sizeof(c->header), "%s/%zu", name, file);
	else
		snprintf(c->header, sizeof(c->header), "%s", name);
	c->width = strlen(c->header) > minw ? strlen(c->header) : minw;
}

static const char *key_header(enum tally_diff_key k)
{
	switch (k) {
	case TALLY_DIFF_KEY_COMM:
		return "Command";
	case TALLY_DIFF_KEY_PID:
		return "    Pid:Command";
	case TALLY_DIFF_KEY_DSO:
		return "Shared Object";
	case TALLY_DIFF_KEY_SYM:
		return "Symbol";
	default:
		return "CPU";
	}
}

static size_t key_len(const struct tally_diff_row *r, enum tally_diff_key k)
{
	char buf[32];

	switch (k) {
	case TALLY_DIFF_KEY_COMM:
		return strlen(r->comm ? r->comm : "");
	case TALLY_DIFF_KEY_PID:
		return 8 + strlen(r->comm ? r->comm : "");
	case TALLY_DIFF_KEY_DSO:
		return strlen(r->dso ? r->dso : "[unknown]");
	case TALLY_DIFF_KEY_SYM:
		return 4 + (r->sym ? strlen(r->sym) : 18);
	default:
		return (size_t)snprintf(buf, sizeof(buf), "%.3d", r->cpu);
	}
}

/* perf hides a key column that a filter pins to a single value */
static bool elided(const struct diff_opts *o, enum tally_diff_key k)
{
	return (k == TALLY_DIFF_KEY_COMM && strlist_len(o->comms) == 1) ||
	       (k == TALLY_DIFF_KEY_DSO && strlist_len(o->dsos) == 1) ||
	       (k == TALLY_DIFF_KEY_SYM && strlist_len(o->syms) == 1);
}

static void setup_cols(struct printer *pr)
{
	const struct diff_opts *o = pr->o;

	pr->nr = 0;
	for (size_t f = 0; f < o->nr_files && pr->nr + 3 < 56; f++) {
		if (f == 0)
			value_col(pr, COL_BASELINE, 0, "Baseline", 0);
		else
			value_col(pr, COL_COMPUTE, f, compute_header(o->compute),
				  o->compute == TALLY_DIFF_DELTA || o->compute == TALLY_DIFF_DELTA_ABS ? 7 : 14);
		if (o->formula && f)
			value_col(pr, COL_FORMULA, f, "Formula", 70);
		if (o->period)
			value_col(pr, f ? COL_PERIOD : COL_BASE_PERIOD, f, f ? "Period" : "Base period", 14);
	}
	for (size_t k = 0; k < o->nr_keys; k++) {
		struct col *c;

		if (elided(o, o->keys[k]))
			continue;
		c = &pr->cols[pr->nr++];

		c->kind = COL_KEY;
		c->key = o->keys[k];
		snprintf(c->header, sizeof(c->header), "%s", key_header(o->keys[k]));
		c->width = strlen(c->header);
		if (c->key == TALLY_DIFF_KEY_PID && c->width < 15)
			c->width = 15;
		/* perf's cpu column is 3 wide whatever it holds ("-001" without a cpu) */
		for (size_t i = 0; c->key != TALLY_DIFF_KEY_CPU && i < tally_diff__nr_rows(pr->d); i++) {
			size_t l = key_len(tally_diff__row(pr->d, i), c->key);

			if (l > c->width)
				c->width = l;
		}
	}
}

/* The text of a value cell, as perf's diff columns write it ("" when empty). */
static void value_text(const struct printer *pr, const struct col *c, const struct tally_diff_row *r,
		       char *buf, size_t cap)
{
	const struct tally_diff_cell *x = &r->cells[c->file], *b = &r->cells[0];

	buf[0] = 0;
	switch (c->kind) {
	case COL_BASELINE:
		if (!r->dummy)
			snprintf(buf, cap, "%.2f%%", b->percent);
		break;
	case COL_BASE_PERIOD:
		snprintf(buf, cap, "%" PRIu64, b->period);
		break;
	case COL_PERIOD:
		if (x->paired)
			snprintf(buf, cap, "%" PRIu64, x->period);
		break;
	case COL_COMPUTE:
		if (!x->paired)
			break;
		/* a ratio or weighted difference to nothing: perf writes N/A */
		if (r->dummy && pr->o->compute != TALLY_DIFF_DELTA &&
		    pr->o->compute != TALLY_DIFF_DELTA_ABS)
			snprintf(buf, cap, "N/A");
		else if (pr->o->compute == TALLY_DIFF_RATIO)
			snprintf(buf, cap, "%14.6f", x->ratio);
		else if (pr->o->compute == TALLY_DIFF_WDIFF)
			snprintf(buf, cap, "%14" PRId64, x->wdiff);
		else
			snprintf(buf, cap, "%+4.2f%%", x->delta);
		break;
	case COL_FORMULA:
		if (!x->paired)
			break;
		if (pr->o->compute == TALLY_DIFF_RATIO)
			snprintf(buf, cap, "%.0f / %.0f", (double)x->period, (double)b->period);
		else if (pr->o->compute == TALLY_DIFF_WDIFF)
			snprintf(buf, cap, "(%" PRIu64 " * %" PRId64 ") - (%" PRIu64 " * %" PRId64 ")",
				 x->period, pr->o->w2, b->period, pr->o->w1);
		else
			snprintf(buf, cap, "(%" PRIu64 " * 100 / %" PRIu64 ") - (%" PRIu64 " * 100 / %" PRIu64 ")",
				 x->period, tally_diff__total(pr->d, c->file), b->period,
				 tally_diff__total(pr->d, 0));
		break;
	default:
		break;
	}
}

static void key_cell(const struct col *c, const struct tally_diff_row *r, bool last)
{
	int n;

	switch (c->key) {
	case TALLY_DIFF_KEY_COMM:
		printf("%-*s", (int)c->width, r->comm ? r->comm : "");
		break;
	case TALLY_DIFF_KEY_PID:
		printf("%7d:%-*s", r->tid, (int)c->width - 8, r->comm ? r->comm : "");
		break;
	case TALLY_DIFF_KEY_DSO:
		printf("%-*s", (int)c->width, r->dso ? r->dso : "[unknown]");
		break;
	case TALLY_DIFF_KEY_SYM:
		if (r->sym)
			n = printf("[%c] %s", r->level, r->sym);
		else
			n = printf("[%c] %-#.*" PRIx64, r->level, 16, r->ip);
		if (!last && n < (int)c->width)
			printf("%*s", (int)c->width - n, "");
		break;
	case TALLY_DIFF_KEY_CPU:
		printf("%*.*d", (int)c->width, 3, r->cpu);
		break;
	}
}

static void print_table(struct printer *pr)
{
	char buf[256];

	setup_cols(pr);
	if (!pr->o->quiet) {
		printf("# ");
		for (size_t i = 0; i < pr->nr; i++) {
			const struct col *c = &pr->cols[i];
			bool left = c->kind == COL_KEY && c->key != TALLY_DIFF_KEY_CPU &&
				    c->key != TALLY_DIFF_KEY_PID;

			printf(i ? "  %*s" : "%*s", left ? -(int)c->width : (int)c->width, c->header);
		}
		printf("\n# ");
		for (size_t i = 0; i < pr->nr; i++) {
			printf(i ? "  " : "");
			for (size_t k = 0; k < pr->cols[i].width; k++)
				putchar('.');
		}
		printf("\n#\n");
	}
	for (size_t i = 0; i < tally_diff__nr_rows(pr->d); i++) {
		const struct tally_diff_row *r = tally_diff__row(pr->d, i);

		printf("  ");
		for (size_t k = 0; k < pr->nr; k++) {
			const struct col *c = &pr->cols[k];

			if (k)
				printf("  ");
			if (c->kind == COL_KEY) {
				key_cell(c, r, k + 1 == pr->nr);
			} else {
				value_text(pr, c, r, buf, sizeof(buf));
				printf("%*s", (int)c->width, buf);
			}
		}
		putchar('\n');
	}
}

/* ---- the command --------------------------------------------------------------------- */

static int load_all(struct diff_opts *o, struct tally_profile **p)
{
	struct tally_profile_opts po = {
		.keys = o->keys, .nr_keys = o->nr_keys,
		.comms = o->comms, .dsos = o->dsos, .syms = o->syms,
		.pids = o->pids, .nr_pids = o->nr_pids, .tids = o->tids, .nr_tids = o->nr_tids,
		.cpus = o->cpus,
		.session = { .kallsyms = o->kallsyms, .symfs = o->symfs },
		.force = o->force,
	};

	for (size_t f = 0; f < o->nr_files; f++) {
		struct tally_data_error err = { 0 };
		int ret = tally_profile__load(&p[f], o->files[f], &po, &err);

		if (ret == -ENOENT && !err.msg[0]) {
			cli_error("%s: no such file%s", o->files[f], f == 0 && o->nr_files == 2 &&
				  !strcmp(o->files[f], "perf.data.old") ? " (diff compares perf.data.old, "
				  "the previous recording, with perf.data; or name the files)" : "");
			return 1;
		}
		if (ret) {
			if (err.msg[0])
				cli_error("%s: file offset %#" PRIx64 ": %s", o->files[f], err.offset,
					  err.msg);
			else
				cli_error("%s: cannot read: %s", o->files[f], strerror(-ret));
			return 1;
		}
		for (size_t k = 0; o->cpus && k < tally_profile__nr_events(p[f]); k++) {
			if (!(tally_profile__event(p[f], k)->attr.sample_type & PERF_SAMPLE_CPU)) {
				cli_error("--cpu: %s records no cpu in its samples (record with -a, -C or "
					  "--sample-cpu to select by cpu)", o->files[f]);
				return 1;
			}
		}
		if (tally_profile__truncated(p[f]) && !o->quiet)
			cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; compared the "
				 "complete records before it", o->files[f], tally_profile__truncated(p[f]));
		if (tally_profile__nr_unknown_records(p[f]) && !o->quiet)
			cli_warn("%s: skipped %" PRIu64 " record(s) of unknown type (a newer perf?)",
				 o->files[f], tally_profile__nr_unknown_records(p[f]));
		if (tally_profile__kernel_problem(p[f]) && !o->quiet)
			cli_warn("%s: no kernel symbols: %s", o->files[f], tally_profile__kernel_problem(p[f]));
	}
	return 0;
}

/* Files whose events differ from the baseline's: perf leaves their columns empty
 * without a word; say so. */
static void warn_unmatched(const struct diff_opts *o, struct tally_profile **p,
			   const struct tally_diff *d, size_t ev)
{
	const struct tally_data_event *e = tally_profile__event(p[0], ev);

	for (size_t f = 1; f < o->nr_files; f++) {
		char names[512];
		size_t off = 0;

		if (tally_diff__matched(d, f) || o->quiet)
			continue;
		names[0] = 0;
		for (size_t k = 0; k < tally_profile__nr_events(p[f]) && off < sizeof(names); k++) {
			const struct tally_data_event *x = tally_profile__event(p[f], k);

			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", k ? ", " : "",
						x->name ? x->name : "?");
		}
		cli_warn("%s has no %s event (it has %s): nothing pairs with the baseline's %s rows",
			 o->files[f], e->name ? e->name : "?", names[0] ? names : "none",
			 e->name ? e->name : "?");
	}
}

static int diff_run(struct diff_opts *o, struct tally_profile **p)
{
	struct tally_diff_opts dopts = {
		.compute = o->compute, .w1 = o->w1, .w2 = o->w2, .relative = o->relative,
		.baseline_only = o->baseline_only, .sort_idx = (size_t)o->order,
	};
	bool first = true;
	int ret = load_all(o, p);

	if (ret)
		return ret;
	for (size_t ev = 0; ev < tally_profile__nr_events(p[0]); ev++) {
		const struct tally_data_event *e = tally_profile__event(p[0], ev);
		struct printer pr = { .o = o };
		struct tally_diff *d;

		if (tally_diff__new(&d, p, o->nr_files, ev, &dopts)) {
			cli_error("out of memory");
			return 1;
		}
		warn_unmatched(o, p, d, ev);
		pr.d = d;
		if (!o->quiet) {
			printf("%s# Event '%s'\n#\n", first ? "" : "\n", e->name ? e->name : "unknown");
			if (o->nr_files > 2 || verbose) {
				printf("# Data files:\n");
				for (size_t f = 0; f < o->nr_files; f++)
					printf("#  [%zu] %s %s\n", f, o->files[f], f ? "" : "(Baseline)");
				printf("#\n");
			}
		}
		first = false;
		print_table(&pr);
		tally_diff__delete(d);
	}
	if (!tally_profile__total(p[0], 0).nr_samples && tally_profile__nr_events(p[0]) <= 1 &&
	    !o->quiet)
		cli_warn("%s has no samples", o->files[0]);
	return cli_finish_output(stdout, "the diff");
}

static int diff_init(void *opts)
{
	struct diff_opts *o = opts;

	o->compute = TALLY_DIFF_DELTA_ABS;
	o->order = 1;
	o->keys[0] = TALLY_DIFF_KEY_DSO;
	o->keys[1] = TALLY_DIFF_KEY_SYM;
	o->nr_keys = 2;
	return 0;
}

static void diff_exit(void *opts)
{
	struct diff_opts *o = opts;

	strlist_free(o->comms);
	strlist_free(o->dsos);
	strlist_free(o->syms);
	free(o->pids);
	free(o->tids);
	tally_cpumap__delete(o->cpus);
}

static int diff_exec(void *opts, const struct cli_args *args)
{
	struct diff_opts *o = opts;
	struct tally_profile **p;
	int status;

	/* perf: no file, perf.data.old against perf.data; one file, perf.data.old
	 * against it; more, the first is the baseline */
	if (args->argc >= 2) {
		o->files = (const char **)args->argv;
		o->nr_files = (size_t)args->argc;
	} else {
		o->defaults[0] = "perf.data.old";
		o->defaults[1] = args->argc == 1 ? args->argv[0] : "perf.data";
		o->files = o->defaults;
		o->nr_files = 2;
	}
	if ((size_t)o->order >= o->nr_files)
		return cli_usage_error(&cmd_diff, "-o/--order %ld: there are only files 0 to %zu "
				       "(0 is the baseline)", o->order, o->nr_files - 1);
	p = calloc(o->nr_files, sizeof(*p));
	if (!p) {
		cli_error("out of memory");
		return 1;
	}
	status = diff_run(o, p);
	for (size_t f = 0; f < o->nr_files; f++)
		tally_profile__delete(p[f]);
	free(p);
	return status;
}

const struct cli_command cmd_diff = {
	.name = "diff",
	.summary = "Read perf.data files and display the differential profile",
	.usage = diff_usage,
	.opts = diff_options,
	.max_args = CLI_ANY_ARGS,
	.size = sizeof(struct diff_opts),
	.init = diff_init,
	.exec = diff_exec,
	.exit = diff_exit,
};
