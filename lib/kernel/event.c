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


__attribute__((format(printf, 5, 6)))
int tly_evp_fail(struct tly_parser *p, size_t pos, size_t len, int code, const char *fmt, ...)
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

const struct tally_pmus *tly_evp_get_pmus(struct tally_evlist *list)
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
int tly_evp_new_event(struct tly_parser *p)
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

int tly_evp_set_str(char **dst, const char *s, size_t n)
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
bool tly_evp_parse_u64(const char *s, size_t n, uint64_t *val)
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

bool tly_evp_is_hex_span(const char *s, size_t n)
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

static int check_mods(struct tly_parser *p, size_t pos, size_t len)
{
	const char *s = p->in + pos;
	int precise = 0;

	if (!len)
		return tly_evp_fail(p, pos, 1, -EINVAL,
				    "missing modifier after ':' (expected some of %s)", MOD_CHARS);
	for (size_t i = 0; i < len; i++) {
		if (!strchr(MOD_CHARS, s[i]) || !s[i])
			return tly_evp_fail(p, pos + i, 1, -EINVAL,
					    "unknown modifier '%c' (valid: u k h G H I p P S D e W b)", s[i]);
		if (s[i] == 'p') {
			if (++precise > 3)
				return tly_evp_fail(p, pos + i, 1, -EINVAL,
						    "too many 'p' modifiers: precise_ip goes up to 3 (ppp)");
			continue;
		}
		if (memchr(s + i + 1, s[i], len - i - 1))
			return tly_evp_fail(p, pos + i, 1, -EINVAL, "modifier '%c' given twice",
					    s[i]);
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
static int parse_mem_event(struct tly_parser *p, struct ev_text *e)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	const char *bsl = memchr(s + e->pos, '/', e->end - e->pos);
	int err = tly_evp_parse_breakpoint(p, e->pos, e->end, &e->mpos, &e->mlen);

	if (err)
		return err;
	/* perf's lexer ends the event text at a '/', so mem:0x1000/8:rw is
	 * named "mem:0x1000" */
	if (bsl && tly_evp_set_str(&l->ev[l->nr - 1].name, s + e->pos, (size_t)(bsl - s) - e->pos))
		return -ENOMEM;
	return EV_MODS;
}

/* HEAD/terms/[[:]MODS]: find the terms and the modifiers after them. */
static int split_terms(struct tly_parser *p, struct ev_text *e)
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
		return tly_evp_fail(p, sl, 1, -EINVAL, "missing closing '/' after the terms "
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
			return tly_evp_fail(p, c, 1, -EINVAL, "missing modifier after ':'");
		if (s[c] != ':' && !is_mod_span(s + c, e->mlen))
			return tly_evp_fail(p, c, 1, -EINVAL, "expected ':' and modifiers, ',' or "
					    "the end after '/'");
	}
	if (!e->hlen)
		return tly_evp_fail(p, e->pos, 1, -EINVAL,
				    "expected a PMU or event name before '/'");
	return 0;
}

/* A name that is neither symbolic nor a PMU: a sysfs alias of some PMU, else libpfm4's. */
static int parse_name_fallback(struct tly_parser *p, struct ev_text *e)
{
	bool found;
	char why[200];
	int err, rc;

	err = tly_evp_parse_alias_anywhere(p, e->hpos, e->hlen, &found);
	if (err)
		return err;
	if (found)
		return EV_MODS;
	/* perf's modifiers first (NAME:upp), then libpfm4's own spelling
	 * (INST_RETIRED:ANY_P:k=1:u=0) with the whole string */
	rc = tly_evp_parse_pfm(p, e->hpos, e->hlen, why, sizeof(why));
	if (rc < 0)
		return rc;
	if (rc == 0)
		return EV_MODS;
	if (e->mlen) {
		rc = tly_evp_parse_pfm(p, e->hpos, e->end - e->hpos, why, sizeof(why));
		if (rc < 0)
			return rc;
		if (rc == 0)
			return EV_NAME;
	}
	return tly_evp_unknown_event(p, e->hpos, e->hlen, why, rc);
}

