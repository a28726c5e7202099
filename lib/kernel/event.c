/*
 * The event-string parser: perf 6.1's -e syntax into struct tally_event.
 *
 * A hand-written recursive-descent parser over the input string. Grammar:
 *
 *   events  := item (',' item)*
 *   item    := [NAME] '{' event (',' event)* '}' [':' MODS] | event
 *   event   := 'mem:' ADDR ['/' LEN] [':' ACCESS] [':' MODS]
 *            | HEAD '/' TERMS '/' [':' MODS]        (PMU, or symbolic/raw/cache/tp + terms)
 *            | HEAD [':' MODS]                      (symbolic, cache, raw, alias, libpfm4)
 *            | SYS ':' EVENT [':' MODS]             (tracepoint, globs allowed)
 *            | TYPE ':' CONFIG                      (numeric)
 *
 * Each parsed item appends one or more events (globs, uncore PMUs with several
 * instances); on any error the list is rolled back to what it was before the call.
 * The attr values follow perf 6.1: event_attr_init() (size, exclude_guest=1), the
 * modifier rules of get_event_modifier(), the hw-cache rules, breakpoint defaults,
 * tracepoint defaults (sample_period 1, RAW|TIME|CPU|PERIOD), format terms ORed into
 * config fields after the generic config= terms.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/hw_breakpoint.h>

#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/pmu.h>

#include "internal/event.h"
#include "internal/sys.h"
#include "internal/util.h"

#define MOD_CHARS "ukhGHIpPSDeWb"

struct parser {
	struct tally_evlist *list;
	const char *in;
	struct tally_parse_error *err;
	struct tally_parse_error local;
};

struct term {
	const char *name;	/* points into the input or into an alias string */
	size_t nlen;
	const char *sval;	/* value text; NULL when bare ("edge", "no-inherit") */
	size_t vlen;
	uint64_t val;		/* numeric value (1 when bare) */
	bool is_num;
	size_t pos, len, vpos;	/* for errors: position in the user's input */
	bool from_alias;
};

struct terms {
	struct term *t;
	size_t nr, cap;
};

__attribute__((format(printf, 5, 6)))
static int fail(struct parser *p, size_t pos, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	p->err->pos = pos;
	p->err->len = len ? len : 1;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return code;
}

static char *strndup_safe(const char *s, size_t n)
{
	char *r = malloc(n + 1);

	if (r) {
		memcpy(r, s, n);
		r[n] = 0;
	}
	return r;
}

static void event_exit(struct tally_event *ev)
{
	free(ev->name);
	free(ev->pmu_name);
	free(ev->group_name);
	tally_cpumap__delete(ev->cpus);
	free(ev->call_graph);
	free(ev->driver_config);
	free(ev->metric_id);
	free(ev->unit);
	free(ev->tp_sys);
	free(ev->tp_name);
}

int tally_evlist__new(struct tally_evlist **out)
{
	struct tally_evlist *l = calloc(1, sizeof(*l));

	*out = l;
	return l ? 0 : -ENOMEM;
}

void tally_evlist__delete(struct tally_evlist *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->nr; i++)
		event_exit(&list->ev[i]);
	free(list->ev);
	free(list->sysfs_root);
	free(list->tracefs);
	tally_pmus__delete(list->pmus);
	free(list);
}

int tally_evlist__set_sysfs_root(struct tally_evlist *list, const char *root)
{
	char *r = root ? strdup(root) : NULL;

	if (root && !r)
		return -ENOMEM;
	free(list->sysfs_root);
	list->sysfs_root = r;
	tally_pmus__delete(list->pmus);
	list->pmus = NULL;
	return 0;
}

int tally_evlist__set_tracefs(struct tally_evlist *list, const char *dir)
{
	char *r = dir ? strdup(dir) : NULL;

	if (dir && !r)
		return -ENOMEM;
	free(list->tracefs);
	list->tracefs = r;
	return 0;
}

void tally_evlist__set_flags(struct tally_evlist *list, int flags)
{
	list->flags = flags;
}

static const struct tally_pmus *get_pmus(struct tally_evlist *list)
{
	if (!list->pmus) {
		struct tally_pmus *pmus = NULL;

		if (tally_pmus__new(list->sysfs_root, &pmus))
			return NULL;
		list->pmus = pmus;
	}
	return list->pmus;
}

/* Append a default-initialised event (perf's event_attr_init()). Returns its index. */
static int new_event(struct parser *p)
{
	struct tally_evlist *l = p->list;
	struct tally_event *ev;

	if ((l->nr & (l->nr + 1)) == 0 || !l->ev) {
		size_t cap = l->nr ? (l->nr + 1) * 2 : 4;
		struct tally_event *n = realloc(l->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ev = n;
	}
	ev = &l->ev[l->nr];
	memset(ev, 0, sizeof(*ev));
	ev->attr.size = sizeof(ev->attr);
	ev->attr.exclude_guest = 1;
	ev->leader = (int)l->nr;
	ev->nr_members = 1;
	ev->scale = 1.0;
	ev->time = -1;
	ev->overwrite = -1;
	return (int)l->nr++;
}

static int set_str(char **dst, const char *s, size_t n)
{
	char *v = strndup_safe(s, n);

	if (!v)
		return -ENOMEM;
	free(*dst);
	*dst = v;
	return 0;
}

/* ---- numbers ---------------------------------------------------------------- */

/* perf's lexer numbers: decimal or 0x hex, the whole span. */
static bool parse_u64(const char *s, size_t n, uint64_t *val)
{
	uint64_t v = 0;
	size_t i = 0;
	unsigned base = 10;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i >= n)
		return false;
	for (; i < n; i++) {
		unsigned d;
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*val = v;
	return true;
}

static bool is_hex_span(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* ---- modifiers -------------------------------------------------------------- */

struct mods {
	int eu, ek, eh, eH, eG, eI, precise, exclude_GH;
	bool precise_max, sample_read, pinned, exclusive, weak, bpf, exclude_given;
};

static int check_mods(struct parser *p, size_t pos, size_t len)
{
	const char *s = p->in + pos;
	int precise = 0;

	if (!len)
		return fail(p, pos, 1, -EINVAL, "missing modifier after ':' (expected some of %s)",
			    MOD_CHARS);
	for (size_t i = 0; i < len; i++) {
		if (!strchr(MOD_CHARS, s[i]) || !s[i])
			return fail(p, pos + i, 1, -EINVAL,
				    "unknown modifier '%c' (valid: u k h G H I p P S D e W b)", s[i]);
		if (s[i] == 'p') {
			if (++precise > 3)
				return fail(p, pos + i, 1, -EINVAL,
					    "too many 'p' modifiers: precise_ip goes up to 3 (ppp)");
			continue;
		}
		if (memchr(s + i + 1, s[i], len - i - 1))
			return fail(p, pos + i, 1, -EINVAL, "modifier '%c' given twice", s[i]);
	}
	return 0;
}

/* perf 6.1 get_event_modifier(): starts from @ev's bits for a group modifier, from
 * zero for an event modifier. */
static void compute_mods(const char *s, size_t len, const struct tally_event *ev, struct mods *m)
{
	int exclude;

	memset(m, 0, sizeof(*m));
	if (ev) {
		m->eu = ev->attr.exclude_user;
		m->ek = ev->attr.exclude_kernel;
		m->eh = ev->attr.exclude_hv;
		m->eH = ev->attr.exclude_host;
		m->eG = ev->attr.exclude_guest;
		m->eI = ev->attr.exclude_idle;
		m->precise = ev->attr.precise_ip;
		m->pinned = ev->attr.pinned;
		m->exclusive = ev->attr.exclusive;
		m->exclude_GH = ev->exclude_GH;
	}
	exclude = m->eu | m->ek | m->eh;
	for (size_t i = 0; i < len; i++) {
		switch (s[i]) {
		case 'u':
			if (!exclude)
				exclude = m->eu = m->ek = m->eh = 1;
			if (!m->exclude_GH)
				m->eG = 1;
			m->eu = 0;
			m->exclude_given = true;
			break;
		case 'k':
			if (!exclude)
				exclude = m->eu = m->ek = m->eh = 1;
			m->ek = 0;
			m->exclude_given = true;
			break;
		case 'h':
			if (!exclude)
				exclude = m->eu = m->ek = m->eh = 1;
			m->eh = 0;
			m->exclude_given = true;
			break;
		case 'G':
			if (!m->exclude_GH)
				m->exclude_GH = m->eG = m->eH = 1;
			m->eG = 0;
			break;
		case 'H':
			if (!m->exclude_GH)
				m->exclude_GH = m->eG = m->eH = 1;
			m->eH = 0;
			break;
		case 'I':
			m->eI = 1;
			break;
		case 'p':
			m->precise++;
			if (!m->exclude_GH)
				m->eG = 1;
			break;
		case 'P':
			m->precise_max = true;
			break;
		case 'S':
			m->sample_read = true;
			break;
		case 'D':
			m->pinned = true;
			break;
		case 'e':
			m->exclusive = true;
			break;
		case 'W':
			m->weak = true;
			break;
		case 'b':
			m->bpf = true;
			break;
		}
	}
}

static void apply_mods(struct tally_evlist *l, size_t idx, const struct mods *m)
{
	struct tally_event *ev = &l->ev[idx];

	ev->attr.exclude_user = m->eu;
	ev->attr.exclude_kernel = m->ek;
	ev->attr.exclude_hv = m->eh;
	ev->attr.precise_ip = m->precise > 3 ? 3 : m->precise;
	ev->attr.exclude_host = m->eH;
	ev->attr.exclude_guest = m->eG;
	ev->attr.exclude_idle = m->eI;
	ev->exclude_GH = m->exclude_GH;
	ev->sample_read = m->sample_read;
	ev->precise_max = m->precise_max;
	ev->weak_group = m->weak;
	ev->bpf_counter = m->bpf;
	if (m->exclude_given)
		ev->exclude_set = true;
	if (ev->leader == (int)idx) {
		ev->attr.pinned = m->pinned;
		ev->attr.exclusive = m->exclusive;
	}
}

/* ---- terms ------------------------------------------------------------------ */

static void terms_exit(struct terms *ts)
{
	free(ts->t);
	memset(ts, 0, sizeof(*ts));
}

static struct term *terms_push(struct terms *ts)
{
	if (ts->nr == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 8;
		struct term *n = realloc(ts->t, cap * sizeof(*n));

		if (!n)
			return NULL;
		ts->t = n;
		ts->cap = cap;
	}
	memset(&ts->t[ts->nr], 0, sizeof(ts->t[0]));
	return &ts->t[ts->nr++];
}

static bool term_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/*
 * Split "a=1,b,c=str" (s[0..n)) into terms. @ipos is the input position of s[0] for
 * errors (or of the user term an alias came from, with @alias set).
 */
static int parse_terms(struct parser *p, const char *s, size_t n, size_t ipos, bool alias,
		       size_t alias_len, struct terms *ts)
{
	size_t i = 0;

	while (i < n) {
		size_t start = i, nend, vstart, vend;
		struct term *t;

		while (i < n && term_name_char(s[i]))
			i++;
		nend = i;
		if (nend == start)
			return fail(p, alias ? ipos : ipos + start, alias ? alias_len : 1, -EINVAL,
				    "expected a term name (like event=0x3c or period=1000)%s",
				    alias ? " in the sysfs alias" : "");
		t = terms_push(ts);
		if (!t)
			return -ENOMEM;
		t->name = s + start;
		t->nlen = nend - start;
		t->pos = alias ? ipos : ipos + start;
		t->from_alias = alias;
		t->val = 1;
		t->is_num = true;
		if (i < n && s[i] == '=') {
			i++;
			vstart = i;
			if (i < n && s[i] == '\'') {
				/* quoted string value */
				const char *q = memchr(s + i + 1, '\'', n - i - 1);

				if (!q)
					return fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
						    "unterminated quote");
				vstart = i + 1;
				vend = (size_t)(q - s);
				i = vend + 1;
			} else {
				while (i < n && s[i] != ',')
					i++;
				vend = i;
			}
			if (vend == vstart)
				return fail(p, alias ? ipos : ipos + vstart, 1, -EINVAL,
					    "missing value after '%.*s='", (int)t->nlen, t->name);
			t->sval = s + vstart;
			t->vlen = vend - vstart;
			t->vpos = alias ? ipos : ipos + vstart;
			t->is_num = parse_u64(t->sval, t->vlen, &t->val);
			if (!t->is_num && isdigit((unsigned char)t->sval[0]) &&
			    strspn(t->sval, "0123456789abcdefABCDEFxX") >= t->vlen)
				return fail(p, t->vpos, t->vlen, -ERANGE,
					    "bad number '%.*s' (decimal or 0x hex, at most 64 bits)",
					    (int)t->vlen, t->sval);
		} else {
			t->vpos = t->pos;
		}
		t->len = alias ? alias_len : i - start;
		if (i < n) {
			if (s[i] != ',')
				return fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
					    "expected ',' or '/' after a term");
			i++;
			if (i == n)
				return fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
					    "expected a term after ','");
		}
	}
	return 0;
}

