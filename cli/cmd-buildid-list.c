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
#include <getopt.h>
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
#include "report-common.h"

struct buildid_list_opts {
	const char *input;
	bool with_hits, kernel, kernel_maps, force;
};

static const char usage_text[] =
	"\n usage: tally buildid-list [<options>]\n\n"
	"    -f, --force           don't complain, do it\n"
	"    -H, --with-hits       Show only DSOs with hits\n"
	"    -i, --input <file>    input file name\n"
	"    -k, --kernel          Show current kernel build id\n"
	"    -m, --kernel-maps     Show build id of current kernel + modules\n"
	"    -v, --verbose         be more verbose\n\n";

static int parse_options(struct buildid_list_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "with-hits", no_argument, NULL, 'H' },
		{ "input", required_argument, NULL, 'i' },
		{ "kernel", no_argument, NULL, 'k' },
		{ "kernel-maps", no_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fHi:kmvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->force = true; break;
		case 'H': o->with_hits = true; break;
		case 'i': o->input = optarg; break;
		case 'k': o->kernel = true; break;
		case 'm': o->kernel_maps = true; break;
		case 'v': verbose++; break;
		case 'h': cli_usage(stdout, usage_text); return -2;
		default:
			cli_error("buildid-list: unknown or incomplete option '%s'", argv[optind - 1]);
			cli_usage(stderr, usage_text);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error("buildid-list: unexpected argument '%s'", argv[optind]);
		cli_usage(stderr, usage_text);
		return -1;
	}
	return 0;
}

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

int cmd_buildid_list(int argc, char **argv)
{
	struct buildid_list_opts o = { 0 };
	struct tally_build_id id;
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	struct stat st;
	int ret = parse_options(&o, argc, argv);

	if (ret)
		return ret == -2 ? 0 : 129;
	if (o.kernel)
		return print_running_kernel();
	if (o.kernel_maps)
		return print_kernel_maps();
	if (!o.input)
		o.input = !fstat(STDIN_FILENO, &st) && S_ISFIFO(st.st_mode) ? "-" : "perf.data";
	/* an ELF file: its own id (perf looks at that first) */
	if (strcmp(o.input, "-") && !tally_build_id__from_elf(&id, o.input)) {
		printf("%s\n", tally_build_id__hex(&id, hex));
		return 0;
	}
	return list_file(&o);
}