/* A head without ':': a symbolic name, a PMU before /terms/, or an alias. */
static int parse_plain_head(struct tly_parser *p, struct ev_text *e)
{
	const char *s = p->in;
	bool is_pmu;
	int err = tly_evp_parse_symbolic(p, e->hpos, e->hlen);

	if (err <= 0)
		return err < 0 ? err : EV_TERMS;
	if (!e->have_terms)
		return parse_name_fallback(p, e);
	err = tly_evp_parse_pmu(p, e->hpos, e->hlen, e->tpos, e->tlen, &is_pmu);
	if (err)
		return err;
	if (is_pmu)
		return EV_MODS;
	return tly_evp_fail(p, e->hpos, e->hlen, -EINVAL, "unknown PMU '%.*s' (the PMUs are "
			    "in %s/bus/event_source/devices; tally list --pmu)", (int)e->hlen,
			    s + e->hpos, p->list->sysfs_root ? p->list->sysfs_root : "/sys");
}

/* NAME:MODS with a symbolic NAME, or TYPE:CONFIG. 0 when the head is neither. */
static int parse_symbolic_mods(struct tly_parser *p, struct ev_text *e, size_t n0, size_t rest,
			       size_t rlen, const char *c2)
{
	const char *s = p->in;
	bool num0 = n0 && strspn(s + e->hpos, "0123456789") >= n0;
	uint64_t type, config;
	int err = tly_evp_parse_symbolic(p, e->hpos, n0);

	if (err < 0)
		return err;
	if (err == 0) {
		if (c2)
			return tly_evp_fail(p, (size_t)(c2 - s), 1, -EINVAL,
					    "unexpected ':' after the modifiers");
		if (!rlen)
			return tly_evp_fail(p, rest, 1, -EINVAL, "missing modifier after ':' "
					    "(expected some of %s)", MOD_CHARS);
		e->mpos = rest;
		e->mlen = rlen;
		return EV_MODS;
	}
	if (!num0 || c2)
		return 0;
	/* TYPE:CONFIG */
	if (!tly_evp_parse_u64(s + e->hpos, n0, &type) || type > UINT32_MAX ||
	    !tly_evp_parse_u64(s + rest, rlen, &config))
		return tly_evp_fail(p, rest, rlen ? rlen : 1, -EINVAL,
				    "expected TYPE:CONFIG numbers");
	err = tly_evp_simple_event(p, (uint32_t)type, config, NULL);
	return err ? err : EV_MODS;
}

/* SYS:EVENT[:MODS] (or SYS:EVENT before /terms/), or libpfm4's "pmu::event:umask". */
static int parse_tp_head(struct tly_parser *p, struct ev_text *e, size_t n0, size_t rest,
			 size_t rlen, const char *c2)
{
	const char *s = p->in;
	size_t elen = c2 ? (size_t)(c2 - s) - rest : rlen;
	int err;

	if (!tly_evp_tp_subsystem_exists(p, e->hpos, n0)) {
		char why[200];
		int rc = tly_evp_parse_pfm(p, e->hpos, e->hlen, why, sizeof(why));

		if (rc <= 0)
			return rc < 0 ? rc : EV_TERMS;
	}
	err = tly_evp_parse_tracepoint(p, e->hpos, n0, rest, elen);
	if (err)
		return err;
	if (c2) {
		if (e->have_terms)
			return tly_evp_fail(p, (size_t)(c2 - s), 1, -EINVAL,
					    "modifiers go after the terms: sys:event/terms/:mods");
		e->mpos = (size_t)(c2 - s) + 1;
		e->mlen = e->end - e->mpos;
		if (!e->mlen)
			return tly_evp_fail(p, (size_t)(c2 - s), 1, -EINVAL,
					    "missing modifier after ':'");
	}
	return EV_TERMS;
}

/* The head: NAME[:MODS] or SYS:EVENT[:MODS] (or SYS:EVENT before /terms/). */
static int parse_head(struct tly_parser *p, struct ev_text *e)
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
	if (tly_evp_tp_subsystem_exists(p, e->hpos, n0) ||
	    !is_mod_span(s + rest, c2 ? (size_t)(c2 - s) - rest : rlen))
		return parse_tp_head(p, e, n0, rest, rlen, c2);
	/* NAME:MODS where NAME is a sysfs alias or a libpfm4 name */
	if (c2)
		return tly_evp_fail(p, (size_t)(c2 - s), 1, -EINVAL, "unexpected ':'");
	if (e->have_terms)
		return tly_evp_fail(p, e->hpos, n0, -EINVAL, "unknown event '%.*s'", (int)n0,
				    s + e->hpos);
	e->hlen = n0;
	e->mpos = rest;
	e->mlen = rlen;
	return parse_name_fallback(p, e);
}

