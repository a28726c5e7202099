/*
 * CPU and thread lists (include/tally/cpumap.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/cpumap.h"
#include "internal/util.h"

#define MAX_CPU 65536

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static struct tally_cpumap *cpumap_new(size_t nr)
{
	struct tally_cpumap *m = calloc(1, sizeof(*m) + nr * sizeof(int));

	if (m)
		m->nr = nr;
	return m;
}

/* Sort and de-duplicate in place. */
static void cpumap_normalize(struct tally_cpumap *m)
{
	size_t i, j = 0;

	qsort(m->cpu, m->nr, sizeof(int), cmp_int);
	for (i = 0; i < m->nr; i++)
		if (j == 0 || m->cpu[j - 1] != m->cpu[i])
			m->cpu[j++] = m->cpu[i];
	m->nr = j;
}

static int parse_uint(const char **p, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v < 0 || v >= MAX_CPU)
		return -EINVAL;
	*p = end;
	*out = v;
	return 0;
}

int tally_cpumap__parse(const char *list, struct tally_cpumap **out, size_t *bad_pos)
{
	const char *p = list;
	struct tally_cpumap *m;
	size_t cap = 16, nr = 0;
	int *cpus;

	*out = NULL;
	if (!list)
		return -EINVAL;
	cpus = malloc(cap * sizeof(int));
	if (!cpus)
		return -ENOMEM;
	while (*p && *p != '\n') {
		long lo, hi;

		if (parse_uint(&p, &lo))
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_uint(&p, &hi) || hi < lo)
				goto bad;
		}
		for (long c = lo; c <= hi; c++) {
			if (nr == cap) {
				int *n = realloc(cpus, 2 * cap * sizeof(int));

				if (!n) {
					free(cpus);
					return -ENOMEM;
				}
				cpus = n;
				cap *= 2;
			}
			cpus[nr++] = (int)c;
		}
		if (*p == ',') {
			p++;
			if (!*p)
				goto bad;
		} else if (*p && *p != '\n') {
			goto bad;
		}
	}
	if (nr == 0)
		goto bad;
	m = cpumap_new(nr);
	if (!m) {
		free(cpus);
		return -ENOMEM;
	}
	memcpy(m->cpu, cpus, nr * sizeof(int));
	free(cpus);
	cpumap_normalize(m);
	*out = m;
	return 0;
bad:
	if (bad_pos)
		*bad_pos = (size_t)(p - list);
	free(cpus);
	return -EINVAL;
}

int tally_cpumap__read_file(const char *path, struct tally_cpumap **out)
{
	char buf[4096];
	int err;

	*out = NULL;
	err = tly_read_file_str(path, buf, sizeof(buf));
	if (err < 0)
		return err;
	return tally_cpumap__parse(buf, out, NULL);
}

int tally_cpumap__online(struct tally_cpumap **out)
{
	long n;
	struct tally_cpumap *m;

	if (tally_cpumap__read_file("/sys/devices/system/cpu/online", out) == 0)
		return 0;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	m = cpumap_new((size_t)n);
	if (!m)
		return -ENOMEM;
	for (long i = 0; i < n; i++)
		m->cpu[i] = (int)i;
	*out = m;
	return 0;
}

