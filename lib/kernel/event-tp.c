/*
 * The event parser's tracepoints and breakpoints (lib/kernel/event.c has the grammar):
 * sys:event with globs, ids read from tracefs, perf 6.1's tracepoint defaults (period
 * 1, RAW|TIME|CPU|PERIOD); mem:ADDR[/LEN][:rwx] with perf's breakpoint defaults.
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

/* ---- tracepoints ------------------------------------------------------------ */

static int tracefs_dir(struct tally_evlist *l, char *buf, size_t len)
{
	if (l->tracefs) {
		snprintf(buf, len, "%s", l->tracefs);
		return 0;
	}
	return tally_tracefs__find(l->sysfs_root, buf, len);
}

static int tp_add(struct tly_parser *p, const char *sys, const char *name, uint64_t id)
{
	int idx = tly_evp_new_event(p);
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
bool tly_evp_tp_subsystem_exists(struct tly_parser *p, size_t pos, size_t len)
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

int tly_evp_parse_tracepoint(struct tly_parser *p, size_t spos, size_t slen, size_t epos,
			     size_t elen)
{
	char tdir[PATH_MAX - 512], path[PATH_MAX], sysp[256], evp[256];
	char **sys = NULL;
	size_t nsys = 0, added = 0;
	int err;

	if (slen >= sizeof(sysp) || elen >= sizeof(evp))
		return tly_evp_fail(p, spos, slen + elen + 1, -EINVAL, "tracepoint name too long");
	if (!elen)
		return tly_evp_fail(p, epos, 1, -EINVAL,
				    "expected modifiers or a tracepoint name after "
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
			return tly_evp_fail(p, spos, slen + 1 + elen, -EACCES,
					    "cannot read tracepoints: %s", why);
		return tly_evp_fail(p, spos, slen + 1 + elen, -ENOENT,
				    "unknown tracepoint '%s:%s': %s", sysp, evp, why);
	}
	snprintf(path, sizeof(path), "%s/events", tdir);
	err = tly_dir_list(path, sysp, true, &sys, &nsys);
	if (err == -EACCES || err == -EPERM)
		return tly_evp_fail(p, spos, slen + 1 + elen, -EACCES,
				    "cannot read tracepoints in %s: permission denied (needs root, or "
				    "read access to tracefs)", path);
	if (err)
		return tly_evp_fail(p, spos, slen + 1 + elen, err, "cannot read %s: %s", path,
				    strerror(-err));
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
				err = tly_evp_fail(p, spos, slen + 1 + elen, -EACCES,
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
		return tly_evp_fail(p, spos, slen + 1 + elen, -ENOENT,
				    tly_evp_has_glob(sysp, slen) || tly_evp_has_glob(evp, elen) ?
				    "no tracepoint matches '%s:%s' in %s/events" :
				    "unknown tracepoint '%s:%s' (no %s/events/%s/%s/id)",
				    sysp, evp, tdir, sysp, evp);
	return 0;
}

/* ---- breakpoints ------------------------------------------------------------ */

/* "mem:ADDR[/LEN][:ACCESS][:MODS]", spanning [pos, end). Sets mpos, mlen to the modifiers. */
int tly_evp_parse_breakpoint(struct tly_parser *p, size_t pos, size_t end, size_t *mpos,
			     size_t *mlen)
{
	const char *s = p->in;
	size_t i = pos + 4, a = i;
	uint64_t addr, len = 0;
	struct tally_event *ev;
	int idx, type = 0;

	while (i < end && s[i] != '/' && s[i] != ':')
		i++;
	if (!tly_evp_parse_u64(s + a, i - a, &addr))
		return tly_evp_fail(p, a, i > a ? i - a : 1, -EINVAL,
				    "expected a breakpoint address (mem:0x1000[/len][:rwx])");
	if (i < end && s[i] == '/') {
		size_t l = ++i;

		while (i < end && s[i] != ':')
			i++;
		if (!tly_evp_parse_u64(s + l, i - l, &len))
			return tly_evp_fail(p, l, i > l ? i - l : 1, -EINVAL,
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
					return tly_evp_fail(p, k, 1, -EINVAL,
							    "breakpoint access '%c' given twice", s[k]);
				type |= bit;
			}
			if (i < end) {
				*mpos = i + 1;
				*mlen = end - i - 1;
				if (!*mlen)
					return tly_evp_fail(p, i, 1, -EINVAL,
							    "missing modifier after ':'");
			}
		} else {
			*mpos = t;
			*mlen = end - t;
			if (memchr(s + t, ':', end - t) || strspn(s + t, MOD_CHARS) < end - t)
				return tly_evp_fail(p, t, end - t, -EINVAL,
						    "bad breakpoint access '%.*s' (expected r, w, x or a "
						    "combination like rw)", (int)(end - t), s + t);
		}
	}
	if (!type)
		type = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
	if (!len)
		len = type == HW_BREAKPOINT_X ? sizeof(long) : HW_BREAKPOINT_LEN_4;
	idx = tly_evp_new_event(p);
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