static bool term_is(const struct term *t, const char *name)
{
	return strlen(name) == t->nlen && !strncmp(t->name, name, t->nlen);
}

static const char *const generic_terms[] = {
	"config", "config1", "config2", "config3", "name", "period", "freq", "branch_type",
	"time", "call-graph", "stack-size", "max-stack", "inherit", "no-inherit", "overwrite",
	"no-overwrite", "driver-config", "percore", "aux-output", "aux-sample-size",
	"metric-id",
};

static bool is_generic(const struct term *t)
{
	for (size_t i = 0; i < TLY_ARRAY_SIZE(generic_terms); i++)
		if (term_is(t, generic_terms[i]))
			return true;
	return false;
}

static int need_num(struct parser *p, const struct term *t)
{
	if (t->is_num)
		return 0;
	return fail(p, t->vpos, t->vlen, -EINVAL, "'%.*s' needs a number, not '%.*s'",
		    (int)t->nlen, t->name, (int)t->vlen, t->sval);
}

static int need_str(struct parser *p, const struct term *t)
{
	if (t->sval)
		return 0;
	return fail(p, t->pos, t->len, -EINVAL, "'%.*s' needs a value ('%.*s=…')",
		    (int)t->nlen, t->name, (int)t->nlen, t->name);
}

static const struct {
	const char *name;
	uint64_t bit;
} branch_types[] = {
	{ "u", PERF_SAMPLE_BRANCH_USER },
	{ "k", PERF_SAMPLE_BRANCH_KERNEL },
	{ "hv", PERF_SAMPLE_BRANCH_HV },
	{ "any", PERF_SAMPLE_BRANCH_ANY },
	{ "any_call", PERF_SAMPLE_BRANCH_ANY_CALL },
	{ "any_ret", PERF_SAMPLE_BRANCH_ANY_RETURN },
	{ "ind_call", PERF_SAMPLE_BRANCH_IND_CALL },
	{ "abort_tx", PERF_SAMPLE_BRANCH_ABORT_TX },
	{ "in_tx", PERF_SAMPLE_BRANCH_IN_TX },
	{ "no_tx", PERF_SAMPLE_BRANCH_NO_TX },
	{ "cond", PERF_SAMPLE_BRANCH_COND },
	{ "ind_jmp", PERF_SAMPLE_BRANCH_IND_JUMP },
	{ "call", PERF_SAMPLE_BRANCH_CALL },
	{ "save_type", PERF_SAMPLE_BRANCH_TYPE_SAVE },
	{ "stack", PERF_SAMPLE_BRANCH_CALL_STACK },
	{ "hw_index", PERF_SAMPLE_BRANCH_HW_INDEX },
	{ "priv", 1ULL << 18 /* PERF_SAMPLE_BRANCH_PRIV_SAVE */ },
};

static int parse_branch_type(struct parser *p, const struct term *t, uint64_t *out)
{
	const char *s = t->sval;
	size_t n = t->vlen, i = 0;
	uint64_t v = 0;

	while (i < n) {
		size_t j = i, k;

		while (j < n && s[j] != '|')
			j++;
		for (k = 0; k < TLY_ARRAY_SIZE(branch_types); k++)
			if (strlen(branch_types[k].name) == j - i &&
			    !strncmp(s + i, branch_types[k].name, j - i))
				break;
		if (k == TLY_ARRAY_SIZE(branch_types))
			return fail(p, t->vpos + i, j - i, -EINVAL,
				    "unknown branch type '%.*s' (any, any_call, any_ret, ind_call, "
				    "cond, call, ind_jmp, u, k, hv, save_type, stack, …)",
				    (int)(j - i), s + i);
		v |= branch_types[k].bit;
		i = j + 1;
	}
	*out = v;
	return 0;
}

