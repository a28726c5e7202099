/*
 * PMU discovery: what the kernel exposes under /sys/bus/event_source/devices and what
 * the CPU itself claims (x86 CPUID leaf 0xA).
 *
 * Each PMU directory gives a type number (the attr.type to use), format/NAME files that
 * say where a term's value goes ("config:0-7,21"), events/NAME aliases ("event=0x3c")
 * with optional .scale/.unit/.per-pkg/.snapshot companions, caps/NAME files and a cpumask
 * for PMUs that count per socket. The sysfs root is a parameter so tests can use a
 * fake tree (tests/data/sysfs/…).
 */
#ifndef TALLY_PMU_H
#define TALLY_PMU_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpumap;

/* Where a format term's value goes: config, config1, config2 or config3 and which bits
 * (the value's bits are spread over the mask's set bits, lowest first). */
struct tally_pmu_format {
	char *name;
	int field;		/* 0 = config, 1 = config1, 2 = config2, 3 = config3 */
	uint64_t mask;
};

struct tally_pmu_alias {
	char *name;		/* "tsc", "cpu-cycles" */
	char *terms;		/* the events/NAME file: "event=0x00" */
	char *unit;		/* events/NAME.unit or NULL */
	double scale;		/* events/NAME.scale or 1.0 */
	bool per_pkg, snapshot;
};

struct tally_pmu_cap {
	char *name;
	char *value;
};

struct tally_pmu {
	char *name;
	uint32_t type;
	struct tally_pmu_format *formats;
	size_t nr_formats;
	struct tally_pmu_alias *events;	/* sorted by name */
	size_t nr_events;
	struct tally_pmu_cap *caps;
	size_t nr_caps;
	struct tally_cpumap *cpus;	/* cpumask file (else cpus: arm64, hybrid), NULL when absent */
};

struct tally_pmus;	/* opaque: tally_pmus__nr and tally_pmus__get walk it */

/* Read every PMU under @sysfs_root/bus/event_source/devices (@sysfs_root NULL = "/sys").
 * -ENOENT when the directory does not exist; unreadable single PMUs are skipped. */
TALLY_API int tally_pmus__new(const char *sysfs_root, struct tally_pmus **out);
TALLY_API void tally_pmus__delete(struct tally_pmus *pmus);
/* Number of PMUs, and PMU i of them (sorted by name; NULL past the end). */
TALLY_API size_t tally_pmus__nr(const struct tally_pmus *pmus);
TALLY_API const struct tally_pmu *tally_pmus__get(const struct tally_pmus *pmus, size_t i);
/* The PMU called @name, or NULL. */
TALLY_API const struct tally_pmu *tally_pmus__find(const struct tally_pmus *pmus, const char *name);
/* The PMU with attr.type @type, or NULL. */
TALLY_API const struct tally_pmu *tally_pmus__find_type(const struct tally_pmus *pmus,
							uint32_t type);

TALLY_API const struct tally_pmu_format *tally_pmu__format(const struct tally_pmu *pmu,
							   const char *name);
TALLY_API const struct tally_pmu_alias *tally_pmu__alias(const struct tally_pmu *pmu,
							 const char *name);
/* The caps/NAME value, or NULL. */
TALLY_API const char *tally_pmu__cap(const struct tally_pmu *pmu, const char *name);
/* Largest value a format can hold (all mask bits set, compacted). */
TALLY_API uint64_t tally_pmu_format__max(const struct tally_pmu_format *fmt);
/* Put @val into the format's bits of *config. -ERANGE when it does not fit. */
TALLY_API int tally_pmu_format__apply(const struct tally_pmu_format *fmt, uint64_t val,
				      uint64_t *config);
/* Parse a format file's text ("config1:0-7,21") into @fmt's field and mask. -EINVAL on
 * a malformed spec. Does not touch fmt->name. */
TALLY_API int tally_pmu_format__parse(const char *spec, struct tally_pmu_format *fmt);

/* The architectural PMU the CPU describes in CPUID leaf 0xA (Intel x86), whether or not
 * the kernel exposes it (a VM often hides it: the kernel then has no "cpu" PMU). On AMD,
 * which has no leaf 0xA, the core counters come from leaves 0x80000001/0x80000022
 * (version 1 = legacy/PerfCtrExtCore, 2 = PerfMonV2; no fixed counters). */
struct tally_cpuid_pmu {
	char vendor[13];		/* "GenuineIntel" */
	unsigned int family, model, stepping;
	bool hypervisor;		/* CPUID.1:ECX[31] */
	unsigned int version;		/* 0 = no architectural PMU */
	unsigned int nr_gp, gp_width;	/* general-purpose counters */
	unsigned int nr_fixed, fixed_width;
	uint32_t events_unavailable;	/* EBX bit vector: 1 = architectural event absent */
	unsigned int nr_arch_events;	/* EAX[31:24]: length of that vector */
};
/* Fill @info from CPUID. -EOPNOTSUPP on a CPU without CPUID leaf 0xA or not x86. */
TALLY_API int tally_cpuid_pmu(struct tally_cpuid_pmu *info);
/* Name of architectural event bit @bit of leaf 0xA's EBX ("core cycles" …), or NULL. */
TALLY_API const char *tally_cpuid_pmu__event_name(unsigned int bit);

#ifdef __cplusplus
}
#endif
#endif