/* The events the head made: their generic terms, their modifiers, their names. */
static int finish_event(struct tly_parser *p, const struct ev_text *e, enum ev_rest rest)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	int err;

	if (rest == EV_TERMS && e->have_terms) {
		err = tly_evp_apply_generic_only(p, e->first, l->nr, e->tpos, e->tlen);
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
		if (!l->ev[i].name && tly_evp_set_str(&l->ev[i].name, s + e->pos, e->end - e->pos))
			return -ENOMEM;
	}
	return 0;
}

/* One event spanning [pos, end). */
static int parse_event(struct tly_parser *p, size_t pos, size_t end)
{
	struct ev_text e = {
		.pos = pos, .end = end, .first = p->list->nr, .hpos = pos, .mpos = end,
	};
	int rest;

	if (end == pos)
		return tly_evp_fail(p, pos, 1, -EINVAL, "expected an event");
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
static int event_end(struct tly_parser *p, size_t pos, size_t *end)
{
	const char *s = p->in;
	size_t i = pos;
	bool mem = !strncmp(s + pos, "mem:", 4);

	while (s[i] && s[i] != ',' && s[i] != '{' && s[i] != '}') {
		if (s[i] == '/' && !mem) {
			const char *close = strchr(s + i + 1, '/');

			if (!close)
				return tly_evp_fail(p, i, 1, -EINVAL,
						    "missing closing '/' after the terms "
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

static int parse_group(struct tly_parser *p, size_t *pos, size_t name_pos, size_t name_len)
{
	struct tally_evlist *l = p->list;
	const char *s = p->in;
	size_t i = *pos + 1, first = l->nr, end;
	int err;

	for (;;) {
		i = skip_ws(s, i);
		if (s[i] == '{')
			return tly_evp_fail(p, i, 1, -EINVAL, "groups cannot be nested");
		if (s[i] == '}' || !s[i])
			return tly_evp_fail(p, i, 1, -EINVAL,
					    l->nr == first ? "empty group: expected an "
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
		return tly_evp_fail(p, i, 1, -EINVAL, "expected ',' or '}' to close the group");
	}
	i++;
	/* leader and members (perf's parse_events__set_leader) */
	l->ev[first].nr_members = (int)(l->nr - first);
	for (size_t k = first; k < l->nr; k++)
		l->ev[k].leader = (int)first;
	if (l->nr - first > 1)
		l->nr_groups++;
	if (name_len && tly_evp_set_str(&l->ev[first].group_name, s + name_pos, name_len))
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

static int parse_all(struct tly_parser *p)
{
	const char *s = p->in;
	size_t i = skip_ws(s, 0), end;
	int err;

	if (!s[i])
		return tly_evp_fail(p, 0, 1, -EINVAL, "empty event list");
	for (;;) {
		i = skip_ws(s, i);
		if (s[i] == '{') {
			err = parse_group(p, &i, 0, 0);
		} else if (s[i] == '}') {
			return tly_evp_fail(p, i, 1, -EINVAL, "'}' without a '{'");
		} else if (!s[i] || s[i] == ',') {
			return tly_evp_fail(p, i, 1, -EINVAL, "expected an event");
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
			return tly_evp_fail(p, i, 1, -EINVAL, "expected ',' between events");
		i++;
		if (!s[skip_ws(s, i)])
			return tly_evp_fail(p, i, 1, -EINVAL, "expected an event after ','");
	}
}

int tally_evlist__add(struct tally_evlist *list, const char *str, struct tally_parse_error *err)
{
	struct tly_parser p = { .list = list, .in = str };
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
	struct tly_parser p = { .list = list, .in = "", .err = NULL };
	struct tally_event *ev;
	int idx;

	p.err = &p.local;
	idx = tly_evp_new_event(&p);
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