/* A generic term that sets attr bits. 1 when @t is none of these. */
static int apply_attr_term(struct parser *p, struct tally_event *ev, const struct term *t)
{
	int err;

	if (term_is(t, "config")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.config = t->val;
	} else if (term_is(t, "config1")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.config1 = t->val;
	} else if (term_is(t, "config2")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.config2 = t->val;
	} else if (term_is(t, "config3")) {
		if ((err = need_num(p, t)))
			return err;
		ev->config3 = t->val;
	} else if (term_is(t, "period")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.sample_period = t->val;
		ev->attr.freq = 0;
		ev->period_set = true;
		ev->freq_set = false;
	} else if (term_is(t, "freq")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.sample_freq = t->val;
		ev->attr.freq = 1;
		ev->freq_set = true;
		ev->period_set = false;
	} else if (term_is(t, "branch_type")) {
		uint64_t bt = 0;

		if ((err = need_str(p, t)) || (err = parse_branch_type(p, t, &bt)))
			return err;
		ev->attr.branch_sample_type = bt;
		if (bt)
			ev->attr.sample_type |= PERF_SAMPLE_BRANCH_STACK;
	} else if (term_is(t, "time")) {
		if ((err = need_num(p, t)))
			return err;
		ev->time = t->val != 0;
	} else if (term_is(t, "inherit")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.inherit = t->val != 0;
		ev->inherit_set = true;
	} else if (term_is(t, "no-inherit")) {
		ev->attr.inherit = 0;
		ev->inherit_set = true;
	} else if (term_is(t, "aux-output")) {
		if ((err = need_num(p, t)))
			return err;
		ev->attr.aux_output = t->val != 0;
	} else if (term_is(t, "aux-sample-size")) {
		if ((err = need_num(p, t)))
			return err;
		if (t->val > UINT32_MAX)
			return fail(p, t->vpos, t->vlen, -ERANGE, "aux-sample-size too large");
		ev->attr.aux_sample_size = (uint32_t)t->val;
	} else {
		return 1;
	}
	return 0;
}

/* A generic term that is policy, not attr bits: names, call graphs, stack sizes. */
static int apply_policy_term(struct parser *p, struct tally_event *ev, const struct term *t)
{
	int err;

	if (term_is(t, "name")) {
		if ((err = need_str(p, t)))
			return err;
		if (set_str(&ev->name, t->sval, t->vlen))
			return -ENOMEM;
		ev->name_set = true;
	} else if (term_is(t, "call-graph")) {
		static const char *const modes[] = { "fp", "dwarf", "lbr", "no" };
		size_t k;

		if ((err = need_str(p, t)))
			return err;
		for (k = 0; k < TLY_ARRAY_SIZE(modes); k++)
			if (strlen(modes[k]) == t->vlen && !strncmp(t->sval, modes[k], t->vlen))
				break;
		if (k == TLY_ARRAY_SIZE(modes))
			return fail(p, t->vpos, t->vlen, -EINVAL,
				    "unknown call-graph mode '%.*s' (fp, dwarf, lbr or no; "
				    "the dwarf stack size goes in stack-size=)",
				    (int)t->vlen, t->sval);
		if (set_str(&ev->call_graph, modes[k], strlen(modes[k])))
			return -ENOMEM;
	} else if (term_is(t, "stack-size")) {
		if ((err = need_num(p, t)))
			return err;
		if (t->val > UINT32_MAX)
			return fail(p, t->vpos, t->vlen, -ERANGE, "stack-size too large");
		ev->stack_size = (uint32_t)t->val;
	} else if (term_is(t, "max-stack")) {
		if ((err = need_num(p, t)))
			return err;
		if (t->val > INT32_MAX)
			return fail(p, t->vpos, t->vlen, -ERANGE, "max-stack too large");
		ev->max_stack = (int)t->val;
	} else if (term_is(t, "overwrite")) {
		ev->overwrite = t->is_num ? t->val != 0 : 1;
	} else if (term_is(t, "no-overwrite")) {
		ev->overwrite = 0;
	} else if (term_is(t, "driver-config")) {
		if ((err = need_str(p, t)))
			return err;
		if (set_str(&ev->driver_config, t->sval, t->vlen))
			return -ENOMEM;
	} else if (term_is(t, "percore")) {
		if ((err = need_num(p, t)))
			return err;
		ev->percore = t->val != 0;
	} else if (term_is(t, "metric-id")) {
		if ((err = need_str(p, t)))
			return err;
		if (set_str(&ev->metric_id, t->sval, t->vlen))
			return -ENOMEM;
	}
	return 0;
}

/* Apply a generic term to every event in [first, last). Returns 1 when @t is not
 * generic, 0 when applied, -errno on error. */
static int apply_generic(struct parser *p, size_t first, size_t last, const struct term *t)
{
	if (!is_generic(t))
		return 1;
	for (size_t i = first; i < last; i++) {
		struct tally_event *ev = &p->list->ev[i];
		int err = apply_attr_term(p, ev, t);

		if (err == 1)
			err = apply_policy_term(p, ev, t);
		if (err)
			return err;
	}
	return 0;
}

/* Terms for events that are not PMU events: only the generic ones are valid. */
static int apply_generic_only(struct parser *p, size_t first, size_t last, size_t tpos, size_t tlen)
{
	struct terms ts = {0};
	int err = parse_terms(p, p->in + tpos, tlen, tpos, false, 0, &ts);

	for (size_t i = 0; !err && i < ts.nr; i++) {
		err = apply_generic(p, first, last, &ts.t[i]);
		if (err == 1)
			err = fail(p, ts.t[i].pos, ts.t[i].nlen, -EINVAL,
				   "unknown term '%.*s' (valid here: config, config1, config2, "
				   "config3, name, period, freq, call-graph, stack-size, max-stack, "
				   "inherit, no-inherit, time, branch_type, …)",
				   (int)ts.t[i].nlen, ts.t[i].name);
	}
	terms_exit(&ts);
	return err;
}

/* ---- PMU events ------------------------------------------------------------- */

static int caps_check(struct parser *p, const struct tally_pmu *pmu, const struct term *t)
{
	const char *cap;

	/* arm64 PMUv3 counting thresholds (FEAT_PMUv3_TH): threshold must fit the PMU. */
	if (!term_is(t, "threshold"))
		return 0;
	if (t->val > 4095)
		return fail(p, t->vpos, t->vlen ? t->vlen : t->len, -ERANGE,
			    "threshold=%llu is above 4095, the largest threshold an arm64 PMU "
			    "can count", (unsigned long long)t->val);
	cap = tally_pmu__cap(pmu, "threshold_max");
	if (cap) {
		uint64_t max;

		if (!parse_u64(cap, strlen(cap), &max))
			max = 0;
		if (max == 0)
			return fail(p, t->pos, t->len, -EOPNOTSUPP,
				    "PMU '%s' does not support counting thresholds "
				    "(caps/threshold_max is 0)", pmu->name);
		if (t->val > max)
			return fail(p, t->vpos, t->vlen ? t->vlen : t->len, -ERANGE,
				    "threshold=%llu is above this PMU's maximum of %llu "
				    "(caps/threshold_max)", (unsigned long long)t->val,
				    (unsigned long long)max);
	}
	return 0;
}

static void valid_terms_msg(const struct tally_pmu *pmu, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < pmu->nr_formats && n + 1 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s,", pmu->formats[i].name);
	if (n < len)
		snprintf(buf + n, len - n, "config,config1,config2,config3,name,period,freq,…");
}

/* Expand aliases among the user's terms into @out. */
static int expand_aliases(struct parser *p, const struct tally_pmu *pmu, struct terms *user,
			  struct terms *out, struct tally_event *proto)
{
	for (size_t i = 0; i < user->nr; i++) {
		const struct term *t = &user->t[i];
		const struct tally_pmu_alias *a = NULL;
		char name[128];

		if (!is_generic(t) && t->nlen < sizeof(name)) {
			memcpy(name, t->name, t->nlen);
			name[t->nlen] = 0;
			if (!t->sval && !tally_pmu__format(pmu, name)) {
				uint32_t type;
				const struct tly_symbol *sym;

				a = tally_pmu__alias(pmu, name);
				/* perf: a hardware symbol inside a PMU means its canonical
				 * alias (cpu/cycles/ = cpu/cpu-cycles/) */
				sym = a ? NULL : tly_symbol_lookup(t->name, t->nlen, &type);
				if (sym && type == PERF_TYPE_HARDWARE)
					a = tally_pmu__alias(pmu, sym->name);
			}
			else if (t->sval && !t->is_num && term_is(t, "event") && t->vlen < sizeof(name)) {
				memcpy(name, t->sval, t->vlen);
				name[t->vlen] = 0;
				a = tally_pmu__alias(pmu, name);
			}
		}
		if (a) {
			int err = parse_terms(p, a->terms, strlen(a->terms), t->pos, true, t->len, out);

			if (err)
				return err;
			if (a->unit && set_str(&proto->unit, a->unit, strlen(a->unit)))
				return -ENOMEM;
			proto->scale = a->scale;
			proto->per_pkg = a->per_pkg;
			proto->snapshot = a->snapshot;
			continue;
		}
		struct term *n = terms_push(out);

		if (!n)
			return -ENOMEM;
		*n = *t;
	}
	return 0;
}

