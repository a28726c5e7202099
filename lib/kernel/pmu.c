/*
 * PMU discovery from sysfs and CPUID. See include/tally/pmu.h.
 *
 * Everything is read once into plain arrays; lookups are by name (a linear scan: a
 * machine has tens of PMUs). Missing optional files (caps, cpumask, .unit …) are simply
 * absent.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/pmu.h>

#include "internal/event.h"

#include "internal/util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

__attribute__((format(printf, 3, 4)))
static void pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

int tally_pmu_format__parse(const char *spec, struct tally_pmu_format *fmt)
{
	const char *p;
	uint64_t mask = 0;

	if (!strncmp(spec, "config3:", 8)) {
		fmt->field = 3;
		p = spec + 8;
	} else if (!strncmp(spec, "config2:", 8)) {
		fmt->field = 2;
		p = spec + 8;
	} else if (!strncmp(spec, "config1:", 8)) {
		fmt->field = 1;
		p = spec + 8;
	} else if (!strncmp(spec, "config:", 7)) {
		fmt->field = 0;
		p = spec + 7;
	} else {
		return -EINVAL;
	}
	for (;;) {
		char *end;
		unsigned long lo, hi;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (lo > 63 || hi > 63 || hi < lo)
			return -EINVAL;
		for (unsigned long b = lo; b <= hi; b++)
			mask |= 1ULL << b;
		if (*p == ',') {
			p++;
			continue;
		}
		while (*p == ' ' || *p == '\n')
			p++;
		if (*p)
			return -EINVAL;
		break;
	}
	fmt->mask = mask;
	return 0;
}

uint64_t tally_pmu_format__max(const struct tally_pmu_format *fmt)
{
	int bits = __builtin_popcountll(fmt->mask);

	return bits >= 64 ? UINT64_MAX : (1ULL << bits) - 1;
}

int tally_pmu_format__apply(const struct tally_pmu_format *fmt, uint64_t val, uint64_t *config)
{
	uint64_t out = *config;
	int vbit = 0;

	if (val > tally_pmu_format__max(fmt))
		return -ERANGE;
	for (int b = 0; b < 64; b++) {
		if (!(fmt->mask & (1ULL << b)))
			continue;
		if (val & (1ULL << vbit))
			out |= 1ULL << b;
		else
			out &= ~(1ULL << b);
		vbit++;
	}
	*config = out;
	return 0;
}

static int load_formats(struct tally_pmu *pmu, const char *dir)
{
	char path[PATH_MAX], buf[256];
	char **names;
	size_t nr;
	int err = tly_dir_list(dir, NULL, false, &names, &nr);

	if (err)
		return err == -ENOENT ? 0 : err;
	pmu->formats = calloc(nr ? nr : 1, sizeof(*pmu->formats));
	if (!pmu->formats) {
		tly_strv_free(names, nr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		struct tally_pmu_format *f = &pmu->formats[pmu->nr_formats];

		pathf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (tly_read_file_str(path, buf, sizeof(buf)) < 0)
			continue;
		if (tally_pmu_format__parse(buf, f))
			continue;
		f->name = names[i];
		names[i] = NULL;
		pmu->nr_formats++;
	}
	tly_strv_free(names, nr);
	return 0;
}

static int load_events(struct tally_pmu *pmu, const char *dir)
{
	char path[PATH_MAX], buf[256];
	char **names;
	size_t nr;
	int err = tly_dir_list(dir, NULL, false, &names, &nr);

	if (err)
		return err == -ENOENT ? 0 : err;
	pmu->events = calloc(nr ? nr : 1, sizeof(*pmu->events));
	if (!pmu->events) {
		tly_strv_free(names, nr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		struct tally_pmu_alias *a = &pmu->events[pmu->nr_events];
		char *terms = NULL;
		size_t len;

		if (strchr(names[i], '.'))
			continue;	/* .scale/.unit/… companions */
		pathf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (tly_read_file_all(path, &terms, &len))
			continue;
		while (len && isspace((unsigned char)terms[len - 1]))
			terms[--len] = 0;
		a->name = names[i];
		names[i] = NULL;
		a->terms = terms;
		a->scale = 1.0;
		pathf(path, sizeof(path), "%s/%s.unit", dir, a->name);
		if (tly_read_file_str(path, buf, sizeof(buf)) > 0) {
			char *s = buf;

			while (isspace((unsigned char)*s))
				s++;
			if (*s)
				a->unit = strdup(s);
		}
		pathf(path, sizeof(path), "%s/%s.scale", dir, a->name);
		if (tly_read_file_str(path, buf, sizeof(buf)) > 0) {
			char *end;
			double v = strtod(buf, &end);

			if (end != buf && v != 0)
				a->scale = v;
		}
		pathf(path, sizeof(path), "%s/%s.per-pkg", dir, a->name);
		if (tly_read_file_str(path, buf, sizeof(buf)) > 0)
			a->per_pkg = atoi(buf) != 0;
		pathf(path, sizeof(path), "%s/%s.snapshot", dir, a->name);
		if (tly_read_file_str(path, buf, sizeof(buf)) > 0)
			a->snapshot = atoi(buf) != 0;
		pmu->nr_events++;
	}
	tly_strv_free(names, nr);
	return 0;
}

