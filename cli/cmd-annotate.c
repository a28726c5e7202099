/*
 * tally annotate: where inside each function the samples of a perf.data landed, as
 * perf 6.1's `perf annotate --stdio` prints it: per function a header, then its
 * instructions with each one's share of the function's samples, source lines and
 * objdump's line-table rows between them.
 *
 * perf runs objdump once per function and parses its text; tally asks the library:
 * tally_annotate (lib/analysis) counts samples per address, tally_lister (lib/model)
 * disassembles with capstone and finds lines with libdw, laid out the way objdump -d -l
 * -S lays them out. This file reads options and prints perf's text; the reproduction of
 * perf's quirks (its line numbers come from objdump's output lines) lives here.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include <tally/annotate.h>
#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/listing.h>
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

enum percent_type { PT_LOCAL_PERIOD, PT_GLOBAL_PERIOD, PT_LOCAL_HITS, PT_GLOBAL_HITS };

struct annotate_opts {
	const char *input;
	const char *symbol;		/* -s, or the argument */
	char **dsos;
	struct tally_cpumap *cpus;
	bool print_line;		/* -l */
	bool full_paths;		/* -P */
	enum percent_type percent_type;
	bool asm_raw;
	bool show_total_period;
	bool show_nr_samples;
	enum tally_disasm_syntax syntax;
	bool source;
	bool skip_missing;
	bool force;
	bool quiet;
	bool ui_stdio, ui_other;	/* --stdio, --tui/--gtk: tally prints text either way */
	bool demangle, modules;		/* accepted as perf's; tally demangles as perf does */
	const char *stdio_color;	/* accepted; tally prints no colors */
	int group;			/* -1: as the file has groups */
	double percent_limit;
	const char *vmlinux;
	const char *symfs;
};

struct annotate {
	struct annotate_opts *o;
	struct tally_data *data;
	struct tally_session *session;
	struct tally_annotate *ann;
	struct tally_lister *lister;
	size_t nr_ev;
	bool group_view;
	bool forced_leader;		/* --group on a file without groups: all events are
					 * the first one's group (perf's evlist__force_leader) */
	/* the printer's state across functions, as perf's (a static in perf) */
	const char *prev_path;
	char prev_path_buf[4096];
	/* dsos that could not be listed: said once each, then skipped (perf's
	 * annotate_warned) */
	const struct tally_dso **warned;
	size_t nr_warned;
	size_t nr_printed;
	/* where samples found no symbol, to say why nothing could be shown */
	struct nosym {
		const struct tally_dso *dso;
		uint64_t nr;
	} nosym[8];
	size_t nr_nosym;
	int err;
};

static const char *const percent_type_names[] = {
	[PT_LOCAL_PERIOD] = "local period", [PT_GLOBAL_PERIOD] = "global period",
	[PT_LOCAL_HITS] = "local hits", [PT_GLOBAL_HITS] = "global hits",
};

/* perf's --percent-type words: local-period, global-hits, and also period-local ... */
static int parse_percent_type(const char *s, enum percent_type *t)
{
	static const struct { const char *name; enum percent_type t; } words[] = {
		{ "local-period", PT_LOCAL_PERIOD }, { "period-local", PT_LOCAL_PERIOD },
		{ "global-period", PT_GLOBAL_PERIOD }, { "period-global", PT_GLOBAL_PERIOD },
		{ "local-hits", PT_LOCAL_HITS }, { "hits-local", PT_LOCAL_HITS },
		{ "global-hits", PT_GLOBAL_HITS }, { "hits-global", PT_GLOBAL_HITS },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!strcmp(s, words[i].name)) {
			*t = words[i].t;
			return 0;
		}
	}
	return -EINVAL;
}

static int opt_percent_type(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	if (parse_percent_type(arg, &((struct annotate_opts *)opts)->percent_type)) {
		cli_error("--percent-type: '%s' is not one of local-period, global-period, "
			  "local-hits, global-hits", arg);
		return -1;
	}
	return 0;
}

static int opt_style(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	if (tally_disasm_syntax_parse(arg, &((struct annotate_opts *)opts)->syntax)) {
		cli_error("-M/--disassembler-style: '%s' is not 'att' or 'intel' (the styles "
			  "capstone has for x86)", arg);
		return -1;
	}
	return 0;
}

static int opt_ignore_vmlinux(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)arg, (void)unset;
	((struct annotate_opts *)opts)->vmlinux = NULL;
	return 0;
}