static int pmu_event(struct parser *p, size_t idx, const struct tally_pmu *pmu, struct terms *user)
{
	struct tally_evlist *l = p->list;
	struct terms ts = {0};
	uint64_t cfg[4];
	int err;

	l->ev[idx].attr.type = pmu->type;
	l->ev[idx].sysfs_pmu = true;
	if (set_str(&l->ev[idx].pmu_name, pmu->name, strlen(pmu->name)))
		return -ENOMEM;
	if (pmu->cpus) {
		struct tally_cpumap *c = malloc(sizeof(*c) + pmu->cpus->nr * sizeof(int));

		if (!c)
			return -ENOMEM;
		memcpy(c, pmu->cpus, sizeof(*c) + pmu->cpus->nr * sizeof(int));
		l->ev[idx].cpus = c;
	}
	err = expand_aliases(p, pmu, user, &ts, &l->ev[idx]);
	/* generic terms first (config= sets the whole field), then formats ORed in */
	for (size_t i = 0; !err && i < ts.nr; i++) {
		err = apply_generic(p, idx, idx + 1, &ts.t[i]);
		if (err == 1)
			err = 0;
	}
	cfg[0] = l->ev[idx].attr.config;
	cfg[1] = l->ev[idx].attr.config1;
	cfg[2] = l->ev[idx].attr.config2;
	cfg[3] = l->ev[idx].config3;
	for (size_t i = 0; !err && i < ts.nr; i++) {
		const struct term *t = &ts.t[i];
		const struct tally_pmu_format *f = NULL;
		char name[128];

		if (is_generic(t))
			continue;
		if (t->nlen < sizeof(name)) {
			memcpy(name, t->name, t->nlen);
			name[t->nlen] = 0;
			f = tally_pmu__format(pmu, name);
		}
		if (!f) {
			char valid[160];

			valid_terms_msg(pmu, valid, sizeof(valid));
			if (!t->sval && pmu->nr_events)
				err = fail(p, t->pos, t->len, -EINVAL,
					   "'%.*s' is neither an event of PMU '%s' (see %s/bus/"
					   "event_source/devices/%s/events) nor a term (valid: %s)",
					   (int)t->nlen, t->name, pmu->name,
					   l->sysfs_root ? l->sysfs_root : "/sys", pmu->name, valid);
			else
				err = fail(p, t->pos, t->len, -EINVAL,
					   "unknown term '%.*s' for pmu '%s' (valid terms: %s)",
					   (int)t->nlen, t->name, pmu->name, valid);
			break;
		}
		if (!t->is_num) {
			err = fail(p, t->vpos, t->vlen, -EINVAL, "'%s' needs a number, not '%.*s'",
				   f->name, (int)t->vlen, t->sval);
			break;
		}
		if ((err = caps_check(p, pmu, t)))
			break;
		if (t->val > tally_pmu_format__max(f)) {
			err = fail(p, t->vpos, t->from_alias ? t->len : (t->sval ? t->vlen : t->len),
				   -ERANGE, "value too big for format '%s', maximum is %llu",
				   f->name, (unsigned long long)tally_pmu_format__max(f));
			break;
		}
		{
			uint64_t v = 0;

			tally_pmu_format__apply(f, t->val, &v);
			/* ORed in, as perf does: config= first, then the format bits */
			cfg[f->field] |= v;
		}
	}
	l->ev[idx].attr.config = cfg[0];
	l->ev[idx].attr.config1 = cfg[1];
	l->ev[idx].attr.config2 = cfg[2];
	l->ev[idx].config3 = cfg[3];
	terms_exit(&ts);
	return err;
}

static bool has_glob(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return true;
	return false;
}

static bool instance_of(const char *pn, const char *name, size_t n)
{
	return !strncmp(pn, name, n) && pn[n] == '_' && pn[n + 1] &&
	       strspn(pn + n + 1, "0123456789") == strlen(pn + n + 1);
}

/*
 * PMUs for the name before '/': the PMU itself; else its numbered instances name_0,
 * name_1 … (uncore); else, as perf does, the same with "uncore_" left out
 * ("imc/…/" = uncore_imc_*); a glob ("uncore_imc_*") matches PMU names.
 */
static size_t find_pmus(const struct tally_pmus *pmus, const char *name, size_t n,
			const struct tally_pmu **out, size_t max)
{
	char pat[256];
	size_t found = 0;

	if (!pmus || n >= sizeof(pat) - 8)
		return 0;
	for (size_t i = 0; i < pmus->nr && found < max; i++) {
		const char *pn = pmus->pmu[i].name;

		if (strlen(pn) == n && !strncmp(pn, name, n))
			out[found++] = &pmus->pmu[i];
	}
	if (found)
		return found;
	for (size_t i = 0; i < pmus->nr && found < max; i++)
		if (instance_of(pmus->pmu[i].name, name, n))
			out[found++] = &pmus->pmu[i];
	if (!found && strncmp(name, "uncore_", 7)) {
		snprintf(pat, sizeof(pat), "uncore_%.*s", (int)n, name);
		for (size_t i = 0; i < pmus->nr && found < max; i++) {
			const char *pn = pmus->pmu[i].name;

			if (!strcmp(pn, pat) || instance_of(pn, pat, n + 7))
				out[found++] = &pmus->pmu[i];
		}
	}
	if (!found && has_glob(name, n)) {
		snprintf(pat, sizeof(pat), "%.*s", (int)n, name);
		for (size_t i = 0; i < pmus->nr && found < max; i++)
			if (!fnmatch(pat, pmus->pmu[i].name, 0))
				out[found++] = &pmus->pmu[i];
	}
	return found;
}

#define MAX_PMU_MATCH 256

/* "pmu/terms/" with head [hpos, hpos+hlen), terms [tpos, tpos+tlen). */
static int parse_pmu(struct parser *p, size_t hpos, size_t hlen, size_t tpos, size_t tlen,
		     bool *is_pmu)
{
	const struct tally_pmus *pmus = get_pmus(p->list);
	const struct tally_pmu **match;
	struct terms user = {0};
	size_t n;
	int err = 0;

	*is_pmu = false;
	match = malloc(MAX_PMU_MATCH * sizeof(*match));
	if (!match)
		return -ENOMEM;
	n = find_pmus(pmus, p->in + hpos, hlen, match, MAX_PMU_MATCH);
	if (!n) {
		free(match);
		return 0;
	}
	*is_pmu = true;
	err = parse_terms(p, p->in + tpos, tlen, tpos, false, 0, &user);
	for (size_t i = 0; !err && i < n; i++) {
		int idx = new_event(p);

		if (idx < 0) {
			err = idx;
			break;
		}
		err = pmu_event(p, (size_t)idx, match[i], &user);
		/* not one PMU's own name: the instances it stands for count as one */
		p->list->ev[idx].merge = strlen(match[i]->name) != hlen ||
					 strncmp(match[i]->name, p->in + hpos, hlen);
	}
	terms_exit(&user);
	free(match);
	return err;
}

/* A bare name that is an alias in some PMU's events/ ("tsc" → msr/tsc/). */
static int parse_alias_anywhere(struct parser *p, size_t pos, size_t len, bool *found)
{
	const struct tally_pmus *pmus = get_pmus(p->list);
	char name[128];
	int err = 0;

	*found = false;
	if (!pmus || len >= sizeof(name))
		return 0;
	memcpy(name, p->in + pos, len);
	name[len] = 0;
	for (size_t i = 0; i < pmus->nr && !err; i++) {
		struct terms user = {0};
		struct term *t;
		int idx;

		if (!tally_pmu__alias(&pmus->pmu[i], name))
			continue;
		*found = true;
		t = terms_push(&user);
		if (!t)
			return -ENOMEM;
		t->name = p->in + pos;
		t->nlen = len;
		t->val = 1;
		t->is_num = true;
		t->pos = t->vpos = pos;
		t->len = len;
		idx = new_event(p);
		err = idx < 0 ? idx : pmu_event(p, (size_t)idx, &pmus->pmu[i], &user);
		if (idx >= 0)
			p->list->ev[idx].merge = true;	/* perf merges an alias over its PMUs */
		terms_exit(&user);
	}
	return err;
}

/* ---- tracepoints ------------------------------------------------------------ */

static int tracefs_dir(struct tally_evlist *l, char *buf, size_t len)
{
	if (l->tracefs) {
		snprintf(buf, len, "%s", l->tracefs);
		return 0;
	}
	return tally_tracefs__find(l->sysfs_root, buf, len);
}