static int load_caps(struct tally_pmu *pmu, const char *dir)
{
	char path[PATH_MAX], buf[256];
	char **names;
	size_t nr;
	int err = tly_dir_list(dir, NULL, false, &names, &nr);

	if (err)
		return err == -ENOENT ? 0 : err;
	pmu->caps = calloc(nr ? nr : 1, sizeof(*pmu->caps));
	if (!pmu->caps) {
		tly_strv_free(names, nr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		struct tally_pmu_cap *c = &pmu->caps[pmu->nr_caps];

		pathf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (tly_read_file_str(path, buf, sizeof(buf)) < 0)
			continue;
		c->value = strdup(buf);
		if (!c->value)
			continue;
		c->name = names[i];
		names[i] = NULL;
		pmu->nr_caps++;
	}
	tly_strv_free(names, nr);
	return 0;
}

static void pmu_exit(struct tally_pmu *pmu)
{
	free(pmu->name);
	for (size_t i = 0; i < pmu->nr_formats; i++)
		free(pmu->formats[i].name);
	free(pmu->formats);
	for (size_t i = 0; i < pmu->nr_events; i++) {
		free(pmu->events[i].name);
		free(pmu->events[i].terms);
		free(pmu->events[i].unit);
	}
	free(pmu->events);
	for (size_t i = 0; i < pmu->nr_caps; i++) {
		free(pmu->caps[i].name);
		free(pmu->caps[i].value);
	}
	free(pmu->caps);
	tally_cpumap__delete(pmu->cpus);
}

static int load_pmu(struct tally_pmu *pmu, const char *devdir, const char *name)
{
	char path[PATH_MAX];
	uint64_t type;
	int err;

	memset(pmu, 0, sizeof(*pmu));
	pathf(path, sizeof(path), "%s/%s/type", devdir, name);
	err = tly_read_file_u64(path, &type);
	if (err)
		return err;
	pmu->name = strdup(name);
	if (!pmu->name)
		return -ENOMEM;
	pmu->type = (uint32_t)type;
	pathf(path, sizeof(path), "%s/%s/format", devdir, name);
	err = load_formats(pmu, path);
	if (!err) {
		pathf(path, sizeof(path), "%s/%s/events", devdir, name);
		err = load_events(pmu, path);
	}
	if (!err) {
		pathf(path, sizeof(path), "%s/%s/caps", devdir, name);
		err = load_caps(pmu, path);
	}
	if (!err) {
		pathf(path, sizeof(path), "%s/%s/cpumask", devdir, name);
		if (tally_cpumap__read_file(path, &pmu->cpus)) {
			/* core PMUs of arm64 and hybrid x86 call it "cpus" */
			pathf(path, sizeof(path), "%s/%s/cpus", devdir, name);
			if (tally_cpumap__read_file(path, &pmu->cpus))
				pmu->cpus = NULL;
		}
	}
	if (err)
		pmu_exit(pmu);
	return err;
}

int tally_pmus__new(const char *sysfs_root, struct tally_pmus **out)
{
	char devdir[PATH_MAX];
	struct tally_pmus *pmus;
	char **names;
	size_t nr;
	int err;

	*out = NULL;
	pathf(devdir, sizeof(devdir), "%s/bus/event_source/devices",
		 sysfs_root ? sysfs_root : "/sys");
	err = tly_dir_list(devdir, NULL, false, &names, &nr);
	if (err)
		return err;
	pmus = calloc(1, sizeof(*pmus));
	if (!pmus) {
		tly_strv_free(names, nr);
		return -ENOMEM;
	}
	pmus->pmu = calloc(nr ? nr : 1, sizeof(*pmus->pmu));
	if (!pmus->pmu) {
		free(pmus);
		tly_strv_free(names, nr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		err = load_pmu(&pmus->pmu[pmus->nr], devdir, names[i]);
		if (err == -ENOMEM) {
			tly_strv_free(names, nr);
			tally_pmus__delete(pmus);
			return err;
		}
		if (!err)
			pmus->nr++;
	}
	tly_strv_free(names, nr);
	*out = pmus;
	return 0;
}

void tally_pmus__delete(struct tally_pmus *pmus)
{
	if (!pmus)
		return;
	for (size_t i = 0; i < pmus->nr; i++)
		pmu_exit(&pmus->pmu[i]);
	free(pmus->pmu);
	free(pmus);
}

size_t tally_pmus__nr(const struct tally_pmus *pmus)
{
	return pmus->nr;
}

const struct tally_pmu *tally_pmus__get(const struct tally_pmus *pmus, size_t i)
{
	return i < pmus->nr ? &pmus->pmu[i] : NULL;
}

const struct tally_pmu *tally_pmus__find(const struct tally_pmus *pmus, const char *name)
{
	if (!pmus || !name)
		return NULL;
	for (size_t i = 0; i < pmus->nr; i++)
		if (!strcmp(pmus->pmu[i].name, name))
			return &pmus->pmu[i];
	return NULL;
}

const struct tally_pmu *tally_pmus__find_type(const struct tally_pmus *pmus, uint32_t type)
{
	if (!pmus)
		return NULL;
	for (size_t i = 0; i < pmus->nr; i++)
		if (pmus->pmu[i].type == type)
			return &pmus->pmu[i];
	return NULL;
}

const struct tally_pmu_format *tally_pmu__format(const struct tally_pmu *pmu, const char *name)
{
	for (size_t i = 0; pmu && i < pmu->nr_formats; i++)
		if (!strcmp(pmu->formats[i].name, name))
			return &pmu->formats[i];
	return NULL;
}

const struct tally_pmu_alias *tally_pmu__alias(const struct tally_pmu *pmu, const char *name)
{
	/* sysfs alias names are matched case-insensitively, as perf does */
	for (size_t i = 0; pmu && i < pmu->nr_events; i++)
		if (!strcasecmp(pmu->events[i].name, name))
			return &pmu->events[i];
	return NULL;
}

const char *tally_pmu__cap(const struct tally_pmu *pmu, const char *name)
{
	for (size_t i = 0; pmu && i < pmu->nr_caps; i++)
		if (!strcmp(pmu->caps[i].name, name))
			return pmu->caps[i].value;
	return NULL;
}

int tally_cpuid_pmu(struct tally_cpuid_pmu *info)
{
	memset(info, 0, sizeof(*info));
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d, max;

	if (!__get_cpuid(0, &max, &b, &c, &d))
		return -EOPNOTSUPP;
	memcpy(info->vendor, &b, 4);
	memcpy(info->vendor + 4, &d, 4);
	memcpy(info->vendor + 8, &c, 4);
	info->vendor[12] = 0;
	if (max >= 1) {
		__cpuid(1, a, b, c, d);
		unsigned int fam = (a >> 8) & 0xf, model = (a >> 4) & 0xf;

		if (fam == 0xf)
			fam += (a >> 20) & 0xff;
		if (fam == 0x6 || fam >= 0xf)
			model |= ((a >> 16) & 0xf) << 4;
		info->family = fam;
		info->model = model;
		info->stepping = a & 0xf;
		info->hypervisor = (c >> 31) & 1;
	}
	if (!strcmp(info->vendor, "AuthenticAMD") || !strcmp(info->vendor, "HygonGenuine")) {
		/* AMD has no leaf 0xA: core counters from 0x80000001 ECX[23] (PerfCtrExtCore:
		 * 6 counters, else the legacy 4) and 0x80000022 (PerfMonV2: EBX[3:0]). */
		unsigned int ext;

		__cpuid(0x80000000, ext, b, c, d);
		if (ext < 0x80000001)
			return -EOPNOTSUPP;
		__cpuid(0x80000001, a, b, c, d);
		info->version = 1;
		info->nr_gp = (c >> 23) & 1 ? 6 : 4;
		info->gp_width = 48;
		if (ext >= 0x80000022) {
			__cpuid(0x80000022, a, b, c, d);
			if (a & 1) {
				info->version = 2;
				info->nr_gp = b & 0xf;
			}
		}
		return 0;
	}
	if (max < 0xa)
		return -EOPNOTSUPP;
	__cpuid(0xa, a, b, c, d);
	info->version = a & 0xff;
	info->nr_gp = (a >> 8) & 0xff;
	info->gp_width = (a >> 16) & 0xff;
	info->nr_arch_events = (a >> 24) & 0xff;
	info->events_unavailable = b;
	if (info->version > 1) {
		info->nr_fixed = d & 0x1f;
		info->fixed_width = (d >> 5) & 0xff;
	}
	return 0;
#else
	return -EOPNOTSUPP;
#endif
}

const char *tally_cpuid_pmu__event_name(unsigned int bit)
{
	static const char *const names[] = {
		"core cycles", "instructions retired", "reference cycles",
		"LLC references", "LLC misses", "branch instructions retired",
		"branch mispredicts retired", "top-down slots",
	};

	return bit < TLY_ARRAY_SIZE(names) ? names[bit] : NULL;
}
