/*
 * -u/--uid and -r/--realtime of record and top, the cgroup mount of stat and record
 * (target.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tally/cpumap.h>

#include "cmd.h"
#include "target.h"

int cli_uid_pids(const char *user, char **out)
{
	struct passwd *pw = getpwnam(user);
	char *end, *list = NULL;
	size_t len = 0;
	unsigned long uid;
	FILE *f;
	DIR *d;
	struct dirent *de;

	*out = NULL;
	if (pw) {
		uid = pw->pw_uid;
	} else {
		errno = 0;
		uid = strtoul(user, &end, 10);
		if (errno || end == user || *end || uid > UINT32_MAX) {
			cli_error("-u/--uid: no user '%s'", user);
			return 129;
		}
	}
	d = opendir("/proc");
	f = d ? open_memstream(&list, &len) : NULL;
	if (!f) {
		if (d)
			closedir(d);
		cli_error("-u/--uid: cannot list /proc: %s", strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		char path[300];
		struct stat st;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s", de->d_name);
		if (!stat(path, &st) && st.st_uid == uid)
			fprintf(f, "%s%s", ftell(f) ? "," : "", de->d_name);
	}
	closedir(d);
	if (fclose(f)) {
		free(list);
		cli_error("out of memory");
		return 1;
	}
	if (!list[0]) {
		free(list);
		cli_error("-u/--uid: user %s (%lu) runs no process", user, uid);
		return 1;
	}
	*out = list;
	return 0;
}

/* Take PID out of the list "a,b,c"; false when the list is then empty. */
static bool drop_pid(char *list, pid_t pid)
{
	char word[16];
	size_t n = (size_t)snprintf(word, sizeof(word), "%d", (int)pid);

	for (char *p = list; *p; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, word, n) || (p[n] && p[n] != ','))
			continue;
		memmove(p, p + n + (p[n] == ','), strlen(p + n + (p[n] == ',')) + 1);
		if (p > list && !*p)
			p[-1] = '\0';	/* it was the last: drop its comma too */
		return list[0] != '\0';
	}
	return false;
}

int cli_pids_threads(char *list, bool drop_gone, struct tally_threadmap **out, pid_t *bad)
{
	int err;

	*bad = 0;
	while ((err = tally_threadmap__from_pids(list, out, bad)) == -ESRCH && drop_gone &&
	       drop_pid(list, *bad))
		;
	return err;
}

int cli_realtime(int prio, const char *cmd)
{
	struct sched_param sp = { .sched_priority = prio };

	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		cli_error("%s: --realtime %d: cannot run with SCHED_FIFO priority: %s", cmd, prio,
			  strerror(errno));
		return 1;
	}
	return 0;
}

int cli_cgroup_mount(char *buf, size_t len)
{
	FILE *f = fopen("/proc/mounts", "re");
	char line[4096], v2[PATH_MAX] = "";
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *path, *type, *opts, *o;

		if (!strtok_r(line, " ", &save) || !(path = strtok_r(NULL, " ", &save)) ||
		    !(type = strtok_r(NULL, " ", &save)) || !(opts = strtok_r(NULL, " ", &save)))
			continue;
		if (!strcmp(type, "cgroup2") && !v2[0]) {
			snprintf(v2, sizeof(v2), "%s", path);
			continue;
		}
		if (strcmp(type, "cgroup"))
			continue;
		for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "perf_event"))
				break;
		if (o) {
			snprintf(buf, len, "%s", path);
			ret = 0;
			break;
		}
	}
	fclose(f);
	if (ret && v2[0]) {
		snprintf(buf, len, "%s", v2);
		ret = 0;
	}
	return ret;
}

int cli_cgroup_open(const char *name, const char *opt)
{
	char mnt[PATH_MAX], path[PATH_MAX * 2];
	int fd;

	if (cli_cgroup_mount(mnt, sizeof(mnt))) {
		cli_error("%s: no perf_event cgroup hierarchy is mounted (see /proc/mounts)", opt);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		cli_error("%s: no access to cgroup %s: %s", opt, path, strerror(errno));
	return fd;
}

