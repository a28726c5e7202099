/*
 * The event parser's PMU part (lib/kernel/event.c has the grammar): a term list
 * pmu/term=value,.../, the generic terms every event takes (config=, period=, name=,
 * call-graph= ...), format terms read from sysfs ORed into the config fields after
 * them, PMU aliases, and names that are no single PMU's (uncore_imc/.../ expanded to
 * every instance).
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
static int parse_terms(struct tly_parser *p, const char *s, size_t n, size_t ipos, bool alias,
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
			return tly_evp_fail(p, alias ? ipos : ipos + start, alias ? alias_len : 1,
					    -EINVAL,
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
					return tly_evp_fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
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
				return tly_evp_fail(p, alias ? ipos : ipos + vstart, 1, -EINVAL,
						    "missing value after '%.*s='", (int)t->nlen, t->name);
			t->sval = s + vstart;
			t->vlen = vend - vstart;
			t->vpos = alias ? ipos : ipos + vstart;
			t->is_num = tly_evp_parse_u64(t->sval, t->vlen, &t->val);
			if (!t->is_num && isdigit((unsigned char)t->sval[0]) &&
			    strspn(t->sval, "0123456789abcdefABCDEFxX") >= t->vlen)
				return tly_evp_fail(p, t->vpos, t->vlen, -ERANGE,
						    "bad number '%.*s' (decimal or 0x hex, at most 64 bits)",
						    (int)t->vlen, t->sval);
		} else {
			t->vpos = t->pos;
		}
		t->len = alias ? alias_len : i - start;
		if (i < n) {
			if (s[i] != ',')
				return tly_evp_fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
						    "expected ',' or '/' after a term");
			i++;
			if (i == n)
				return tly_evp_fail(p, alias ? ipos : ipos + i, 1, -EINVAL,
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

static int need_num(struct tly_parser *p, const struct term *t)
{
	if (t->is_num)
		return 0;
	return tly_evp_fail(p, t->vpos, t->vlen, -EINVAL, "'%.*s' needs a number, not '%.*s'",
			    (int)t->nlen, t->name, (int)t->vlen, t->sval);
}

static int need_str(struct tly_parser *p, const struct term *t)
{
	if (t->sval)
		return 0;
	return tly_evp_fail(p, t->pos, t->len, -EINVAL, "'%.*s' needs a value ('%.*s=…')",
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

static int parse_branch_type(struct tly_parser *p, const struct term *t, uint64_t *out)
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
			return tly_evp_fail(p, t->vpos + i, j - i, -EINVAL,
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
static int apply_attr_term(struct tly_parser *p, struct tally_event *ev, const struct term *t)
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
			return tly_evp_fail(p, t->vpos, t->vlen, -ERANGE,
					    "aux-sample-size too large");
		ev->attr.aux_sample_size = (uint32_t)t->val;
	} else {
		return 1;
	}
	return 0;
}

/* A generic term that is policy, not attr bits: names, call graphs, stack sizes. */
static int apply_policy_term(struct tly_parser *p, struct tally_event *ev, const struct term *t)
{
	int err;

	if (term_is(t, "name")) {
		if ((err = need_str(p, t)))
			return err;
		if (tly_evp_set_str(&ev->name, t->sval, t->vlen))
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
			return tly_evp_fail(p, t->vpos, t->vlen, -EINVAL,
					    "unknown call-graph mode '%.*s' (fp, dwarf, lbr or no; "
					    "the dwarf stack size goes in stack-size=)",
					    (int)t->vlen, t->sval);
		if (tly_evp_set_str(&ev->call_graph, modes[k], strlen(modes[k])))
			return -ENOMEM;
	} else if (term_is(t, "stack-size")) {
		if ((err = need_num(p, t)))
			return err;
		if (t->val > UINT32_MAX)
			return tly_evp_fail(p, t->vpos, t->vlen, -ERANGE, "stack-size too large");
		ev->stack_size = (uint32_t)t->val;
	} else if (term_is(t, "max-stack")) {
		if ((err = need_num(p, t)))
			return err;
		if (t->val > INT32_MAX)
			return tly_evp_fail(p, t->vpos, t->vlen, -ERANGE, "max-stack too large");
		ev->max_stack = (int)t->val;
	} else if (term_is(t, "overwrite")) {
		ev->overwrite = t->is_num ? t->val != 0 : 1;
	} else if (term_is(t, "no-overwrite")) {
		ev->overwrite = 0;
	} else if (term_is(t, "driver-config")) {
		if ((err = need_str(p, t)))
			return err;
		if (tly_evp_set_str(&ev->driver_config, t->sval, t->vlen))
			return -ENOMEM;
	} else if (term_is(t, "percore")) {
		if ((err = need_num(p, t)))
			return err;
		ev->percore = t->val != 0;
	} else if (term_is(t, "metric-id")) {
		if ((err = need_str(p, t)))
			return err;
		if (tly_evp_set_str(&ev->metric_id, t->sval, t->vlen))
			return -ENOMEM;
	}
	return 0;
}

/* Apply a generic term to every event in [first, last). Returns 1 when @t is not
 * generic, 0 when applied, -errno on error. */
