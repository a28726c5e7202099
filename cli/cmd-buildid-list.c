/*
 * tally buildid-list: the build-ids a perf.data file names, as perf buildid-list prints
 * them ("<build-id> <path>", the id padded to 40 columns; byte-identical to perf 6.1).
 *
 *   -i FILE   the perf.data file (default perf.data, or the pipe on standard input), or
 *             an ELF file, whose own build-id is printed
 *   -H        only the binaries samples hit: the records are read and the samples
 *             placed in their maps (also what happens when the file has no BUILD_ID
 *             list: a pipe stream, or a file recorded with -B)
 *   -k        the running kernel's build-id;  -m  with its address range, and modules'
 *   -f        read a file another user owns
 *
 * Without -H, a file's BUILD_ID list is printed as it is (no records are read); a
 * pipe stream's HEADER_BUILD_ID records (perf inject -b) are its list.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tally/buildid.h>
#include <tally/data.h>
#include <tally/session.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

struct buildid_list_opts {
	const char *input;
	bool with_hits, kernel, kernel_maps, force;
};

#define CLI_OPTS struct buildid_list_opts
static const struct cli_opt buildid_list_options[] = {
	OPT_BOOL('H', "with-hits", with_hits, "Show only DSOs with hits"),
	OPT_STRING('i', "input", input, "file", "input file name"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_BOOL('k', "kernel", kernel, "Show current kernel build id"),
	OPT_BOOL('m', "kernel-maps", kernel_maps, "Show build id of current kernel + modules"),
	OPT_VERBOSE("be more verbose"),
	OPT_END(),
};

static const char *const buildid_list_usage[] = { "buildid-list [<options>]", NULL };

static int print_running_kernel(void)
{
	struct tally_build_id id;
	char hex[TALLY_BUILD_ID_HEX_SIZE];

	if (tally_build_id__running_kernel(&id)) {
		cli_error("cannot read the running kernel's build-id from /sys/kernel/notes");
		return 1;
	}
	printf("%s\n", tally_build_id__hex(&id, hex));
	return 0;
}

/* _text (or _stext) and _etext of the running kernel. */
static int kernel_text(uint64_t *start, uint64_t *end)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];

	*start = *end = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && !(*start && *end)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_text") || (!*start && !strcmp(name, "_stext")))
			*start = a;
		else if (!strcmp(name, "_etext"))
			*end = a;
	}
	fclose(f);
	return *start && *end > *start ? 0 : -ENODATA;
}

/* -m: the kernel's id and text range, then each module's (from /proc/modules and
 * /sys/module/NAME/notes). */
static int print_kernel_maps(void)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], line[1024];
	struct tally_build_id id;
	uint64_t start, end;
	FILE *f;

	if (tally_build_id__running_kernel(&id) || kernel_text(&start, &end)) {
		cli_error("cannot read the running kernel's build-id (/sys/kernel/notes) or its "
			  "text range (/proc/kallsyms: kptr_restrict?)");
		return 1;
	}
	printf("%s %16" PRIx64 " %16" PRIx64 " %s\n", tally_build_id__hex(&id, hex), start, end,
	       "[kernel.kallsyms]");
	f = fopen("/proc/modules", "re");
	if (!f)
		return 0;	/* a kernel without modules */
	while (fgets(line, sizeof(line), f)) {
		char name[256], notes[512];
		unsigned long long size, addr;

		if (sscanf(line, "%255s %llu %*d %*s %*s %llx", name, &size, &addr) != 3)
			continue;
		snprintf(notes, sizeof(notes), "/sys/module/%s/notes/.note.gnu.build-id", name);
		if (tally_build_id__from_notes(&id, notes))
			id.size = 0;
		printf("%-40s %16llx %16llx [%s]\n", tally_build_id__hex(&id, hex), addr, addr + size,
		       name);
	}
	fclose(f);
	return 0;
}

struct print_ctx {
	bool with_hits;
};

static int print_dso(void *arg, struct tally_dso *d)
{
	const struct print_ctx *p = arg;
	char hex[TALLY_BUILD_ID_HEX_SIZE];

	if (p->with_hits && !tally_dso__hit(d))
		return 0;
	printf("%-40s %s\n", tally_build_id__hex(tally_dso__bid(d), hex), tally_dso__long_name(d));
	return 0;
}

static int list_file(const struct buildid_list_opts *o)
{
	struct print_ctx p = { .with_hits = o->with_hits };
	struct tally_session *s;
	struct tally_data *d;

	if (report_buildid_session(&d, &s, o->input, o->force, &p.with_hits))
		return 1;
	tally_session__for_each_dso(s, print_dso, &p);
	tally_session__delete(s);
	tally_data__delete(d);
	return 0;
}

static int buildid_list_exec(void *opts, const struct cli_args *args)
{
	struct buildid_list_opts *o = opts;
	struct tally_build_id id;
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	struct stat st;

	(void)args;
	if (o->kernel)
		return print_running_kernel();
	if (o->kernel_maps)
		return print_kernel_maps();
	if (!o->input)
		o->input = !fstat(STDIN_FILENO, &st) && S_ISFIFO(st.st_mode) ? "-" : "perf.data";
	/* an ELF file: its own id (perf looks at that first) */
	if (strcmp(o->input, "-") && !tally_build_id__from_elf(&id, o->input)) {
		printf("%s\n", tally_build_id__hex(&id, hex));
		return 0;
	}
	return list_file(o);
}

const struct cli_command cmd_buildid_list = {
	.name = "buildid-list",
	.summary = "List the buildids in a perf.data file",
	.usage = buildid_list_usage,
	.opts = buildid_list_options,
	.size = sizeof(struct buildid_list_opts),
	.exec = buildid_list_exec,
};