int tally_cpumap__nr_usable(void)
{
	cpu_set_t cpus;
	long n;

	if (!sched_getaffinity(0, sizeof(cpus), &cpus)) {
		n = CPU_COUNT(&cpus);
	} else {
		n = sysconf(_SC_NPROCESSORS_ONLN);
	}
	return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

int tally_cpumap__any(struct tally_cpumap **out)
{
	struct tally_cpumap *m = cpumap_new(1);

	*out = m;
	if (!m)
		return -ENOMEM;
	m->cpu[0] = -1;
	return 0;
}

int tally_cpumap__idx(const struct tally_cpumap *map, int cpu)
{
	for (size_t i = 0; map && i < map->nr; i++)
		if (map->cpu[i] == cpu)
			return (int)i;
	return -1;
}

size_t tally_cpumap__format(const struct tally_cpumap *map, char *buf, size_t len)
{
	size_t need = 0, i = 0;

	if (len)
		buf[0] = '\0';
	while (map && i < map->nr) {
		size_t j = i;
		char tmp[32];
		int n;

		while (j + 1 < map->nr && map->cpu[j + 1] == map->cpu[j] + 1)
			j++;
		if (j == i)
			n = snprintf(tmp, sizeof(tmp), "%s%d", need ? "," : "", map->cpu[i]);
		else
			n = snprintf(tmp, sizeof(tmp), "%s%d-%d", need ? "," : "",
				     map->cpu[i], map->cpu[j]);
		if (need + (size_t)n < len)
			memcpy(buf + need, tmp, (size_t)n + 1);
		need += (size_t)n;
		i = j + 1;
	}
	return need;
}

void tally_cpumap__delete(struct tally_cpumap *map)
{
	free(map);
}

static struct tally_threadmap *threadmap_new(size_t nr)
{
	struct tally_threadmap *m = calloc(1, sizeof(*m) + nr * sizeof(pid_t));

	if (m)
		m->nr = nr;
	return m;
}

static int threadmap_push(struct tally_threadmap **m, size_t *cap, pid_t tid)
{
	if ((*m)->nr == *cap) {
		size_t ncap = *cap ? 2 * *cap : 8;
		struct tally_threadmap *n = realloc(*m, sizeof(**m) + ncap * sizeof(pid_t));

		if (!n)
			return -ENOMEM;
		*m = n;
		*cap = ncap;
	}
	(*m)->tid[(*m)->nr++] = tid;
	return 0;
}

/* Parse "1,2,3" into positive pids; -EINVAL on anything else. */
static int parse_pid_list(const char *list, pid_t **out, size_t *nr)
{
	const char *p = list;
	size_t cap = 0;
	pid_t *v = NULL;

	*nr = 0;
	if (!list || !*list)
		return -EINVAL;
	while (*p) {
		char *end;
		long x;

		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		x = strtol(p, &end, 10);
		if (errno || x <= 0 || x > 0x3fffffff)
			goto bad;
		if (*nr == cap) {
			pid_t *n;

			cap = cap ? cap * 2 : 8;
			n = realloc(v, cap * sizeof(pid_t));
			if (!n) {
				free(v);
				return -ENOMEM;
			}
			v = n;
		}
		v[(*nr)++] = (pid_t)x;
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	*out = v;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

int tally_threadmap__parse_tids(const char *list, struct tally_threadmap **out)
{
	pid_t *v;
	size_t nr;
	int err = parse_pid_list(list, &v, &nr);

	*out = NULL;
	if (err)
		return err;
	*out = threadmap_new(nr);
	if (!*out) {
		free(v);
		return -ENOMEM;
	}
	memcpy((*out)->tid, v, nr * sizeof(pid_t));
	free(v);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Append the threads of process @pid (sorted), from /proc/PID/task. -ESRCH when the
 * process is gone. */
static int push_tasks(struct tally_threadmap **m, size_t *cap, pid_t pid)
{
	char path[64];
	struct dirent *de;
	size_t first = (*m)->nr;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -ESRCH;
	while (!err && (de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			err = threadmap_push(m, cap, (pid_t)atoi(de->d_name));
	closedir(d);
	if (!err)
		qsort((*m)->tid + first, (*m)->nr - first, sizeof(pid_t), cmp_pid);
	return err;
}

int tally_threadmap__from_pids(const char *list, struct tally_threadmap **out, pid_t *bad_pid)
{
	struct tally_threadmap *m;
	size_t nr, cap = 0;
	pid_t *pids;
	int err = parse_pid_list(list, &pids, &nr);

	*out = NULL;
	if (err)
		return err;
	m = threadmap_new(0);
	if (!m) {
		free(pids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		err = push_tasks(&m, &cap, pids[i]);
		if (err) {
			if (err == -ESRCH && bad_pid)
				*bad_pid = pids[i];
			free(pids);
			free(m);
			return err;
		}
	}
	free(pids);
	*out = m;
	return 0;
}

int tally_threadmap__all(struct tally_threadmap **out)
{
	struct tally_threadmap *m = threadmap_new(0);
	struct dirent *de;
	size_t cap = 0;
	DIR *proc;
	int err = 0;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	proc = opendir("/proc");
	if (!proc) {
		err = -errno;
		free(m);
		return err;
	}
	while (!err && (de = readdir(proc))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		err = push_tasks(&m, &cap, (pid_t)atoi(de->d_name));
		if (err == -ESRCH)	/* exited meanwhile */
			err = 0;
	}
	closedir(proc);
	if (err) {
		free(m);
		return err;
	}
	*out = m;
	return 0;
}

int tally_threadmap__single(pid_t tid, struct tally_threadmap **out)
{
	*out = threadmap_new(1);
	if (!*out)
		return -ENOMEM;
	(*out)->tid[0] = tid;
	return 0;
}

void tally_threadmap__delete(struct tally_threadmap *map)
{
	free(map);
}
