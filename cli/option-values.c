/*
 * Option values several commands share, as callbacks for the options table: a
 * comma-separated list (--comms, --dsos, --symbols, --pid, --tid) into a
 * NULL-terminated strlist, and a CPU list (-C) into a tally_cpumap. The field each
 * fills is the option's (OPT_STRLIST / OPT_CPUMAP in options.h); the command's
 * exit frees it (strlist_free, tally_cpumap__delete).
 */
#include <stdlib.h>

#include <tally/cpumap.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

int cli_opt_strlist(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	char ***l = CLI_FIELD_PTR(opts, opt, char **);

	strlist_free(*l);
	*l = NULL;
	if (unset)
		return 0;
	*l = strlist_parse(arg, NULL);
	if (!*l) {
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

int cli_opt_cpumap(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct tally_cpumap **m = CLI_FIELD_PTR(opts, opt, struct tally_cpumap *);
	char name[64];
	size_t bad = 0;

	tally_cpumap__delete(*m);
	*m = NULL;
	if (unset)
		return 0;
	if (tally_cpumap__parse(arg, m, &bad)) {
		cli_error("%s: bad cpu list '%s' at character %zu",
			  cli_opt_name(opt, name, sizeof(name)), arg, bad + 1);
		return -1;
	}
	return 0;
}

int cli_opt_widths(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct cli_widths *w = CLI_FIELD_PTR(opts, opt, struct cli_widths);
	const char *p = arg;
	char name[64];

	w->nr = 0;
	while (!unset && *p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || (*end && *end != ',') || v > 4096 ||
		    w->nr == sizeof(w->w) / sizeof(w->w[0])) {
			cli_error("%s: '%s' is not a list of widths (e.g. 10,20,30)",
				  cli_opt_name(opt, name, sizeof(name)), arg);
			return -1;
		}
		w->w[w->nr++] = (unsigned)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