static int tp_add(struct parser *p, const char *sys, const char *name, uint64_t id)
{
	int idx = new_event(p);
	struct tally_event *ev;

	if (idx < 0)
		return idx;
	ev = &p->list->ev[idx];
	ev->attr.type = PERF_TYPE_TRACEPOINT;
	ev->attr.config = id;
	ev->attr.sample_period = 1;
	ev->attr.sample_type = PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			       PERF_SAMPLE_PERIOD;
	if (!(ev->tp_sys = strdup(sys)) || !(ev->tp_name = strdup(name)) ||
	    !(ev->pmu_name = strdup("tracepoint")))
		return -ENOMEM;
	if (asprintf(&ev->name, "%s:%s", sys, name) < 0) {
		ev->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Does tracefs have a subsystem matching the glob? (decides "x:y" = tracepoint) */
static bool tp_subsystem_exists(struct parser *p, size_t pos, size_t len)
{
	char tdir[PATH_MAX - 512], path[PATH_MAX], pat[256];
	char **v;
	size_t n;
	bool ok;

	if (len >= sizeof(pat))
		return false;
	memcpy(pat, p->in + pos, len);
	pat[len] = 0;
	if (tracefs_dir(p->list, tdir, sizeof(tdir)))
		return false;
	snprintf(path, sizeof(path), "%s/events", tdir);
	if (tly_dir_list(path, pat, true, &v, &n))
		return false;
	ok = n > 0;
	tly_strv_free(v, n);
	return ok;
}

static int parse_tracepoint(struct parser *p, size_t spos, size_t slen, size_t epos, size_t elen)
{
	char tdir[PATH_MAX - 512], path[PATH_MAX], sysp[256], evp[256];
	char **sys = NULL;
	size_t nsys = 0, added = 0;
	int err;

	if (slen >= sizeof(sysp) || elen >= sizeof(evp))
		return fail(p, spos, slen + elen + 1, -EINVAL, "tracepoint name too long");
	if (!elen)
		return fail(p, epos, 1, -EINVAL, "expected modifiers or a tracepoint name after "
			    "'%.*s:'", (int)slen, p->in + spos);
	memcpy(sysp, p->in + spos, slen);
	sysp[slen] = 0;
	memcpy(evp, p->in + epos, elen);
	evp[elen] = 0;
	err = tracefs_dir(p->list, tdir, sizeof(tdir));
	if (err) {
		char why[200];

		tally_tracefs__strerror(err, tdir, why, sizeof(why));
		if (err == -EACCES)
			return fail(p, spos, slen + 1 + elen, -EACCES, "cannot read tracepoints: %s",
				    why);
		return fail(p, spos, slen + 1 + elen, -ENOENT, "unknown tracepoint '%s:%s': %s",
			    sysp, evp, why);
	}
	snprintf(path, sizeof(path), "%s/events", tdir);
	err = tly_dir_list(path, sysp, true, &sys, &nsys);
	if (err == -EACCES || err == -EPERM)
		return fail(p, spos, slen + 1 + elen, -EACCES,
			    "cannot read tracepoints in %s: permission denied (needs root, or "
			    "read access to tracefs)", path);
	if (err)
		return fail(p, spos, slen + 1 + elen, err, "cannot read %s: %s", path, strerror(-err));
	for (size_t i = 0; i < nsys && !err; i++) {
		char **evs = NULL;
		size_t nev = 0;

		snprintf(path, sizeof(path), "%s/events/%s", tdir, sys[i]);
		if (tly_dir_list(path, evp, true, &evs, &nev))
			continue;
		for (size_t j = 0; j < nev && !err; j++) {
			uint64_t id;

			snprintf(path, sizeof(path), "%s/events/%s/%s/id", tdir, sys[i], evs[j]);
			err = tly_read_file_u64(path, &id);
			if (err == -EACCES) {
				err = fail(p, spos, slen + 1 + elen, -EACCES,
					   "cannot read %s: permission denied", path);
				break;
			}
			if (err) {
				err = 0;
				continue;
			}
			err = tp_add(p, sys[i], evs[j], id);
			added++;
		}
		tly_strv_free(evs, nev);
	}
	tly_strv_free(sys, nsys);
	if (err)
		return err;
	if (!added)
		return fail(p, spos, slen + 1 + elen, -ENOENT,
			    has_glob(sysp, slen) || has_glob(evp, elen) ?
			    "no tracepoint matches '%s:%s' in %s/events" :
			    "unknown tracepoint '%s:%s' (no %s/events/%s/%s/id)",
			    sysp, evp, tdir, sysp, evp);
	return 0;
}

/* ---- breakpoints ------------------------------------------------------------ */

/* "mem:ADDR[/LEN][:ACCESS][:MODS]", spanning [pos, end). Sets mpos, mlen to the modifiers. */
static int parse_breakpoint(struct parser *p, size_t pos, size_t end, size_t *mpos, size_t *mlen)
{
	const char *s = p->in;
	size_t i = pos + 4, a = i;
	uint64_t addr, len = 0;
	struct tally_event *ev;
	int idx, type = 0;

	while (i < end && s[i] != '/' && s[i] != ':')
		i++;
	if (!parse_u64(s + a, i - a, &addr))
		return fail(p, a, i > a ? i - a : 1, -EINVAL,
			    "expected a breakpoint address (mem:0x1000[/len][:rwx])");
	if (i < end && s[i] == '/') {
		size_t l = ++i;

		while (i < end && s[i] != ':')
			i++;
		if (!parse_u64(s + l, i - l, &len))
			return fail(p, l, i > l ? i - l : 1, -EINVAL,
				    "expected a breakpoint length in bytes (1, 2, 4 or 8)");
	}
	*mpos = end;
	*mlen = 0;
	if (i < end && s[i] == ':') {
		size_t t = ++i;

		while (i < end && s[i] != ':')
			i++;
		/* the access part is 1-3 of r w x; anything else there is modifiers */
		if (i - t >= 1 && i - t <= 3 && strspn(s + t, "rwx") >= i - t) {
			for (size_t k = t; k < i; k++) {
				int bit = s[k] == 'r' ? HW_BREAKPOINT_R :
					  s[k] == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;

				if (type & bit)
					return fail(p, k, 1, -EINVAL,
						    "breakpoint access '%c' given twice", s[k]);
				type |= bit;
			}
			if (i < end) {
				*mpos = i + 1;
				*mlen = end - i - 1;
				if (!*mlen)
					return fail(p, i, 1, -EINVAL, "missing modifier after ':'");
			}
		} else {
			*mpos = t;
			*mlen = end - t;
			if (memchr(s + t, ':', end - t) || strspn(s + t, MOD_CHARS) < end - t)
				return fail(p, t, end - t, -EINVAL,
					    "bad breakpoint access '%.*s' (expected r, w, x or a "
					    "combination like rw)", (int)(end - t), s + t);
		}
	}
	if (!type)
		type = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
	if (!len)
		len = type == HW_BREAKPOINT_X ? sizeof(long) : HW_BREAKPOINT_LEN_4;
	idx = new_event(p);
	if (idx < 0)
		return idx;
	ev = &p->list->ev[idx];
	ev->attr.type = PERF_TYPE_BREAKPOINT;
	ev->attr.bp_type = (uint32_t)type;
	ev->attr.bp_addr = addr;
	ev->attr.bp_len = len;
	ev->attr.sample_period = 1;
	if (!(ev->pmu_name = strdup("breakpoint")))
		return -ENOMEM;
	return 0;
}

/* ---- symbolic names --------------------------------------------------------- */

static int simple_event(struct parser *p, uint32_t type, uint64_t config, const char *pmu)
{
	int idx = new_event(p);

	if (idx < 0)
		return idx;
	p->list->ev[idx].attr.type = type;
	p->list->ev[idx].attr.config = config;
	if (pmu && !(p->list->ev[idx].pmu_name = strdup(pmu)))
		return -ENOMEM;
	return 0;
}

/*
 * Names that stand alone: hw/sw/tool symbols, raw rNNN, hw-cache. Returns 1 when the
 * name is none of these, 0 when events were added, -errno on error.
 */
static int parse_symbolic(struct parser *p, size_t pos, size_t len)
{
	const char *s = p->in + pos;
	const struct tly_symbol *sym;
	struct tly_cache_event ce;
	enum tally_tool_event tool;
	uint32_t type;
	int err;

	sym = tly_symbol_lookup(s, len, &type);
	if (sym)
		return simple_event(p, type, sym->config,
				    type == PERF_TYPE_HARDWARE ? "cpu" : "software");
	tool = tly_tool_lookup(s, len);
	if (tool) {
		int idx = new_event(p);

		if (idx < 0)
			return idx;
		p->list->ev[idx].attr.type = PERF_TYPE_SOFTWARE;
		p->list->ev[idx].attr.config = PERF_COUNT_SW_DUMMY;
		p->list->ev[idx].attr.exclude_guest = 0;	/* perf skips event_attr_init here */
		p->list->ev[idx].tool = tool;
		if (!(p->list->ev[idx].unit = strdup("ns")) ||
		    !(p->list->ev[idx].pmu_name = strdup("tool")))
			return -ENOMEM;
		return 0;
	}
	if (len >= 2 && s[0] == 'r' && is_hex_span(s + 1, len - 1)) {
		uint64_t v = 0;
		char hex[24];

		if (len - 1 > 16)
			return fail(p, pos, len, -ERANGE, "raw event code '%.*s' does not fit "
				    "in 64 bits", (int)len, s);
		snprintf(hex, sizeof(hex), "0x%.*s", (int)(len - 1), s + 1);
		parse_u64(hex, strlen(hex), &v);
		return simple_event(p, PERF_TYPE_RAW, v, "cpu");
	}
	err = tly_cache_parse(s, len, &ce);
	if (err == -EINVAL)
		return fail(p, pos + ce.bad_pos, ce.bad_len, -EINVAL,
			    "%s does not support '%.*s' (perf's cache table allows %s)",
			    tly_cache_type_name(ce.type), (int)ce.bad_len, s + ce.bad_pos,
			    ce.type == PERF_COUNT_HW_CACHE_L1I ? "loads and prefetches" :
			    ce.type == PERF_COUNT_HW_CACHE_ITLB || ce.type == PERF_COUNT_HW_CACHE_BPU ?
			    "only loads" : "loads, stores and prefetches");
	if (!err) {
		int idx = new_event(p);

		if (idx < 0)
			return idx;
		p->list->ev[idx].attr.type = PERF_TYPE_HW_CACHE;
		p->list->ev[idx].attr.config = ce.config;
		/* perf names cache events by what was parsed, without modifiers */
		if (set_str(&p->list->ev[idx].name, s, len) ||
		    !(p->list->ev[idx].pmu_name = strdup("cpu")))
			return -ENOMEM;
		return 0;
	}
	return 1;
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b), row[64], prev, tmp;

	if (an >= 63 || bn >= 63)
		return 99;
	for (size_t j = 0; j <= bn; j++)
		row[j] = j;
	for (size_t i = 1; i <= an; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= bn; j++) {
			tmp = row[j];
			size_t c = prev + (tolower((unsigned char)a[i - 1]) !=
					   tolower((unsigned char)b[j - 1]));
			if (row[j] + 1 < c)
				c = row[j] + 1;
			if (row[j - 1] + 1 < c)
				c = row[j - 1] + 1;
			row[j] = c;
			prev = tmp;
		}
	}
	return row[bn];
}

