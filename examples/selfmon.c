/*
 * selfmon: count a region of this program with libtally's self-monitoring API.
 *
 * Opens instructions and cycles (user space only) as one group when the machine
 * has a hardware PMU, and always task-clock and page-faults -- or the events given
 * with -e, in perf's syntax; runs a small region (a loop plus touching 256 fresh
 * pages) between two reads of every counter; prints each count and how it was read:
 * the fast path (user page + rdpmc/mrs, no system call) or read(), with the reason.
 *
 * Usage: selfmon [-e EVENTS] [ITERATIONS]     (default 20000000 loop iterations)
 * Uses only the public API: #include <tally/tally.h>, link with -ltally.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tally/tally.h>

#define HW_EVENTS "{instructions:u,cycles:u}"
#define SW_EVENTS "task-clock,page-faults"

struct set {
	const char *events;
	struct tally_selfmon **c;
	size_t nr;
	int err;
	struct tally_count *start, *end;
	int *read_err;
};

static void region(long iters)
{
	size_t len = 256 * 4096;
	char *p;

	for (volatile long i = 0; i < iters; i++)
		;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	munmap(p, len);
}

static int open_set(struct set *s)
{
	struct tally_parse_error perr;
	char msg[512];

	s->err = tally_selfmon__open_events(s->events, 0, &s->c, &s->nr, &perr, NULL);
	if (s->err == -EINVAL && tally_parse_error__format(&perr, s->events, msg,
							   sizeof(msg)) >= 0) {
		fprintf(stderr, "%s\n", msg);
		return -1;
	}
	if (s->err)
		return 0;
	s->start = calloc(s->nr, sizeof(*s->start));
	s->end = calloc(s->nr, sizeof(*s->end));
	s->read_err = calloc(s->nr, sizeof(*s->read_err));
	if (!s->start || !s->end || !s->read_err) {
		fprintf(stderr, "selfmon: out of memory\n");
		return -1;
	}
	return 0;
}

static void read_set(struct set *s, bool at_end)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!s->read_err[i])
			s->read_err[i] = tally_selfmon__read(s->c[i], at_end ? &s->end[i]
									    : &s->start[i]);
}

/* Print the set's counts; returns whether any read took the fast path. */
static bool print_set(const struct set *s, bool hardware)
{
	bool fast = false;

	if (s->err) {
		bool no_pmu = hardware && (s->err == -ENOENT || s->err == -EOPNOTSUPP);

		printf("%20s  %-16s  (%s)\n", "<not supported>", s->events,
		       no_pmu ? "this machine has no hardware PMU for them" : strerror(-s->err));
		return false;
	}
	for (size_t i = 0; i < s->nr; i++) {
		const char *name = tally_selfmon__name(s->c[i]);
		enum tally_self_path path;
		uint64_t val, ena, run;

		if (s->read_err[i]) {
			printf("%20s  %-16s  (read: %s)\n", "<not counted>", name,
			       strerror(-s->read_err[i]));
			continue;
		}
		val = s->end[i].val - s->start[i].val;
		ena = s->end[i].ena - s->start[i].ena;
		run = s->end[i].run - s->start[i].run;
		if (!run) {
			printf("%20s  %-16s\n", "<not counted>", name);
			continue;
		}
		path = tally_selfmon__last_path(s->c[i]);
		fast |= path == TALLY_SELF_PATH_FAST;
		printf("%20llu  %-16s  %s\n", (unsigned long long)tally_scale(val, ena, run),
		       name, tally_self_path_str(path));
	}
	return fast;
}

static void close_set(struct set *s)
{
	tally_selfmon__close_events(s->c, s->nr);
	free(s->start);
	free(s->end);
	free(s->read_err);
}

int main(int argc, char **argv)
{
	struct set sets[2] = { { .events = HW_EVENTS }, { .events = SW_EVENTS } };
	size_t nr_sets = 2;
	long iters = 20000000;
	bool any_fast = false, user_events = false;
	char *end;
	int opt, ret = 0;

	while ((opt = getopt(argc, argv, "e:")) != -1) {
		if (opt != 'e') {
			fprintf(stderr, "usage: %s [-e EVENTS] [ITERATIONS]\n", argv[0]);
			return 2;
		}
		sets[0].events = optarg;
		nr_sets = 1;
		user_events = true;
	}
	if (optind < argc) {
		errno = 0;
		iters = strtol(argv[optind], &end, 10);
		if (errno || *end || iters < 0) {
			fprintf(stderr, "usage: %s [-e EVENTS] [ITERATIONS]\n", argv[0]);
			return 2;
		}
	}
	for (size_t i = 0; i < nr_sets; i++)
		if (open_set(&sets[i]))
			return 1;
	if (sets[nr_sets - 1].err && (user_events || sets[0].err)) {
		fprintf(stderr, "selfmon: cannot open any event: %s (perf_event_paranoid is "
			"too strict? try: sysctl kernel.perf_event_paranoid=2)\n",
			strerror(-sets[nr_sets - 1].err));
		return 1;
	}

	/* Read while the counters run, as a program timing its own code would: the
	 * fast path is only possible while the event sits on a hardware counter. */
	for (size_t i = 0; i < nr_sets; i++)
		read_set(&sets[i], false);
	region(iters);
	for (size_t i = 0; i < nr_sets; i++)
		read_set(&sets[i], true);

	printf("selfmon: region of %ld loop iterations and 256 touched pages\n", iters);
	for (size_t i = 0; i < nr_sets; i++)
		any_fast |= print_set(&sets[i], !user_events && i == 0);
	printf("fast path used: %s\n", any_fast ? "yes" : "no");
	for (size_t i = 0; i < nr_sets; i++)
		close_set(&sets[i]);
	if (fflush(stdout) || ferror(stdout)) {
		perror("selfmon: stdout");
		ret = 1;
	}
	return ret;
}
