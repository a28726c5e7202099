/*
 * CPU topology: which core, die, socket (package) and NUMA node each CPU belongs to,
 * read from sysfs. Used to aggregate per-CPU counts like perf stat --per-core,
 * --per-die, --per-socket and --per-node.
 */
#ifndef TALLY_TOPOLOGY_H
#define TALLY_TOPOLOGY_H

#include <tally/api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpu_topo {
	int cpu;
	int core;	/* topology/core_id */
	int die;	/* topology/die_id (0 when absent) */
	int socket;	/* topology/physical_package_id */
	int node;	/* the nodeN directory holding the CPU (0 when there is no NUMA info) */
};

struct tally_topology {
	int nr;				/* entries */
	struct tally_cpu_topo cpu[];	/* sorted by cpu */
};

/* Read the topology of CPUs 0..max online/possible from root (NULL: "/sys"; tests pass
 * a fake tree). 0, -ENOENT when the cpu directory is missing, -ENOMEM. */
TALLY_API int tally_topology__read(const char *root, struct tally_topology **out);
/* The entry for @cpu or NULL. */
TALLY_API const struct tally_cpu_topo *tally_topology__cpu(const struct tally_topology *t, int cpu);
TALLY_API void tally_topology__delete(struct tally_topology *t);

#ifdef __cplusplus
}
#endif
#endif
