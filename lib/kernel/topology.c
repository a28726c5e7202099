/*
 * CPU topology from sysfs (include/tally/topology.h).
 *
 * Each /sys/devices/system/cpu/cpuN/topology/ directory names its core, die and
 * package; the NUMA node is the nodeN entry linked inside cpuN/. Missing files
 * (old kernels have no die_id) read as 0, like perf.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/topology.h"
#include "internal/util.h"

static int read_int(const char *dir, const char *file, int dflt)
{
	char path[PATH_MAX + 64];
	uint64_t v;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (tly_read_file_u64(path, &v) < 0)
		return dflt;
	return (int)v;
}

static int cpu_node(const char *cpudir)
{
	DIR *d = opendir(cpudir);
	struct dirent *de;
	int node = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long n;

		if (strncmp(de->d_name, "node", 4))
			continue;
		n = strtol(de->d_name + 4, &end, 10);
		if (end != de->d_name + 4 && !*end && n >= 0) {
			node = (int)n;
			break;
		}
	}
	closedir(d);
	return node;
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct tally_cpu_topo *x = a, *y = b;

	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

int tally_topology__read(const char *root, struct tally_topology **out)
{
	char dirpath[PATH_MAX];
	struct tally_topology *t = NULL;
	DIR *d;
	struct dirent *de;
	int cap = 0;

	if (!out)
		return -EINVAL;
	*out = NULL;
	snprintf(dirpath, sizeof(dirpath), "%s/devices/system/cpu", root ? root : "/sys");
	d = opendir(dirpath);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char cpudir[PATH_MAX], topo[PATH_MAX + 16];
		struct tally_cpu_topo *e;
		char *end;
		long n;

		if (strncmp(de->d_name, "cpu", 3))
			continue;
		n = strtol(de->d_name + 3, &end, 10);
		if (end == de->d_name + 3 || *end || n < 0 || n > INT_MAX)
			continue;
		if (!t || t->nr == cap) {
			int ncap = cap ? cap * 2 : 16;
			struct tally_topology *nt;

			nt = realloc(t, sizeof(*t) + (size_t)ncap * sizeof(t->cpu[0]));

			if (!nt) {
				free(t);
				closedir(d);
				return -ENOMEM;
			}
			if (!t)
				nt->nr = 0;
			t = nt;
			cap = ncap;
		}
		if (snprintf(cpudir, sizeof(cpudir), "%s/%.*s", dirpath, 32, de->d_name) >=
		    (int)sizeof(cpudir))
			continue;
		snprintf(topo, sizeof(topo), "%s/topology", cpudir);
		e = &t->cpu[t->nr++];
		e->cpu = (int)n;
		e->core = read_int(topo, "core_id", 0);
		e->die = read_int(topo, "die_id", 0);
		e->socket = read_int(topo, "physical_package_id", 0);
		e->node = cpu_node(cpudir);
	}
	closedir(d);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
	}
	qsort(t->cpu, (size_t)t->nr, sizeof(t->cpu[0]), cmp_cpu);
	*out = t;
	return 0;
}

const struct tally_cpu_topo *tally_topology__cpu(const struct tally_topology *t, int cpu)
{
	int lo = 0, hi;

	if (!t)
		return NULL;
	hi = t->nr - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (t->cpu[mid].cpu == cpu)
			return &t->cpu[mid];
		if (t->cpu[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

void tally_topology__delete(struct tally_topology *t)
{
	free(t);
}
