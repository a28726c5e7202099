/*
 * Fuzz target: the sysfs PMU parser (lib/kernel/pmu.c): format specs ("config1:0-7,21"),
 * event alias files, .scale/.unit companions, type, cpumask and caps files.
 *
 * Input: newline-separated parts, all optional:
 *   0 a format spec, parsed with tally_pmu_format__parse and applied to values;
 *   1 an events/ alias file, 2 its .scale, 3 its .unit, 4 the type file,
 *   5 the cpumask file, 6 a caps/ file, 7 a second format file.
 * Parts 0 and 1-7 are also written into a fake PMU directory "fz" that
 * tally_pmus__new reads next to the fixed fake PMUs of fakesys.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/pmu.h>

#include "fakesys.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const where[] = {
		PMU_DIR "fz/format/a", PMU_DIR "fz/events/ev", PMU_DIR "fz/events/ev.scale",
		PMU_DIR "fz/events/ev.unit", PMU_DIR "fz/type", PMU_DIR "fz/cpumask",
		PMU_DIR "fz/caps/c", PMU_DIR "fz/format/b",
	};
	char *parts[8] = { 0 };
	size_t lens[8] = { 0 };
	const char *root = fakesys_init();

	if (!root || size > 4096)
		return 0;
	/* Split into parts (NUL-terminated copies). */
	size_t start = 0;
	for (int i = 0; i < 8; i++) {
		size_t end = start;
		while (end < size && data[end] != '\n')
			end++;
		lens[i] = start < size ? end - start : 0;
		parts[i] = malloc(lens[i] + 1);
		if (!parts[i])
			goto out;
		if (lens[i])
			memcpy(parts[i], data + start, lens[i]);
		parts[i][lens[i]] = 0;
		start = end < size ? end + 1 : size;
	}

	struct tally_pmu_format fmt = { 0 };
	if (tally_pmu_format__parse(parts[0], &fmt) == 0) {
		uint64_t max = tally_pmu_format__max(&fmt), cfg = 0;
		sink += max + (uint64_t)fmt.field + fmt.mask;
		const uint64_t vals[] = { 0, 1, max, max + 1, UINT64_MAX, 0x5555555555555555ull };
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			if (tally_pmu_format__apply(&fmt, vals[i], &cfg) == 0)
				sink += cfg;
	}

	/* The same texts as sysfs files (type defaults to a valid number when empty). */
	for (int i = 0; i < 8; i++) {
		if (i == 4 && !lens[i])
			fakesys_puts(where[i], "99\n");
		else
			fakesys_write(where[i], parts[i], lens[i]);
	}
	struct tally_pmus *pmus = NULL;
	if (tally_pmus__new(root, &pmus) == 0) {
		for (size_t i = 0; i < tally_pmus__nr(pmus); i++) {
			const struct tally_pmu *p = tally_pmus__get(pmus, i);
			sink += p->type + p->nr_formats + p->nr_events + p->nr_caps;
			for (size_t j = 0; j < p->nr_events; j++) {
				const struct tally_pmu_alias *a = &p->events[j];
				sink += strlen(a->name) + (a->terms ? strlen(a->terms) : 0) +
					(a->unit ? strlen(a->unit) : 0) + (a->scale > 1.0);
			}
			for (size_t j = 0; j < p->nr_caps; j++)
				sink += strlen(p->caps[j].name) + strlen(p->caps[j].value);
		}
		const struct tally_pmu *fz = tally_pmus__find(pmus, "fz");
		if (fz) {
			const struct tally_pmu_format *f = tally_pmu__format(fz, "a");
			if (f)
				sink += f->mask;
			const struct tally_pmu_alias *a = tally_pmu__alias(fz, "ev");
			if (a)
				sink += a->scale > 1.0;
			const char *c = tally_pmu__cap(fz, "c");
			if (c)
				sink += strlen(c);
			sink += (uintptr_t)tally_pmus__find_type(pmus, fz->type);
		}
		tally_pmus__delete(pmus);
	}
out:
	for (int i = 0; i < 8; i++)
		free(parts[i]);
	return 0;
}
