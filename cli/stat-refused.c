/*
 * The perf stat options tally recognizes and refuses: each needs hardware or tables
 * tally cannot count on (the cpu PMU's transaction or topdown events, freeze_on_smi,
 * Intel's uncore IIO PMUs, a hybrid CPU, perf's JSON metric tables). The refusal is one
 * line that says what is missing, looked up in sysfs at the time (--sysfs for tests), so
 * a machine that has the hardware is told that tally lacks the feature instead.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "options.h"
#include "stat.h"

static const struct {
	const char *opt;	/* as named in the message */
	const char *long_name;	/* the option's */
	const char *pmu;	/* the PMU needed (NULL: none can help) */
	const char *file;	/* in that PMU's sysfs directory, or NULL */
	const char *what;	/* what it needs, for the message */
} needs[] = {
	{ "-T/--transaction", "transaction", "cpu", "events/tx-start",
	  "the cpu PMU's transaction events (tx-start, el-start, cycles-t)" },
	{ "--topdown", "topdown", "cpu", "events/slots",
	  "the cpu PMU's topdown events (slots, topdown-*)" },
	{ "--td-level", "td-level", "cpu", "events/slots",
	  "the cpu PMU's topdown events (slots, topdown-*) for --topdown" },
	{ "--smi-cost", "smi-cost", "cpu", "freeze_on_smi",
	  "the cpu PMU's freeze_on_smi and msr/smi/" },
	{ "--iostat", "iostat", "uncore_iio_0", NULL, "Intel's uncore IIO PMUs (uncore_iio_*)" },
	{ "--cputype", "cputype", "cpu_core", NULL, "a hybrid CPU (cpu_core and cpu_atom PMUs)" },
	{ "--hybrid-merge", "hybrid-merge", "cpu_core", NULL,
	  "a hybrid CPU (cpu_core and cpu_atom PMUs)" },
	{ "-M/--metrics", "metrics", NULL, NULL,
	  "perf's JSON metric tables (pmu-events), which tally does not have; count the "
	  "events with -e" },
	{ "--metric-no-group", "metric-no-group", NULL, NULL,
	  "-M's metric tables (perf's pmu-events), which tally does not have" },
	{ "--metric-no-merge", "metric-no-merge", NULL, NULL,
	  "-M's metric tables (perf's pmu-events), which tally does not have" },
	{ "--percore-show-thread", "percore-show-thread", NULL, NULL,
	  "the 'percore' event term summed per core, which tally stat does not do" },
};

int stat_opt_refused(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)arg;
	if (!unset)
		((struct stat_opts *)opts)->refused = opt->long_name;
	return 0;
}

int stat_refuse(const struct stat_opts *o)
{
	const char *root = o->sysfs ? o->sysfs : "/sys";
	char dir[4096], path[8192];

	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		if (strcmp(needs[i].long_name, o->refused))
			continue;
		if (!needs[i].pmu) {
			cli_error("%s needs %s", needs[i].opt, needs[i].what);
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s/bus/event_source/devices/%s", root, needs[i].pmu);
		snprintf(path, sizeof(path), "%s/%s", dir, needs[i].file ? needs[i].file : "");
		if (access(dir, F_OK))
			cli_error("%s needs %s; this machine has no %s PMU", needs[i].opt,
				  needs[i].what, needs[i].pmu);
		else if (access(path, F_OK))
			cli_error("%s needs %s; this machine's %s PMU has no %s", needs[i].opt,
				  needs[i].what, needs[i].pmu, needs[i].file);
		else
			cli_error("%s: this machine has %s, but tally does not use them yet",
				  needs[i].opt, needs[i].what);
		return 1;
	}
	cli_error("--%s is not supported", o->refused);
	return 1;
}