static int apply_generic(struct tly_parser *p, size_t first, size_t last, const struct term *t)
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
int tly_evp_apply_generic_only(struct tly_parser *p, size_t first, size_t last, size_t tpos,
			       size_t tlen)
{
	struct terms ts = {0};
	int err = parse_terms(p, p->in + tpos, tlen, tpos, false, 0, &ts);

	for (size_t i = 0; !err && i < ts.nr; i++) {
		err = apply_generic(p, first, last, &ts.t[i]);
		if (err == 1)
			err = tly_evp_fail(p, ts.t[i].pos, ts.t[i].nlen, -EINVAL,
					   "unknown term '%.*s' (valid here: config, config1, config2, "
					   "config3, name, period, freq, call-graph, stack-size, max-stack, "
					   "inherit, no-inherit, time, branch_type, …)",
					   (int)ts.t[i].nlen, ts.t[i].name);
	}
	terms_exit(&ts);
	return err;
}

/* ---- PMU events ------------------------------------------------------------- */

static int caps_check(struct tly_parser *p, const struct tally_pmu *pmu, const struct term *t)
{
	const char *cap;

	/* arm64 PMUv3 counting thresholds (FEAT_PMUv3_TH): threshold must fit the PMU. */
	if (!term_is(t, "threshold"))
		return 0;
	if (t->val > 4095)
		return tly_evp_fail(p, t->vpos, t->vlen ? t->vlen : t->len, -ERANGE,
				    "threshold=%llu is above 4095, the largest threshold an arm64 PMU "
				    "can count", (unsigned long long)t->val);
	cap = tally_pmu__cap(pmu, "threshold_max");
	if (cap) {
		uint64_t max;

		if (!tly_evp_parse_u64(cap, strlen(cap), &max))
			max = 0;
		if (max == 0)
			return tly_evp_fail(p, t->pos, t->len, -EOPNOTSUPP,
					    "PMU '%s' does not support counting thresholds "
					    "(caps/threshold_max is 0)", pmu->name);
		if (t->val > max)
			return tly_evp_fail(p, t->vpos, t->vlen ? t->vlen : t->len, -ERANGE,
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
static int expand_aliases(struct tly_parser *p, const struct tally_pmu *pmu, struct terms *user,
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
			if (a->unit && tly_evp_set_str(&proto->unit, a->unit, strlen(a->unit)))
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

static int pmu_event(struct tly_parser *p, size_t idx, const struct tally_pmu *pmu,
		     struct terms *user)
{
	struct tally_evlist *l = p->list;
	struct terms ts = {0};
	uint64_t cfg[4];
	int err;

	l->ev[idx].attr.type = pmu->type;
	l->ev[idx].sysfs_pmu = true;
	if (tly_evp_set_str(&l->ev[idx].pmu_name, pmu->name, strlen(pmu->name)))
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
				err = tly_evp_fail(p, t->pos, t->len, -EINVAL,
						   "'%.*s' is neither an event of PMU '%s' (see %s/bus/"
						   "event_source/devices/%s/events) nor a term (valid: %s)",
						   (int)t->nlen, t->name, pmu->name,
						   l->sysfs_root ? l->sysfs_root : "/sys", pmu->name, valid);
			else
				err = tly_evp_fail(p, t->pos, t->len, -EINVAL,
						   "unknown term '%.*s' for pmu '%s' (valid terms: %s)",
						   (int)t->nlen, t->name, pmu->name, valid);
			break;
		}
		if (!t->is_num) {
			err = tly_evp_fail(p, t->vpos, t->vlen, -EINVAL,
					   "'%s' needs a number, not '%.*s'",
					   f->name, (int)t->vlen, t->sval);
			break;
		}
		if ((err = caps_check(p, pmu, t)))
			break;
		if (t->val > tally_pmu_format__max(f)) {
			err = tly_evp_fail(p, t->vpos,
					   t->from_alias ? t->len : (t->sval ? t->vlen : t->len),
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

bool tly_evp_has_glob(const char *s, size_t n)
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
	if (!found && tly_evp_has_glob(name, n)) {
		snprintf(pat, sizeof(pat), "%.*s", (int)n, name);
		for (size_t i = 0; i < pmus->nr && found < max; i++)
			if (!fnmatch(pat, pmus->pmu[i].name, 0))
				out[found++] = &pmus->pmu[i];
	}
	return found;
}

#define MAX_PMU_MATCH 256

/* "pmu/terms/" with head [hpos, hpos+hlen), terms [tpos, tpos+tlen). */
int tly_evp_parse_pmu(struct tly_parser *p, size_t hpos, size_t hlen, size_t tpos, size_t tlen,
		     bool *is_pmu)
{
	const struct tally_pmus *pmus = tly_evp_get_pmus(p->list);
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
		int idx = tly_evp_new_event(p);

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
int tly_evp_parse_alias_anywhere(struct tly_parser *p, size_t pos, size_t len, bool *found)
{
	const struct tally_pmus *pmus = tly_evp_get_pmus(p->list);
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
		idx = tly_evp_new_event(p);
		err = idx < 0 ? idx : pmu_event(p, (size_t)idx, &pmus->pmu[i], &user);
		if (idx >= 0)
			p->list->ev[idx].merge = true;	/* perf merges an alias over its PMUs */
		terms_exit(&user);
	}
	return err;
}