#define CLI_OPTS struct annotate_opts
static const struct cli_opt annotate_options[] = {
	OPT_STRING('i', "input", input, "file", "input file name"),
	OPT_STRING('s', "symbol", symbol, "symbol", "symbol to annotate"),
	OPT_STRLIST('d', "dsos", dsos, "dso[,dso...]", "only consider symbols in these dsos"),
	OPT_CPUMAP('C', "cpu", cpus, "cpu", "list of cpus to profile"),
	OPT_BOOL('l', "print-line", print_line, "print matching source lines (may be slow)"),
	OPT_BOOL('P', "full-paths", full_paths, "Don't shorten the displayed pathnames"),
	OPT_CALLBACK(0, "percent-type", "local-period",
		     "Set percent type local/global-period/hits", opt_percent_type),
	OPT_DOUBLE(0, "percent-limit", percent_limit, "percent",
		   "Don't show entries under that percent", CLI_RANGED(0, 1e300)),
	OPT_BOOL(0, "asm-raw", asm_raw, "Display raw encoding of assembly instructions (default)"),
	OPT_BOOL(0, "show-total-period", show_total_period,
		 "Show a column with the sum of periods"),
	OPT_BOOL('n', "show-nr-samples", show_nr_samples, "Show a column with the number of samples"),
	OPT_CALLBACK('M', "disassembler-style", "disassembler style",
		     "Specify disassembler style (e.g. -M intel for intel syntax)", opt_style),
	OPT_BOOL(0, "source", source, "Interleave source code with assembly code (default)"),
	OPT_BOOL(0, "skip-missing", skip_missing, "Skip symbols that cannot be annotated"),
	OPT_SET(0, "group", group, 1, "Show event group information together"),
	OPT_STRING('k', "vmlinux", vmlinux, "file", "vmlinux pathname"),
	OPT_CALLBACK_NOARG(0, "ignore-vmlinux", "don't load vmlinux even if found",
			   opt_ignore_vmlinux),
	OPT_STRING(0, "symfs", symfs, "directory",
		   "Look for files with symbols relative to this directory"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_BOOL('q', "quiet", quiet, "do now show any warnings or messages"),
	OPT_VERBOSE("be more verbose (show symbol address, etc)"),
	OPT_BOOL(0, "stdio", ui_stdio, "Use the stdio interface"),
	OPT_BOOL(0, "tui", ui_other, "Use the TUI interface (tally prints --stdio)"),
	OPT_BOOL(0, "gtk", ui_other, "Use the GTK interface (tally prints --stdio)"),
	OPT_BOOL(0, "demangle", demangle, "Disable symbol demangling (tally demangles as perf "
		 "does)"),
	OPT_BOOL(0, "demangle-kernel", demangle, "Enable kernel symbol demangling"),
	OPT_STRING(0, "stdio-color", stdio_color, "mode", "'always' (default), 'never' or 'auto' "
		   "(tally prints no colors)"),
	OPT_BOOL('m', "modules", modules, "load module symbols - WARNING: use only with -k and LIVE kernel"),
	OPT_REFUSED(0, "stdio2", NULL, CLI_ARG_NONE, "Use the stdio2 interface",
		    "--stdio2 is not implemented: use --stdio (perf's default text format)"),
	OPT_REFUSED(0, "objdump", "path", CLI_ARG_REQUIRED, "objdump binary to use for disassembly and annotations",
		    "--objdump: tally runs no objdump, it disassembles with capstone; drop the option"),
	OPT_REFUSED(0, "prefix", "prefix", CLI_ARG_REQUIRED,
		    "Add prefix to source file path names in programs (with --prefix-strip)",
		    "--prefix/--prefix-strip are not implemented: source files are read where the "
		    "DWARF line table names them"),
	OPT_REFUSED(0, "prefix-strip", "N", CLI_ARG_REQUIRED,
		    "Strip first N entries of source file path name in programs (with --prefix)",
		    "--prefix/--prefix-strip are not implemented: source files are read where the "
		    "DWARF line table names them"),
	OPT_END(),
};

static const char *const annotate_usage[] = { "annotate [<options>] [<symbol>]", NULL };

/* ---- reading ------------------------------------------------------------------ */

static bool dso_wanted(const struct annotate_opts *o, const struct tally_dso *d)
{
	return !o->dsos || (d && (strlist_has(o->dsos, tally_dso__short_name(d)) ||
				  strlist_has(o->dsos, tally_dso__name(d))));
}

static void note_nosym(struct annotate *a, const struct tally_dso *d)
{
	size_t i;

	for (i = 0; i < a->nr_nosym && a->nosym[i].dso != d; i++)
		;
	if (i == a->nr_nosym) {
		if (i == sizeof(a->nosym) / sizeof(a->nosym[0]))
			return;
		a->nosym[a->nr_nosym++].dso = d;
	}
	a->nosym[i].nr++;
}

static int add_sample(struct annotate *a, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(a->data, (size_t)evidx);
	struct tally_addr_loc loc;
	struct tally_sample smp;

	if (tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;	/* a damaged sample is skipped, as perf does */
	if (a->o->cpus && (!(smp.type & PERF_SAMPLE_CPU) ||
			   tally_cpumap__idx(a->o->cpus, (int)smp.cpu) < 0))
		return 0;
	if (tally_session__resolve(a->session, (pid_t)smp.pid, (pid_t)smp.tid,
				   smp.misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip, &loc))
		return -ENOMEM;
	/* perf drops filtered samples before counting them at all */
	if (!dso_wanted(a->o, loc.dso))
		return 0;
	if (a->o->symbol && !(loc.sym && loc.sym->name && !strcmp(loc.sym->name, a->o->symbol)))
		return 0;
	if (!loc.sym && loc.dso)
		note_nosym(a, loc.dso);
	return tally_annotate__add(a->ann, (size_t)evidx, &loc, tally_sample__period(&smp, &ev->attr));
}

static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct annotate *a = arg;
	int evidx = ctx->evidx;

	if (exiting)
		return -EINTR;
	if (hdr->type != PERF_RECORD_SAMPLE) {
		return tally_session__process(a->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	}
	if (evidx < 0 && a->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= a->nr_ev)
		return 0;
	return add_sample(a, evidx, hdr);
}

/* ---- perf's text ----------------------------------------------------------------- */

/* perf strips a line of objdump's output and expands its tabs (8 columns from the
 * stripped start). */
static void strim_expand(const char *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	while (len && (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r' || *in == '\f' ||
		       *in == '\v')) {
		in++;
		len--;
	}
	while (len && (in[len - 1] == ' ' || in[len - 1] == '\t' || in[len - 1] == '\n' ||
		       in[len - 1] == '\r' || in[len - 1] == '\f' || in[len - 1] == '\v'))
		len--;
	for (size_t i = 0; i < len && o + 9 < cap; i++) {
		if (in[i] == '\t') {
			out[o++] = ' ';
			while (o % 8)
				out[o++] = ' ';
		} else {
			out[o++] = in[i];
		}
	}
	out[o] = 0;
}

/* "<name+0x10>" after an address, as objdump names it */
static void name_text(char *buf, size_t cap, const struct tally_row_name *n)
{
	if (!n->sym)
		buf[0] = 0;
	else if (n->off)
		snprintf(buf, cap, " <%s%c0x%" PRIx64 ">", n->sym, n->above ? '-' : '+',
			 n->above ? -(uint64_t)n->off : (uint64_t)n->off);
	else
		snprintf(buf, cap, " <%s>", n->sym);
}

/* The instruction as objdump spells its line: capstone's mnemonic and operands, a
 * direct branch target as "addr <sym+off>", and the address an instruction-pointer
 * relative operand refers to as a "# addr <sym>" comment. */
static void insn_text(const struct tally_row *r, char *buf, size_t cap)
{
	char name[4096];	/* (C++ template names run to kilobytes) */
	int n;

	if (r->insn.has_target) {
		name_text(name, sizeof(name), &r->target);
		n = snprintf(buf, cap, "%-6s %" PRIx64 "%s", r->insn.mnemonic, r->insn.target, name);
	} else {
		n = snprintf(buf, cap, "%-6s %s", r->insn.mnemonic, r->insn.operands);
	}
	if (r->insn.has_pc_ref && n > 0 && (size_t)n < cap) {
		name_text(name, sizeof(name), &r->pc_ref);
		snprintf(buf + n, cap - (size_t)n, "        # %" PRIx64 "%s", r->insn.pc_ref, name);
	}
}

/* objdump --show-raw-insn puts 7 bytes on a line (x86); the rest continue on lines of
 * their own, which perf shows as instructions at their addresses. */
#define RAW_PER_LINE 7

static void raw_bytes(const uint8_t *b, size_t n, char *buf, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 4 < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%02x ", b[i]);
	while (o < RAW_PER_LINE * 3 && o + 1 < cap)
		buf[o++] = ' ';
	buf[o] = 0;
}

struct sym_print {
	struct annotate *a;
	size_t ev;			/* the event (group leader) */
	size_t nm;			/* columns */
	struct tally_annotated *s;
	struct tally_listing *x;
	int addr_width;
	int lineno;			/* perf's line numbers: objdump's output lines */
	/* percents per instruction line with -l: the path of its source line */
	struct src_sum {
		char path[1024];
		double pct[16];
	} *sums;
	size_t nr_sums, cap_sums;
};

static double percent_of(struct sym_print *p, size_t m, struct tally_annotate_count c)
{
	size_t ev = p->ev + m;
	struct tally_annotate_count t;

	switch (p->a->o->percent_type) {
	case PT_LOCAL_PERIOD:
		t = tally_annotated__total(p->s, ev);
		return t.period ? 100.0 * (double)c.period / (double)t.period : 0.0;
	case PT_LOCAL_HITS:
		t = tally_annotated__total(p->s, ev);
		return t.nr_samples ? 100.0 * (double)c.nr_samples / (double)t.nr_samples : 0.0;
	case PT_GLOBAL_PERIOD:
		t = tally_annotate__event_total(p->a->ann, ev);
		return t.period ? 100.0 * (double)c.period / (double)t.period : 0.0;
	case PT_GLOBAL_HITS:
		t = tally_annotate__event_total(p->a->ann, ev);
		return t.nr_samples ? 100.0 * (double)c.nr_samples / (double)t.nr_samples : 0.0;
	}
	return 0.0;
}

static int value_width(const struct annotate_opts *o)
{
	return o->show_total_period ? 12 : 8;
}

/* A line that is no instruction: perf numbers it with objdump's output line. */
static void text_line(struct sym_print *p, const char *text, size_t len)
{
	char buf[8192];
	int width = value_width(p->a->o) * (int)p->nm;

	strim_expand(text, len, buf, sizeof(buf));
	if (!buf[0])
		printf(" %*s:\n", width, " ");
	else
		printf(" %*s: %-*d %s\n", width, " ", p->addr_width, p->lineno, buf);
	p->lineno++;
}

/* The source line ("hot.c:32") perf's -l puts beside hot instructions. */
static void srcline_of(struct sym_print *p, uint64_t offset, char *buf, size_t cap)
{
	const char *file = NULL;
	unsigned line = 0;

	/* the location row in force at that instruction */
	for (size_t i = 0; i < p->x->nr_rows; i++) {
		const struct tally_row *r = &p->x->rows[i];

		if (r->kind == TALLY_ROW_LOCATION) {
			file = r->text;
			line = r->line;
		} else if (r->kind == TALLY_ROW_INSN && r->offset == offset) {
			break;
		}
	}
	if (!file && p->x->has_lines) {	/* addr2line's answer for an address it lacks */
		snprintf(buf, cap, "??:0");
		return;
	}
	if (!file) {	/* no DWARF at all: perf names the dso and the address */
		snprintf(buf, cap, "%s[%" PRIx64 "]",
			 tally_dso__short_name(tally_annotated__dso(p->s)), p->x->start + offset);
		return;
	}
	if (!p->a->o->full_paths && strrchr(file, '/'))
		file = strrchr(file, '/') + 1;
	snprintf(buf, cap, "%s:%u", file, line);
}

static void insn_line(struct sym_print *p, uint64_t addr, uint64_t from, uint64_t to,
		      const char *text)
{
	const struct annotate_opts *o = p->a->o;
	double max = 0.0, pct[16];
	char path[1024];

	for (size_t m = 0; m < p->nm; m++) {
		struct tally_annotate_count c = tally_annotated__range(p->s, p->ev + m, from, to);

		pct[m] = percent_of(p, m, c);
		if (pct[m] > max)
			max = pct[m];
		if (o->show_total_period)
			printf(" %11" PRIu64, c.period);
		else if (o->show_nr_samples)
			printf(" %7" PRIu64, c.nr_samples);
		else
			printf(" %7.2f", pct[m]);
	}
	printf(" : ");
	printf("  %*" PRIx64 ":%s", p->addr_width, addr, text);
	if (o->print_line && max > 0.5) {
		srcline_of(p, from, path, sizeof(path));
		if (!p->a->prev_path || strcmp(p->a->prev_path, path)) {
			printf(" // %s", path);
			snprintf(p->a->prev_path_buf, sizeof(p->a->prev_path_buf), "%s", path);
			p->a->prev_path = p->a->prev_path_buf;
		}
	}
	putchar('\n');
	p->lineno++;
}

/* An instruction row: its text after "addr:" in objdump's line, and the extra lines
 * --asm-raw gives long instructions. */
static void print_insn(struct sym_print *p, size_t i, uint64_t next_off)
{
	const struct tally_row *r = &p->x->rows[i];
	const struct annotate_opts *o = p->a->o;
	char insn[9000], raw[128], line[9200], out[16384];
	size_t nbytes = r->insn.size < sizeof(r->insn.bytes) ? r->insn.size : sizeof(r->insn.bytes);
	size_t first = nbytes < RAW_PER_LINE ? nbytes : RAW_PER_LINE;
	uint64_t end = o->asm_raw && nbytes > RAW_PER_LINE ? r->offset + RAW_PER_LINE : next_off;

	insn_text(r, insn, sizeof(insn));
	if (o->asm_raw) {
		raw_bytes(r->insn.bytes, first, raw, sizeof(raw));
		snprintf(line, sizeof(line), "%" PRIx64 ":\t%s\t%s", r->insn.addr, raw, insn);
	} else {
		snprintf(line, sizeof(line), "%" PRIx64 ":\t%s", r->insn.addr, insn);
	}
	strim_expand(line, strlen(line), out, sizeof(out));
	insn_line(p, r->insn.addr, r->offset, end, strchr(out, ':') + 1);
	for (size_t k = first; o->asm_raw && k < nbytes; k += RAW_PER_LINE) {
		size_t n = nbytes - k < RAW_PER_LINE ? nbytes - k : RAW_PER_LINE;
		uint64_t off = r->offset + k;

		raw_bytes(r->insn.bytes + k, n, raw, sizeof(raw));
		snprintf(line, sizeof(line), "%" PRIx64 ":\t%s", r->insn.addr + k, raw);
		strim_expand(line, strlen(line), out, sizeof(out));
		insn_line(p, r->insn.addr + k, off,
			  k + RAW_PER_LINE < nbytes ? off + RAW_PER_LINE : next_off,
			  strchr(out, ':') + 1);
	}
}

/* perf's line_nr: a location row with an absolute path sets it (and is not shown),
 * every other line of objdump's output is shown and counts one. */
static void print_location(struct sym_print *p, const struct tally_row *r)
{
	char buf[4200];

	if (r->discriminator)
		snprintf(buf, sizeof(buf), "%s:%u (discriminator %u)", r->text, r->line,
			 r->discriminator);
	else
		snprintf(buf, sizeof(buf), "%s:%u", r->text, r->line);
	if (buf[0] == '/' && strchr(buf, ':') && strchr(buf, ':') > buf + 1) {
		p->lineno = (int)r->line;
		return;
	}
	text_line(p, buf, strlen(buf));
}

static void print_rows(struct sym_print *p)
{
	const struct tally_listing *x = p->x;
	char buf[4200];

	for (size_t i = 0; i < x->nr_rows; i++) {
		const struct tally_row *r = &x->rows[i];

		switch (r->kind) {
		case TALLY_ROW_FUNCTION:
			snprintf(buf, sizeof(buf), r->full ? "%s:" : "%s():", r->text);
			text_line(p, buf, strlen(buf));
			break;
		case TALLY_ROW_LOCATION:
			print_location(p, r);
			break;
		case TALLY_ROW_SOURCE:
			text_line(p, r->text, r->len);
			break;
		case TALLY_ROW_SYMBOL:
			text_line(p, "", 0);
			snprintf(buf, sizeof(buf), "%016" PRIx64 " <%s>:", r->insn.addr, r->text);
			text_line(p, buf, strlen(buf));
			break;
		case TALLY_ROW_INSN: {
			uint64_t next = x->end - x->start;

			for (size_t k = i + 1; k < x->nr_rows; k++) {
				if (x->rows[k].kind == TALLY_ROW_INSN) {
					next = x->rows[k].offset;
					break;
				}
			}
			print_insn(p, i, next);
			break;
		}
		}
	}
}

/* The widest address perf prints: the last line with an address. */
static int addr_width(const struct sym_print *p)
{
	char buf[32];

	for (size_t i = p->x->nr_rows; i > 0; i--) {
		const struct tally_row *r = &p->x->rows[i - 1];

		if (r->kind == TALLY_ROW_INSN) {
			uint64_t last = r->insn.addr;
			size_t n = r->insn.size < 16 ? r->insn.size : 16;

			if (p->a->o->asm_raw && n > RAW_PER_LINE)
				last += (n - 1) / RAW_PER_LINE * RAW_PER_LINE;
			return snprintf(buf, sizeof(buf), "%" PRIx64, last);
		}
	}
	return 0;
}

static void event_name(struct annotate *a, size_t ev, size_t nm, char *buf, size_t cap)
{
	const struct tally_data_event *e = tally_data__event(a->data, ev);
	size_t off;

	if (nm < 2) {
		snprintf(buf, cap, "%s", e->name ? e->name : "unknown");
		return;
	}
	/* (a forced group is named by its events alone: "cpu-clock, task-clock") */
	off = a->forced_leader ? 0 : (size_t)snprintf(buf, cap, "anon group { ");
	for (size_t k = 0; k < nm && off < cap; k++) {
		const struct tally_data_event *m = tally_data__event(a->data, ev + k);

		off += (size_t)snprintf(buf + off, cap - off, "%s%s", k ? ", " : "",
					m->name ? m->name : "unknown");
	}
	if (off < cap && !a->forced_leader)
		snprintf(buf + off, cap - off, " }");
}

/* perf's graph_dotted_line: the dashes under the header are at most this many */
static const char dashes[] =
	"---------------------------------------------------------------------"
	"---------------------------------------------------------------------"
	"---------------------------------------------------------------------";

static void print_header(struct sym_print *p)
{
	const struct annotate_opts *o = p->a->o;
	const char *dso = tally_dso__name(tally_annotated__dso(p->s));
	const char *shown = o->full_paths || !strrchr(dso, '/') ? dso : strrchr(dso, '/') + 1;
	int width = value_width(o) * (int)p->nm, len;
	char evname[1024];

	event_name(p->a, p->ev, p->nm, evname, sizeof(evname));
	len = printf(" %-*.*s|\tSource code & Disassembly of %s for %s (%" PRIu64 " samples, "
		     "percent: %s)\n", width, width,
		     o->show_total_period ? "Period" : o->show_nr_samples ? "Samples" : "Percent",
		     shown, evname, tally_annotated__total(p->s, p->ev).nr_samples,
		     percent_type_names[o->percent_type]);
	if (len > (int)sizeof(dashes) - 1)
		len = (int)sizeof(dashes) - 1;
	printf("%.*s----\n", len, dashes);
}

static int add_sum(struct sym_print *p, const char *path, const double *pct)
{
	for (size_t i = 0; i < p->nr_sums; i++) {
		if (!strcmp(p->sums[i].path, path)) {
			for (size_t m = 0; m < p->nm; m++)
				p->sums[i].pct[m] += pct[m];
			return 0;
		}
	}
	if (p->nr_sums == p->cap_sums) {
		size_t cap = p->cap_sums ? p->cap_sums * 2 : 16;
		struct src_sum *v = realloc(p->sums, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->sums = v;
		p->cap_sums = cap;
	}
	snprintf(p->sums[p->nr_sums].path, sizeof(p->sums[0].path), "%s", path);
	memcpy(p->sums[p->nr_sums].pct, pct, p->nm * sizeof(*pct));
	p->nr_sums++;
	return 0;
}

static int by_sum(const void *x, const void *y, void *arg)
{
	const struct src_sum *a = x, *b = y;
	size_t nm = *(const size_t *)arg;

	for (size_t m = 0; m < nm; m++)
		if (a->pct[m] != b->pct[m])
			return a->pct[m] > b->pct[m] ? -1 : 1;
	return -strcmp(a->path, b->path);	/* perf: equal sums in reverse path order */
}

/* -l: "Sorted summary for file", the source lines of the instructions over 0.5%. */
static int print_summary(struct sym_print *p)
{
	const struct tally_listing *x = p->x;

	for (size_t i = 0; i < x->nr_rows; i++) {
		const struct tally_row *r = &x->rows[i];
		double pct[16], max = 0.0;
		uint64_t next = x->end - x->start;
		char path[1024];

		if (r->kind != TALLY_ROW_INSN)
			continue;
		for (size_t k = i + 1; k < x->nr_rows; k++) {
			if (x->rows[k].kind == TALLY_ROW_INSN) {
				next = x->rows[k].offset;
				break;
			}
		}
		for (size_t m = 0; m < p->nm; m++) {
			pct[m] = percent_of(p, m, tally_annotated__range(p->s, p->ev + m, r->offset,
									  next));
			if (pct[m] > max)
				max = pct[m];
		}
		if (max <= 0.5)
			continue;
		srcline_of(p, r->offset, path, sizeof(path));
		if (add_sum(p, path, pct))
			return -ENOMEM;
	}
	qsort_r(p->sums, p->nr_sums, sizeof(*p->sums), by_sum, &p->nm);
	printf("\nSorted summary for file %s\n", tally_dso__name(tally_annotated__dso(p->s)));
	printf("----------------------------------------------\n\n");
	if (!p->nr_sums)
		printf(" Nothing higher than %1.1f%%\n", 0.5);
	for (size_t i = 0; i < p->nr_sums; i++) {
		for (size_t m = 0; m < p->nm; m++)
			printf(" %7.2f", p->sums[i].pct[m]);
		printf(" %s\n", p->sums[i].path);
	}
	return 0;
}

static bool warned(struct annotate *a, const struct tally_dso *d)
{
	for (size_t i = 0; i < a->nr_warned; i++)
		if (a->warned[i] == d)
			return true;
	return false;
}

static void warn_dso(struct annotate *a, const struct tally_dso *d, const struct tally_symbol *sym,
		     const char *why)
{
	const struct tally_dso **v = realloc(a->warned, (a->nr_warned + 1) * sizeof(*v));

	if (v) {
		a->warned = v;
		a->warned[a->nr_warned++] = d;
	}
	if (!a->o->skip_missing && !a->o->quiet)
		cli_error("cannot annotate %s (%s): %s", sym->name ? sym->name : "?",
			  tally_dso__short_name(d), why);
}

static int print_symbol(struct annotate *a, size_t ev, size_t nm, struct tally_annotated *s)
{
	struct tally_dso *d = tally_annotated__dso(s);
	const struct tally_symbol *sym = tally_annotated__symbol(s);
	struct sym_print p = { .a = a, .ev = ev, .nm = nm, .s = s };
	char why[1024], buf[1200];
	int err;

	if (warned(a, d))
		return 0;
	err = tally_lister__list(a->lister, d, sym, &p.x, why, sizeof(why));
	if (err == -ENOMEM)
		return err;
	if (err) {
		warn_dso(a, d, sym, why);
		return 0;
	}
	p.addr_width = addr_width(&p);
	if (a->o->print_line && print_summary(&p)) {
		tally_listing__delete(p.x);
		free(p.sums);
		return -ENOMEM;
	}
	print_header(&p);
	/* what objdump prints before the function: perf shows it, numbered */
	text_line(&p, "", 0);
	text_line(&p, "", 0);
	text_line(&p, "", 0);
	snprintf(buf, sizeof(buf), "Disassembly of section %s:", p.x->section);
	text_line(&p, buf, strlen(buf));
	text_line(&p, "", 0);
	if (p.x->name && p.x->name_off)
		snprintf(buf, sizeof(buf), "%016" PRIx64 " <%s%c0x%" PRIx64 ">:", p.x->start,
			 p.x->name, p.x->name_off < 0 ? '-' : '+',
			 p.x->name_off < 0 ? (uint64_t)-p.x->name_off : (uint64_t)p.x->name_off);
	else
		snprintf(buf, sizeof(buf), "%016" PRIx64 " <%s>:", p.x->start,
			 p.x->name ? p.x->name : sym->name ? sym->name : "");
	text_line(&p, buf, strlen(buf));
	print_rows(&p);
	a->nr_printed++;
	tally_listing__delete(p.x);
	free(p.sums);
	return 0;
}

static int print_event(struct annotate *a, size_t ev, size_t nm)
{
	struct tally_annotated **v;
	size_t nr;
	struct tally_annotate_count total = tally_annotate__event_total(a->ann, ev);
	int err = tally_annotate__symbols(a->ann, ev, &v, &nr);

	if (err)
		return err;
	for (size_t i = 0; i < nr && !err; i++) {
		if (a->o->percent_limit > 0 && total.period &&
		    100.0 * (double)tally_annotated__total(v[i], ev).period / (double)total.period <
			    a->o->percent_limit)
			continue;
		err = print_symbol(a, ev, nm, v[i]);
	}
	free(v);
	return err;
}

static size_t group_size(struct annotate *a, size_t ev)
{
	const struct tally_data_event *e = tally_data__event(a->data, ev);

	if (a->forced_leader)
		return ev == 0 && a->nr_ev <= 16 ? a->nr_ev : 1;
	if (!a->group_view || e->nr_members < 2 || e->leader != (int)ev)
		return 1;
	if ((size_t)e->nr_members > 16 || ev + (size_t)e->nr_members > a->nr_ev)
		return 1;
	return (size_t)e->nr_members;
}

static int print_all(struct annotate *a)
{
	for (size_t ev = 0; ev < a->nr_ev; ev++) {
		const struct tally_data_event *e = tally_data__event(a->data, ev);
		int err;

		if (!tally_annotate__event_total(a->ann, ev).nr_samples)
			continue;
		if (a->group_view && (a->forced_leader ? ev != 0 : e->leader != (int)ev))
			continue;	/* a member: a column of its leader's listing */
		err = print_event(a, ev, group_size(a, ev));
		if (err)
			return err;
	}
	return 0;
}

/* Nothing printed: say why instead of perf's silence. */
static void explain_nothing(struct annotate *a)
{
	uint64_t total = 0;

	for (size_t ev = 0; ev < a->nr_ev; ev++)
		total += tally_annotate__event_total(a->ann, ev).nr_samples;
	for (size_t i = 0; i < a->nr_nosym; i++)
		cli_error("%" PRIu64 " samples in %s found no symbol: the binary is not there (or "
			  "is another build) and the build-id cache has no copy, or it has no "
			  "symbol table", a->nosym[i].nr, tally_dso__name(a->nosym[i].dso));
	if (a->nr_warned || a->nr_nosym)
		return;		/* the reasons went out already */
	if (a->o->symbol)
		cli_error("%s: no samples in a symbol named '%s'%s", a->o->input, a->o->symbol,
			  a->o->dsos ? " in the dsos asked for" : "");
	else if (!total)
		cli_error("%s: no samples %s", a->o->input,
			  a->o->dsos || a->o->cpus ? "pass the --dsos/--cpu filters" : "at all");
	else
		cli_error("%s: none of the %" PRIu64 " samples fell in a known symbol (binaries "
			  "without symbols, or missing: see 'tally report --sort dso')",
			  a->o->input, total);
}

static int annotate_run(struct annotate *a)
{
	struct tally_session_opts so = { .symfs = a->o->symfs };
	struct tally_lister_opts lo = {
		.syntax = a->o->syntax,
		.source = a->o->source,
		.lines = true,
		.vmlinux = a->o->vmlinux,
	};
	struct tally_data_error derr = { 0 };
	int ret;

	a->nr_ev = tally_data__nr_events(a->data);
	for (size_t i = 0; i < a->nr_ev; i++) {
		if (tally_data__event(a->data, i)->nr_members > 1)
			a->group_view = a->o->group != 0;
		if (a->o->cpus && !(tally_data__event(a->data, i)->attr.sample_type & PERF_SAMPLE_CPU)) {
			cli_error("--cpu: %s records no cpu in its samples (record with -a, -C or "
				  "--sample-cpu to select by cpu)", a->o->input);
			return 1;
		}
	}
	if (a->o->group == 1 && !a->group_view && a->nr_ev > 1 && a->nr_ev <= 16)
		a->group_view = a->forced_leader = true;
	if (report_session_new(&a->session, a->data, &so) ||
	    tally_annotate__new(&a->ann, a->nr_ev ? a->nr_ev : 1) ||
	    tally_lister__new(&a->lister, a->session, &lo)) {
		cli_error("out of memory");
		return 1;
	}
	ret = tally_data__for_each(a->data, TALLY_DATA_ORDERED, on_record, a, &derr);
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		return 1;
	}
	if (ret < 0) {
		if (derr.msg[0])
			cli_error("%s: file offset %#" PRIx64 ": %s", a->o->input, derr.offset,
				  derr.msg);
		else
			cli_error("%s: reading failed: %s", a->o->input, strerror(-ret));
		return 1;
	}
	if (tally_data__truncated(a->data) && !a->o->quiet)
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; annotated the "
			 "complete records before it", a->o->input, tally_data__truncated(a->data));
	if (tally_data__nr_unknown_records(a->data) && !a->o->quiet)
		cli_warn("%s: skipped %" PRIu64 " record(s) of unknown type (a newer perf?)",
			 a->o->input, tally_data__nr_unknown_records(a->data));
	if (!a->o->quiet)
		report_kernel_symbols_note(a->session);
	{
		uint64_t total = 0;

		for (size_t ev = 0; ev < a->nr_ev; ev++)
			total += tally_annotate__event_total(a->ann, ev).nr_samples;
		if (!total && !a->o->symbol && !a->o->dsos && !a->o->cpus) {
			cli_error("%s: the file has no samples", a->o->input);
			return 1;
		}
	}
	if (print_all(a)) {
		cli_error("out of memory");
		return 1;
	}
	if (!a->nr_printed) {
		explain_nothing(a);
		cli_finish_output(stdout, "the annotation");
		return 1;
	}
	return cli_finish_output(stdout, "the annotation");
}

static int annotate_init(void *opts)
{
	struct annotate_opts *o = opts;

	o->input = "perf.data";
	o->source = true;
	o->group = -1;
	return 0;
}

static void annotate_exit(void *opts)
{
	struct annotate_opts *o = opts;

	strlist_free(o->dsos);
	tally_cpumap__delete(o->cpus);
}

static int annotate_exec(void *opts, const struct cli_args *args)
{
	struct annotate_opts *o = opts;
	struct annotate a = { .o = o };
	int status = 1;

	if (args->argc && o->symbol)
		return cli_usage_error(&cmd_annotate, "unexpected argument '%s' (one symbol name at "
				       "most; use -i to name the input file)", args->argv[0]);
	if (args->argc)
		o->symbol = args->argv[0];	/* perf takes a lone argument as the symbol */
	if (o->show_total_period && o->show_nr_samples)
		return cli_usage_error(&cmd_annotate, "--show-total-period and -n/--show-nr-samples: "
				       "one column at a time (as perf)");
	if (report_open(&a.data, o->input, o->force))
		goto out;
	status = annotate_run(&a);
out:
	tally_lister__delete(a.lister);
	tally_annotate__delete(a.ann);
	tally_session__delete(a.session);
	tally_data__delete(a.data);
	free(a.warned);
	return status;
}

const struct cli_command cmd_annotate = {
	.name = "annotate",
	.summary = "Read perf.data and display annotated code",
	.usage = annotate_usage,
	.opts = annotate_options,
	.max_args = 1,
	.args_hint = "(one symbol name at most; use -i to name the input file)",
	.size = sizeof(struct annotate_opts),
	.init = annotate_init,
	.exec = annotate_exec,
	.exit = annotate_exit,
};
