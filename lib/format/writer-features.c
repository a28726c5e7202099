/*
 * Header features that describe the machine a file was recorded on: hostname, kernel
 * release, arch, CPUs, CPU identification, memory, topology, PMU type numbers. Each is
 * built from procfs/sysfs exactly in the encoding perf 6.1 reads back; a source that
 * cannot be read leaves its feature out (readers list it as missing) rather than
 * writing a guess.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tally/writer.h>
#include "internal/util.h"
#include "internal/writer.h"

/* Value of "KEY<spaces>: value" in /proc/cpuinfo (first occurrence). */
static int cpuinfo_value(const char *info, const char *key, char *out, size_t len)
{
	const char *p = info;
	size_t klen = strlen(key);

	while (p && *p) {
		if (!strncmp(p, key, klen) && (p[klen] == ' ' || p[klen] == '\t' || p[klen] == ':')) {
			const char *v = strchr(p, ':'), *e;
			size_t n;

			if (!v)
				return -ENOENT;
			v++;
			while (*v == ' ' || *v == '\t')
				v++;
			e = strchr(v, '\n');
			n = e ? (size_t)(e - v) : strlen(v);
			if (n >= len)
				n = len - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* Collapse runs of blanks and trim (perf does this to the model name). */
static void squeeze(char *s)
{
	char *d = s, *p = s;
	bool space = true;

	for (; *p; p++) {
		if (isspace((unsigned char)*p)) {
			if (!space)
				*d++ = ' ';
			space = true;
		} else {
			*d++ = *p;
			space = false;
		}
	}
	if (d > s && d[-1] == ' ')
		d--;
	*d = '\0';
}

static int cpu_features(struct tally_writer *w)
{
	char *info = NULL, model[256], vendor[64], fam[16], mod[16], step[16], id[160];
	size_t len;
	int err;

	if (tly_read_file_all("/proc/cpuinfo", &info, &len))
		return 0;
	err = 0;
	if (!cpuinfo_value(info, "model name", model, sizeof(model))) {
		squeeze(model);
		err = tally_writer__set_feature_string(w, TALLY_FEAT_CPUDESC, model);
	}
	if (!err && !cpuinfo_value(info, "vendor_id", vendor, sizeof(vendor)) &&
	    !cpuinfo_value(info, "cpu family", fam, sizeof(fam)) &&
	    !cpuinfo_value(info, "model", mod, sizeof(mod)) &&
	    !cpuinfo_value(info, "stepping", step, sizeof(step))) {
		snprintf(id, sizeof(id), "%s,%s,%s,%s", vendor, fam, mod, step);
		err = tally_writer__set_feature_string(w, TALLY_FEAT_CPUID, id);
	}
	free(info);
	return err;
}

static int meminfo_kb(const char *path, const char *key, uint64_t *kb)
{
	char *info = NULL, *p;
	size_t len;

	if (tly_read_file_all(path, &info, &len))
		return -ENOENT;
	p = strstr(info, key);
	if (!p || sscanf(p + strlen(key), " %" SCNu64, kb) != 1) {
		free(info);
		return -ENOENT;
	}
	free(info);
	return 0;
}

/* Number of CPUs the kernel could bring up (the highest present CPU + 1). */
static int cpus_avail(void)
{
	char buf[256];
	const char *p;
	int max = -1;

	if (tly_read_file_str("/sys/devices/system/cpu/present", buf, sizeof(buf)) <= 0)
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	for (p = buf; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v > max)
			max = (int)v;
		p = end;
		while (*p == ',' || *p == '-')
			p++;
	}
	return max + 1;
}

/* Append S to a list of unique strings. */
static int add_unique(char ***list, size_t *nr, const char *s)
{
	char **n;
	size_t i;

	for (i = 0; i < *nr; i++)
		if (!strcmp((*list)[i], s))
			return 0;
	n = realloc(*list, (*nr + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	*list = n;
	n[*nr] = strdup(s);
	if (!n[*nr])
		return -ENOMEM;
	(*nr)++;
	return 0;
}

static void free_list(char **list, size_t nr)
{
	while (nr)
		free(list[--nr]);
	free(list);
}

static int put_list(struct tly_buf *b, char **list, size_t nr)
{
	int err = tly_feat__u32(b, (uint32_t)nr);
	size_t i;

	for (i = 0; !err && i < nr; i++)
		err = tly_feat__string(b, list[i]);
	return err;
}

static int read_int(const char *fmt, int cpu, int *v)
{
	char path[128];
	uint64_t u;

	snprintf(path, sizeof(path), fmt, cpu);
	if (tly_read_file_u64(path, &u))
		return -ENOENT;
	*v = (int)u;
	return 0;
}

/* CPU_TOPOLOGY: core siblings, thread siblings, {core, socket} per CPU, die siblings,
 * die per CPU. */
static int topology_feature(struct tally_writer *w, int nr_cpus)
{
	char **cores = NULL, **threads = NULL, **dies = NULL, path[128], buf[512];
	size_t ncores = 0, nthreads = 0, ndies = 0;
	struct tly_buf b = {0};
	int cpu, err = 0, v;

	for (cpu = 0; !err && cpu < nr_cpus; cpu++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_siblings_list", cpu);
		if (tly_read_file_str(path, buf, sizeof(buf)) > 0)
			err = add_unique(&cores, &ncores, buf);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
		if (!err && tly_read_file_str(path, buf, sizeof(buf)) > 0)
			err = add_unique(&threads, &nthreads, buf);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/die_cpus_list", cpu);
		if (!err && tly_read_file_str(path, buf, sizeof(buf)) > 0)
			err = add_unique(&dies, &ndies, buf);
	}
	if (err || !ncores || !nthreads)
		goto out;
	err = put_list(&b, cores, ncores);
	if (!err)
		err = put_list(&b, threads, nthreads);
	for (cpu = 0; !err && cpu < nr_cpus; cpu++) {
		int core = -1, sock = -1;

		if (read_int("/sys/devices/system/cpu/cpu%d/topology/core_id", cpu, &v) == 0)
			core = v;
		if (read_int("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu, &v) == 0)
			sock = v;
		err = tly_feat__u32(&b, (uint32_t)core);
		if (!err)
			err = tly_feat__u32(&b, (uint32_t)sock);
	}
	if (!err && ndies) {
		err = put_list(&b, dies, ndies);
		for (cpu = 0; !err && cpu < nr_cpus; cpu++) {
			int die = 0;

			if (read_int("/sys/devices/system/cpu/cpu%d/topology/die_id", cpu, &v) == 0)
				die = v;
			err = tly_feat__u32(&b, (uint32_t)die);
		}
	}
	if (!err)
		err = tally_writer__set_feature(w, TALLY_FEAT_CPU_TOPOLOGY, b.data, b.len);
out:
	free_list(cores, ncores);
	free_list(threads, nthreads);
	free_list(dies, ndies);
	tly_buf__exit(&b);
	return err;
}

/* NUMA_TOPOLOGY: u32 nr; {u32 node; u64 total kB; u64 free kB; string cpus}[nr]. */
static int numa_feature(struct tally_writer *w)
{
	DIR *d = opendir("/sys/devices/system/node");
	struct tly_buf nodes = {0}, b = {0};
	struct dirent *de;
	uint32_t nr = 0;
	int err = 0;

	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		char path[300], cpus[512];
		uint64_t total, freekb;
		char *end;
		unsigned long n;

		if (strncmp(de->d_name, "node", 4) || !isdigit((unsigned char)de->d_name[4]))
			continue;
		n = strtoul(de->d_name + 4, &end, 10);
		if (*end)
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/node/%s/meminfo", de->d_name);
		if (meminfo_kb(path, "MemTotal:", &total) || meminfo_kb(path, "MemFree:", &freekb))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/node/%s/cpulist", de->d_name);
		if (tly_read_file_str(path, cpus, sizeof(cpus)) < 0)
			cpus[0] = '\0';
		err = tly_feat__u32(&nodes, (uint32_t)n);
		if (!err)
			err = tly_feat__u64(&nodes, total);
		if (!err)
			err = tly_feat__u64(&nodes, freekb);
		if (!err)
			err = tly_feat__string(&nodes, cpus);
		nr++;
	}
	closedir(d);
	if (!err && nr) {
		err = tly_feat__u32(&b, nr);
		if (!err)
			err = tly_buf__append(&b, nodes.data, nodes.len);
		if (!err)
			err = tally_writer__set_feature(w, TALLY_FEAT_NUMA_TOPOLOGY, b.data, b.len);
	}
	tly_buf__exit(&nodes);
	tly_buf__exit(&b);
	return err;
}

/* PMU_MAPPINGS: u32 nr; {u32 type; string name}[nr]. */
static int pmu_feature(struct tally_writer *w)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct tly_buf pmus = {0}, b = {0};
	struct dirent *de;
	uint32_t nr = 0;
	int err = 0;

	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		char path[300];
		uint64_t type;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", de->d_name);
		if (tly_read_file_u64(path, &type))
			continue;
		err = tly_feat__u32(&pmus, (uint32_t)type);
		if (!err)
			err = tly_feat__string(&pmus, de->d_name);
		nr++;
	}
	closedir(d);
	if (!err && nr) {
		err = tly_feat__u32(&b, nr);
		if (!err)
			err = tly_buf__append(&b, pmus.data, pmus.len);
		if (!err)
			err = tally_writer__set_feature(w, TALLY_FEAT_PMU_MAPPINGS, b.data, b.len);
	}
	tly_buf__exit(&pmus);
	tly_buf__exit(&b);
	return err;
}

int tally_writer__set_host_features(struct tally_writer *w, const char *version_str)
{
	struct utsname u;
	uint64_t kb;
	int err = 0, avail = cpus_avail();
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	if (!uname(&u)) {
		err = tally_writer__set_feature_string(w, TALLY_FEAT_HOSTNAME, u.nodename);
		if (!err)
			err = tally_writer__set_feature_string(w, TALLY_FEAT_OSRELEASE, u.release);
		if (!err)
			err = tally_writer__set_feature_string(w, TALLY_FEAT_ARCH, u.machine);
	}
	if (!err && version_str)
		err = tally_writer__set_feature_string(w, TALLY_FEAT_VERSION, version_str);
	if (!err && avail > 0 && online > 0) {
		uint32_t n[2] = { (uint32_t)avail, (uint32_t)online };

		err = tally_writer__set_feature(w, TALLY_FEAT_NRCPUS, n, sizeof(n));
	}
	if (!err)
		err = cpu_features(w);
	if (!err && !meminfo_kb("/proc/meminfo", "MemTotal:", &kb))
		err = tally_writer__set_feature(w, TALLY_FEAT_TOTAL_MEM, &kb, sizeof(kb));
	if (!err && avail > 0)
		err = topology_feature(w, avail);
	if (!err)
		err = numa_feature(w);
	if (!err)
		err = pmu_feature(w);
	return err;
}