static const char *suggest(const char *s, size_t n)
{
	const char *best = NULL;
	size_t bd = 3;
	static const char *const extra[] = {
		"duration_time", "user_time", "system_time", "L1-dcache-loads",
		"L1-dcache-load-misses", "LLC-loads", "LLC-load-misses", "dTLB-load-misses",
		"branch-loads", "branch-load-misses",
	};

	for (size_t i = 0; i < tly_nr_hw_symbols + tly_nr_sw_symbols; i++) {
		const struct tly_symbol *sym = i < tly_nr_hw_symbols ? &tly_hw_symbols[i] :
					       &tly_sw_symbols[i - tly_nr_hw_symbols];
		size_t d = distance(s, n, sym->name);

		if (d < bd) {
			bd = d;
			best = sym->name;
		}
		if (sym->alias && (d = distance(s, n, sym->alias)) < bd) {
			bd = d;
			best = sym->alias;
		}
	}
	for (size_t i = 0; i < TLY_ARRAY_SIZE(extra); i++) {
		size_t d = distance(s, n, extra[i]);

		if (d < bd) {
			bd = d;
			best = extra[i];
		}
	}
	return best;
}

/* The last resort for a name: libpfm4. Returns 1 when libpfm4 does not know it. */
static int parse_pfm(struct parser *p, size_t pos, size_t len, char *why, size_t whylen)
{
	struct perf_event_attr attr;
	char name[256];
	int err, idx;

	why[0] = 0;
	if (p->list->flags & TALLY_EVLIST_NO_PFM || len >= sizeof(name))
		return 1;
	memcpy(name, p->in + pos, len);
	name[len] = 0;
	memset(&attr, 0, sizeof(attr));
	err = tly_pfm_encode(name, &attr, why, whylen);
	if (err == -ENOMEM)
		return err;
	if (err)
		return err == -ENODEV ? 2 : 1;
	idx = new_event(p);
	if (idx < 0)
		return idx;
	p->list->ev[idx].attr.type = attr.type;
	p->list->ev[idx].attr.config = attr.config;
	p->list->ev[idx].attr.config1 = attr.config1;
	p->list->ev[idx].attr.config2 = attr.config2;
	p->list->ev[idx].attr.precise_ip = attr.precise_ip;
	/* libpfm4's own privilege modifiers (u=0, k=1 …); its hv default is not perf's */
	if (attr.exclude_user || attr.exclude_kernel) {
		p->list->ev[idx].attr.exclude_user = attr.exclude_user;
		p->list->ev[idx].attr.exclude_kernel = attr.exclude_kernel;
		p->list->ev[idx].attr.exclude_hv = 1;
		p->list->ev[idx].exclude_set = true;
	}
	if (!(p->list->ev[idx].pmu_name = strdup("cpu")))
		return -ENOMEM;
	return 0;
}

static int unknown_event(struct parser *p, size_t pos, size_t len, const char *pfm_why, int pfm_rc)
{
	const char *s = p->in + pos;
	const char *sug = suggest(s, len);

	if (sug)
		return fail(p, pos, len, -EINVAL, "unknown event '%.*s'; did you mean '%s'? "
			    "(tally list shows the events)", (int)len, s, sug);
	if (pfm_rc == 2)
		return fail(p, pos, len, -EINVAL, "unknown event '%.*s': not a perf event name, "
			    "sysfs alias or tracepoint, and %s", (int)len, s, pfm_why);
	return fail(p, pos, len, -EINVAL, "unknown event '%.*s' (expected a name from tally "
		    "list, rNNNN, pmu/term=value/, subsystem:tracepoint or mem:ADDR)", (int)len, s);
}

/* ---- events and groups ------------------------------------------------------ */

static bool is_mod_span(const char *s, size_t n)
{
	return n && strspn(s, MOD_CHARS) >= n;
}

/* Where the parts of one event's text lie: the event is [pos, end); its head (NAME,
 * SYS:EVENT or PMU) is [hpos, hpos + hlen), its /terms/ [tpos, tpos + tlen) and its
 * modifiers [mpos, mpos + mlen). first: the event's first index in the list. */
struct ev_text {
	size_t pos, end, first;
	size_t hpos, hlen, tpos, tlen, mpos, mlen;
	bool have_terms;
};

/* What is left to do once the head made the events: apply the terms (then the
 * modifiers), apply the modifiers, or only name the events. */
enum ev_rest { EV_TERMS = 1, EV_MODS, EV_NAME };

/* mem:ADDR[/LEN][:ACCESS] */
static int parse_mem_event(struct parser *p, struct ev_text *e)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	const char *bsl = memchr(s + e->pos, '/', e->end - e->pos);
	int err = parse_breakpoint(p, e->pos, e->end, &e->mpos, &e->mlen);

	if (err)
		return err;
	/* perf's lexer ends the event text at a '/', so mem:0x1000/8:rw is
	 * named "mem:0x1000" */
	if (bsl && set_str(&l->ev[l->nr - 1].name, s + e->pos, (size_t)(bsl - s) - e->pos))
		return -ENOMEM;
	return EV_MODS;
}

/* HEAD/terms/[[:]MODS]: find the terms and the modifiers after them. */
static int split_terms(struct parser *p, struct ev_text *e)
{
	const char *s = p->in;
	const char *slash = memchr(s + e->pos, '/', e->end - e->pos);
	size_t sl, c;
	const char *close;

	if (!slash) {
		e->hlen = e->end - e->pos;
		return 0;
	}
	sl = (size_t)(slash - s);
	close = memchr(slash + 1, '/', e->end - sl - 1);
	if (!close)
		return fail(p, sl, 1, -EINVAL, "missing closing '/' after the terms "
			    "(pmu/term=value,…/)");
	e->hlen = sl - e->pos;
	e->tpos = sl + 1;
	e->tlen = (size_t)(close - s) - e->tpos;
	e->have_terms = true;
	c = (size_t)(close - s) + 1;
	if (c < e->end) {
		/* perf takes modifiers with or without the ':' here (msr/tsc/u) */
		e->mpos = s[c] == ':' ? c + 1 : c;
		e->mlen = e->end - e->mpos;
		if (!e->mlen)
			return fail(p, c, 1, -EINVAL, "missing modifier after ':'");
		if (s[c] != ':' && !is_mod_span(s + c, e->mlen))
			return fail(p, c, 1, -EINVAL, "expected ':' and modifiers, ',' or "
				    "the end after '/'");
	}
	if (!e->hlen)
		return fail(p, e->pos, 1, -EINVAL, "expected a PMU or event name before '/'");
	return 0;
}

/* A name that is neither symbolic nor a PMU: a sysfs alias of some PMU, else libpfm4's. */
static int parse_name_fallback(struct parser *p, struct ev_text *e)
{
	bool found;
	char why[200];
	int err, rc;

	err = parse_alias_anywhere(p, e->hpos, e->hlen, &found);
	if (err)
		return err;
	if (found)
		return EV_MODS;
	/* perf's modifiers first (NAME:upp), then libpfm4's own spelling
	 * (INST_RETIRED:ANY_P:k=1:u=0) with the whole string */
	rc = parse_pfm(p, e->hpos, e->hlen, why, sizeof(why));
	if (rc < 0)
		return rc;
	if (rc == 0)
		return EV_MODS;
	if (e->mlen) {
		rc = parse_pfm(p, e->hpos, e->end - e->hpos, why, sizeof(why));
		if (rc < 0)
			return rc;
		if (rc == 0)
			return EV_NAME;
	}
	return unknown_event(p, e->hpos, e->hlen, why, rc);
}

/* A head without ':': a symbolic name, a PMU before /terms/, or an alias. */
static int parse_plain_head(struct parser *p, struct ev_text *e)
{
	const char *s = p->in;
	bool is_pmu;
	int err = parse_symbolic(p, e->hpos, e->hlen);

	if (err <= 0)
		return err < 0 ? err : EV_TERMS;
	if (!e->have_terms)
		return parse_name_fallback(p, e);
	err = parse_pmu(p, e->hpos, e->hlen, e->tpos, e->tlen, &is_pmu);
	if (err)
		return err;
	if (is_pmu)
		return EV_MODS;
	return fail(p, e->hpos, e->hlen, -EINVAL, "unknown PMU '%.*s' (the PMUs are "
		    "in %s/bus/event_source/devices; tally list --pmu)", (int)e->hlen,
		    s + e->hpos, p->list->sysfs_root ? p->list->sysfs_root : "/sys");
}

/* NAME:MODS with a symbolic NAME, or TYPE:CONFIG. 0 when the head is neither. */
static int parse_symbolic_mods(struct parser *p, struct ev_text *e, size_t n0, size_t rest,
			       size_t rlen, const char *c2)
{
	const char *s = p->in;
	bool num0 = n0 && strspn(s + e->hpos, "0123456789") >= n0;
	uint64_t type, config;
	int err = parse_symbolic(p, e->hpos, n0);

	if (err < 0)
		return err;
	if (err == 0) {
		if (c2)
			return fail(p, (size_t)(c2 - s), 1, -EINVAL,
				    "unexpected ':' after the modifiers");
		if (!rlen)
			return fail(p, rest, 1, -EINVAL, "missing modifier after ':' "
				    "(expected some of %s)", MOD_CHARS);
		e->mpos = rest;
		e->mlen = rlen;
		return EV_MODS;
	}
	if (!num0 || c2)
		return 0;
	/* TYPE:CONFIG */
	if (!parse_u64(s + e->hpos, n0, &type) || type > UINT32_MAX ||
	    !parse_u64(s + rest, rlen, &config))
		return fail(p, rest, rlen ? rlen : 1, -EINVAL, "expected TYPE:CONFIG numbers");
	err = simple_event(p, (uint32_t)type, config, NULL);
	return err ? err : EV_MODS;
}

/* SYS:EVENT[:MODS] (or SYS:EVENT before /terms/), or libpfm4's "pmu::event:umask". */
static int parse_tp_head(struct parser *p, struct ev_text *e, size_t n0, size_t rest,
			 size_t rlen, const char *c2)
{
	const char *s = p->in;
	size_t elen = c2 ? (size_t)(c2 - s) - rest : rlen;
	int err;

	if (!tp_subsystem_exists(p, e->hpos, n0)) {
		char why[200];
		int rc = parse_pfm(p, e->hpos, e->hlen, why, sizeof(why));

		if (rc <= 0)
			return rc < 0 ? rc : EV_TERMS;
	}
	err = parse_tracepoint(p, e->hpos, n0, rest, elen);
	if (err)
		return err;
	if (c2) {
		if (e->have_terms)
			return fail(p, (size_t)(c2 - s), 1, -EINVAL,
				    "modifiers go after the terms: sys:event/terms/:mods");
		e->mpos = (size_t)(c2 - s) + 1;
		e->mlen = e->end - e->mpos;
		if (!e->mlen)
			return fail(p, (size_t)(c2 - s), 1, -EINVAL, "missing modifier after ':'");
	}
	return EV_TERMS;
}

/* The head: NAME[:MODS] or SYS:EVENT[:MODS] (or SYS:EVENT before /terms/). */
static int parse_head(struct parser *p, struct ev_text *e)
{
	const char *s = p->in;
	const char *c1 = memchr(s + e->hpos, ':', e->hlen);
	size_t n0, rest, rlen;
	const char *c2;
	int err;

	if (!c1)
		return parse_plain_head(p, e);
	n0 = (size_t)(c1 - s) - e->hpos;
	rest = e->hpos + n0 + 1;
	rlen = e->hlen - n0 - 1;
	c2 = memchr(s + rest, ':', rlen);
	if (!e->have_terms) {
		err = parse_symbolic_mods(p, e, n0, rest, rlen, c2);
		if (err)
			return err;
	}
	if (tp_subsystem_exists(p, e->hpos, n0) ||
	    !is_mod_span(s + rest, c2 ? (size_t)(c2 - s) - rest : rlen))
		return parse_tp_head(p, e, n0, rest, rlen, c2);
	/* NAME:MODS where NAME is a sysfs alias or a libpfm4 name */
	if (c2)
		return fail(p, (size_t)(c2 - s), 1, -EINVAL, "unexpected ':'");
	if (e->have_terms)
		return fail(p, e->hpos, n0, -EINVAL, "unknown event '%.*s'", (int)n0, s + e->hpos);
	e->hlen = n0;
	e->mpos = rest;
	e->mlen = rlen;
	return parse_name_fallback(p, e);
}

/* The events the head made: their generic terms, their modifiers, their names. */
static int finish_event(struct parser *p, const struct ev_text *e, enum ev_rest rest)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	int err;

	if (rest == EV_TERMS && e->have_terms) {
		err = apply_generic_only(p, e->first, l->nr, e->tpos, e->tlen);
		if (err)
			return err;
	}
	if (rest != EV_NAME && e->mlen) {
		struct mods m;

		err = check_mods(p, e->mpos, e->mlen);
		if (err)
			return err;
		compute_mods(s + e->mpos, e->mlen, NULL, &m);
		for (size_t i = e->first; i < l->nr; i++)
			apply_mods(l, i, &m);
	}
	/* perf names an event by the text that defined it, unless name= (or the event
	 * kind: tracepoints, cache events) already named it */
	for (size_t i = e->first; i < l->nr; i++) {
		if (!l->ev[i].name && set_str(&l->ev[i].name, s + e->pos, e->end - e->pos))
			return -ENOMEM;
	}
	return 0;
}

/* One event spanning [pos, end). */
static int parse_event(struct parser *p, size_t pos, size_t end)
{
	struct ev_text e = {
		.pos = pos, .end = end, .first = p->list->nr, .hpos = pos, .mpos = end,
	};
	int rest;

	if (end == pos)
		return fail(p, pos, 1, -EINVAL, "expected an event");
	if (end - pos > 4 && !strncmp(p->in + pos, "mem:", 4)) {
		rest = parse_mem_event(p, &e);
	} else {
		rest = split_terms(p, &e);
		if (!rest)
			rest = parse_head(p, &e);
	}
	if (rest < 0)
		return rest;
	return finish_event(p, &e, (enum ev_rest)rest);
}

/* End of the event starting at @pos: the next ',' '{' '}' outside /terms/. */
static int event_end(struct parser *p, size_t pos, size_t *end)
{
	const char *s = p->in;
	size_t i = pos;
	bool mem = !strncmp(s + pos, "mem:", 4);

	while (s[i] && s[i] != ',' && s[i] != '{' && s[i] != '}') {
		if (s[i] == '/' && !mem) {
			const char *close = strchr(s + i + 1, '/');

			if (!close)
				return fail(p, i, 1, -EINVAL, "missing closing '/' after the terms "
					    "(pmu/term=value,…/)");
			i = (size_t)(close - s) + 1;
			continue;
		}
		i++;
	}
	*end = i;
	return 0;
}

static size_t skip_ws(const char *s, size_t i)
{
	while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')
		i++;
	return i;
}

static size_t trim_end(const char *s, size_t a, size_t b)
{
	while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\n'))
		b--;
	return b;
}

static int parse_group(struct parser *p, size_t *pos, size_t name_pos, size_t name_len)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	size_t i = *pos + 1, first = l->nr, end;
	int err;

	for (;;) {
		i = skip_ws(s, i);
		if (s[i] == '{')
			return fail(p, i, 1, -EINVAL, "groups cannot be nested");
		if (s[i] == '}' || !s[i])
			return fail(p, i, 1, -EINVAL, l->nr == first ? "empty group: expected an "
				    "event after '{'" : "expected an event after ','");
		err = event_end(p, i, &end);
		if (err)
			return err;
		err = parse_event(p, i, trim_end(s, i, end));
		if (err)
			return err;
		i = skip_ws(s, end);
		if (s[i] == ',') {
			i++;
			continue;
		}
		if (s[i] == '}')
			break;
		return fail(p, i, 1, -EINVAL, "expected ',' or '}' to close the group");
	}
	i++;
	/* leader and members (perf's parse_events__set_leader) */
	l->ev[first].nr_members = (int)(l->nr - first);
	for (size_t k = first; k < l->nr; k++)
		l->ev[k].leader = (int)first;
	if (l->nr - first > 1)
		l->nr_groups++;
	if (name_len && set_str(&l->ev[first].group_name, s + name_pos, name_len))
		return -ENOMEM;
	if (s[i] == ':') {
		size_t mpos = i + 1, mend = mpos;

		while (s[mend] && s[mend] != ',' && s[mend] != '{' && s[mend] != '}')
			mend++;
		mend = trim_end(s, mpos, mend);
		err = check_mods(p, mpos, mend - mpos);
		if (err)
			return err;
		for (size_t k = first; k < l->nr; k++) {
			struct mods m;

			compute_mods(s + mpos, mend - mpos, &l->ev[k], &m);
			apply_mods(l, k, &m);
		}
		i = mend;
	}
	*pos = i;
	return 0;
}

static int parse_all(struct parser *p)
{
	const char *s = p->in;
	size_t i = skip_ws(s, 0), end;
	int err;

	if (!s[i])
		return fail(p, 0, 1, -EINVAL, "empty event list");
	for (;;) {
		i = skip_ws(s, i);
		if (s[i] == '{') {
			err = parse_group(p, &i, 0, 0);
		} else if (s[i] == '}') {
			return fail(p, i, 1, -EINVAL, "'}' without a '{'");
		} else if (!s[i] || s[i] == ',') {
			return fail(p, i, 1, -EINVAL, "expected an event");
		} else {
			err = event_end(p, i, &end);
			if (err)
				return err;
			if (s[end] == '{') {
				/* named group: NAME{a,b} */
				size_t name_end = trim_end(s, i, end), gpos = end;

				err = parse_group(p, &gpos, i, name_end - i);
				i = gpos;
			} else {
				err = parse_event(p, i, trim_end(s, i, end));
				i = end;
			}
		}
		if (err)
			return err;
		i = skip_ws(s, i);
		if (!s[i])
			return 0;
		if (s[i] != ',')
			return fail(p, i, 1, -EINVAL, "expected ',' between events");
		i++;
		if (!s[skip_ws(s, i)])
			return fail(p, i, 1, -EINVAL, "expected an event after ','");
	}
}

int tally_evlist__add(struct tally_evlist *list, const char *str, struct tally_parse_error *err)
{
	struct parser p = { .list = list, .in = str };
	size_t nr0, groups0;
	int ret;

	if (!list || !str)
		return -EINVAL;
	p.err = err ? err : &p.local;
	memset(p.err, 0, sizeof(*p.err));
	nr0 = list->nr;
	groups0 = list->nr_groups;
	ret = parse_all(&p);
	/* perf gives bpf-output what its samples need, and period 1, when it is made */
	for (size_t i = nr0; !ret && i < list->nr; i++) {
		struct perf_event_attr *a = &list->ev[i].attr;

		if (a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_BPF_OUTPUT &&
		    !a->sample_type) {
			a->sample_type = PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
					 PERF_SAMPLE_PERIOD;
			if (!a->freq && !a->sample_period)
				a->sample_period = 1;
		}
	}
	if (ret) {
		if (ret == -ENOMEM && !p.err->msg[0])
			snprintf(p.err->msg, sizeof(p.err->msg), "out of memory");
		for (size_t i = nr0; i < list->nr; i++)
			event_exit(&list->ev[i]);
		list->nr = nr0;
		list->nr_groups = groups0;
		return ret > 0 ? -EINVAL : ret;
	}
	return 0;
}

int tally_evlist__add_event(struct tally_evlist *list, const struct tally_event *src)
{
	struct parser p = { .list = list, .in = "", .err = NULL };
	struct tally_event *ev;
	int idx;

	p.err = &p.local;
	idx = new_event(&p);
	if (idx < 0)
		return idx;
	ev = &list->ev[idx];
	*ev = *src;
	ev->leader = idx;
	ev->nr_members = 1;
	ev->name = ev->pmu_name = ev->group_name = ev->call_graph = NULL;
	ev->driver_config = ev->metric_id = ev->unit = ev->tp_sys = ev->tp_name = NULL;
	ev->cpus = NULL;
#define DUP(f) do { if (src->f && !(ev->f = strdup(src->f))) goto nomem; } while (0)
	DUP(name);
	DUP(pmu_name);
	DUP(call_graph);
	DUP(driver_config);
	DUP(metric_id);
	DUP(unit);
	DUP(tp_sys);
	DUP(tp_name);
#undef DUP
	if (src->cpus) {
		size_t sz = sizeof(*src->cpus) + src->cpus->nr * sizeof(int);

		if (!(ev->cpus = malloc(sz)))
			goto nomem;
		memcpy(ev->cpus, src->cpus, sz);
	}
	return 0;
nomem:
	event_exit(ev);
	list->nr--;
	return -ENOMEM;
}

size_t tally_evlist__nr(const struct tally_evlist *list)
{
	return list ? list->nr : 0;
}

struct tally_event *tally_evlist__event(const struct tally_evlist *list, size_t idx)
{
	return list && idx < list->nr ? &list->ev[idx] : NULL;
}

size_t tally_evlist__nr_groups(const struct tally_evlist *list)
{
	return list ? list->nr_groups : 0;
}

bool tally_event__is_leader(const struct tally_evlist *list, size_t idx)
{
	return list->ev[idx].leader == (int)idx;
}

int tally_parse_error__format(const struct tally_parse_error *err, const char *input, char *buf,
			      size_t len)
{
	static const char prefix[] = "event syntax error: '";
	size_t ilen = input ? strlen(input) : 0;
	size_t pos = err->pos > ilen ? ilen : err->pos;
	int n;

	/* the caret sits under the first bad character, as perf draws it */
	n = snprintf(buf, len, "%s%s'\n%*s\\___ %s", prefix, input ? input : "",
		     (int)(sizeof(prefix) - 1 + pos), "", err->msg);
	return n;
}

size_t tally_event__modifier_str(const struct tally_event *ev, char *buf, size_t len)
{
	char m[16];
	size_t n = 0;
	const struct perf_event_attr *a = &ev->attr;
	bool exclude = a->exclude_user || a->exclude_kernel || a->exclude_hv;

	if (exclude) {
		if (!a->exclude_user)
			m[n++] = 'u';
		if (!a->exclude_kernel)
			m[n++] = 'k';
		if (!a->exclude_hv)
			m[n++] = 'h';
	}
	for (unsigned i = 0; i < a->precise_ip && i < 3; i++)
		m[n++] = 'p';
	if (a->exclude_host && !a->exclude_guest)
		m[n++] = 'G';
	if (a->exclude_idle)
		m[n++] = 'I';
	if (ev->sample_read)
		m[n++] = 'S';
	if (a->pinned)
		m[n++] = 'D';
	if (a->exclusive)
		m[n++] = 'e';
	m[n] = 0;
	return (size_t)snprintf(buf, len, "%s%s", n ? ":" : "", m);
}

/* perf 6.1 tests the CPUID vendor string for "AuthenticAMD" (not Hygon) here. */
static bool cpu_is_amd(void)
{
	struct tally_cpuid_pmu info;

	tally_cpuid_pmu(&info);	/* the vendor is filled in even when it fails later */
	return strcmp(info.vendor, "AuthenticAMD") == 0;
}

void tally_event__default_cycles(struct perf_event_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_HARDWARE;
	attr->config = PERF_COUNT_HW_CPU_CYCLES;
	attr->precise_ip = 3;
	attr->exclude_guest = !cpu_is_amd();
}

int tally_event__probe(const struct tally_event *ev)
{
	struct perf_event_attr attr = ev->attr;
	int fd;

	/* like perf list: a user-only, disabled counter on this thread */
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.exclude_guest = 1;
	attr.size = sizeof(attr);
	fd = tly_sys__perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd == -EACCES || fd == -EPERM) {
		attr.exclude_guest = 0;
		fd = tly_sys__perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return fd;
	tly_sys__close(fd);
	return 0;
}
