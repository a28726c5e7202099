/*
 * report and script --header and --header-only: the perf.data header and its features
 * as perf 6.1 prints them ("# hostname : ...", the event attrs, cpu topology, ...).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/record.h>
#include <tally/session.h>
#include <time.h>

#include "attr-names.h"
#include "cmd.h"
#include "report-common.h"
#include "script-trace.h"

/* What the header printer reads: the file and the name it was opened by. */
struct header_ctx {
	struct tally_data *data;
	const char *input;
};

static void print_string_feat(const struct header_ctx *r, int feat, const char *label)
{
	const char *s = tally_data__feature_string(r->data, feat);

	if (s)
		printf("# %s : %s\n", label, s);
}

static void print_attr_field(void *arg, const char *name, const char *value)
{
	(void)arg;
	printf(", %s = %s", name, value);
}

/* perf's "# event :" attr list: every non-zero field, in struct order, "key = value" */
static void print_attr_fields(const struct tally_data_event *ev)
{
	attr_fields(&ev->attr, ev->config3, ev->disk_attr_size, print_attr_field, NULL);
}

/* The block perf opens with: when the file was written, offsets and sizes. */
static void print_file_block(const struct header_ctx *r, bool pipe)
{
	const struct tally_file_header *fh = tally_data__header(r->data);
	struct stat st;
	int sr = strcmp(r->input, "-") ? stat(r->input, &st) : fstat(0, &st);

	printf("# ========\n");
	if (sr == 0) {
		char tb[64];

		ctime_r(&st.st_mtime, tb);
		tb[strcspn(tb, "\n")] = 0;
		printf("# captured on    : %s\n", tb);
	}
	printf("# header version : 1\n");
	printf("# data offset    : %" PRIu64 "\n", pipe ? 0 : fh->data.offset);
	printf("# data size      : %" PRIu64 "\n", pipe ? 0 : fh->data.size);
	printf("# feat offset    : %" PRIu64 "\n", pipe ? 0 : fh->data.offset + fh->data.size);
	if (pipe)	/* perf closes the block before a pipe's feature records */
		printf("# ========\n#\n");
}

static void print_cmdline(const struct header_ctx *r)
{
	const void *buf;
	size_t len;

	if (tally_data__feature(r->data, TALLY_FEAT_CMDLINE, &buf, &len) == 0 && len >= 4) {
		const unsigned char *p = buf, *end = p + len;
		uint32_t nr;

		memcpy(&nr, p, 4);
		p += 4;
		printf("# cmdline : ");
		for (uint32_t i = 0; i < nr && p + 4 <= end; i++) {
			uint32_t l;

			memcpy(&l, p, 4);
			p += 4;
			if (l > (size_t)(end - p))
				break;
			printf("%.*s ", (int)strnlen((const char *)p, l), (const char *)p);
			p += l;
		}
		putchar('\n');
	}
}

/* The machine: host, kernel, perf version, cpus, memory, command line. */
static void print_machine(const struct header_ctx *r)
{
	const void *buf;
	size_t len;

	print_string_feat(r, TALLY_FEAT_HOSTNAME, "hostname");
	print_string_feat(r, TALLY_FEAT_OSRELEASE, "os release");
	print_string_feat(r, TALLY_FEAT_VERSION, "perf version");
	print_string_feat(r, TALLY_FEAT_ARCH, "arch");
	if (tally_data__feature(r->data, TALLY_FEAT_NRCPUS, &buf, &len) == 0 && len >= 8) {
		uint32_t n[2];

		memcpy(n, buf, sizeof(n));	/* feature payloads need not be aligned */
		printf("# nrcpus online : %u\n# nrcpus avail : %u\n", n[1], n[0]);
	}
	print_string_feat(r, TALLY_FEAT_CPUDESC, "cpudesc");
	print_string_feat(r, TALLY_FEAT_CPUID, "cpuid");
	if (tally_data__feature(r->data, TALLY_FEAT_TOTAL_MEM, &buf, &len) == 0 && len >= 8) {
		uint64_t kb;

		memcpy(&kb, buf, sizeof(kb));
		printf("# total memory : %" PRIu64 " kB\n", kb);
	}
	print_cmdline(r);
}

static void print_events(const struct header_ctx *r)
{
	for (size_t i = 0; i < tally_data__nr_events(r->data); i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		printf("# event : name = %s, , id = {", ev->name ? ev->name : "");
		for (size_t k = 0; k < ev->nr_ids; k++)
			printf("%s %" PRIu64, k ? "," : "", ev->ids[k]);
		printf(" }");
		print_attr_fields(ev);
		putchar('\n');
	}
}

static void print_pmu_mappings(const struct header_ctx *r)
{
	const void *buf;
	size_t len;

	if (tally_data__feature(r->data, TALLY_FEAT_PMU_MAPPINGS, &buf, &len) == 0 && len >= 4) {
		const unsigned char *p = buf, *end = p + len;
		uint32_t nr;

		memcpy(&nr, p, 4);
		p += 4;
		printf("# pmu mappings: ");
		for (uint32_t i = 0; i < nr && end - p >= 8; i++) {
			uint32_t type, l;

			memcpy(&type, p, 4);
			memcpy(&l, p + 4, 4);
			p += 8;
			if (l > (size_t)(end - p))
				break;
			printf("%s%.*s = %u", i ? ", " : "", (int)strnlen((const char *)p, l),
			       (const char *)p, type);
			p += l;
		}
		putchar('\n');
	}
}

static void print_groups(const struct header_ctx *r)
{
	for (size_t i = 0; i < tally_data__nr_events(r->data); i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		if (ev->leader != (int)i || ev->nr_members < 2 ||
		    i + (size_t)ev->nr_members > tally_data__nr_events(r->data))
			continue;
		printf("# group: {");
		for (int k = 0; k < ev->nr_members; k++) {
			const struct tally_data_event *m = tally_data__event(r->data, i + (size_t)k);

			printf("%s%s", k ? "," : "", m->name ? m->name : "");
		}
		printf("}\n");
	}
}

static void print_sample_time(const struct header_ctx *r)
{
	const void *buf;
	size_t len;
	uint64_t t[2];

	if (tally_data__feature(r->data, TALLY_FEAT_SAMPLE_TIME, &buf, &len) || len < 16)
		return;
	memcpy(t, buf, sizeof(t));
	printf("# time of first sample : %" PRIu64 ".%06" PRIu64 "\n", t[0] / 1000000000,
	       t[0] % 1000000000 / 1000);
	printf("# time of last sample : %" PRIu64 ".%06" PRIu64 "\n", t[1] / 1000000000,
	       t[1] % 1000000000 / 1000);
	printf("# sample duration : %10.3f ms\n", (double)(t[1] - t[0]) / 1e6);
}

static void print_compressed(const struct header_ctx *r)
{
	const void *buf;
	size_t len;
	uint32_t c[4];

	if (tally_data__feature(r->data, TALLY_FEAT_COMPRESSED, &buf, &len) || len < 16)
		return;
	memcpy(c, buf, sizeof(c));
	printf("# compressed : %s, level = %u, ratio = %u\n", c[1] == 1 ? "Zstd" : "Unknown",
	       c[2], c[3]);
}

static const char *const feat_names[] = {
	[TALLY_FEAT_TRACING_DATA] = "TRACING_DATA", [TALLY_FEAT_BUILD_ID] = "BUILD_ID",
	[TALLY_FEAT_HOSTNAME] = "HOSTNAME", [TALLY_FEAT_OSRELEASE] = "OSRELEASE",
	[TALLY_FEAT_VERSION] = "VERSION", [TALLY_FEAT_ARCH] = "ARCH",
	[TALLY_FEAT_NRCPUS] = "NRCPUS", [TALLY_FEAT_CPUDESC] = "CPUDESC",
	[TALLY_FEAT_CPUID] = "CPUID", [TALLY_FEAT_TOTAL_MEM] = "TOTAL_MEM",
	[TALLY_FEAT_CMDLINE] = "CMDLINE", [TALLY_FEAT_EVENT_DESC] = "EVENT_DESC",
	[TALLY_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
	[TALLY_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY",
	[TALLY_FEAT_BRANCH_STACK] = "BRANCH_STACK",
	[TALLY_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS", [TALLY_FEAT_GROUP_DESC] = "GROUP_DESC",
	[TALLY_FEAT_AUXTRACE] = "AUXTRACE", [TALLY_FEAT_STAT] = "STAT",
	[TALLY_FEAT_CACHE] = "CACHE", [TALLY_FEAT_SAMPLE_TIME] = "SAMPLE_TIME",
	[TALLY_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY", [TALLY_FEAT_CLOCKID] = "CLOCKID",
	[TALLY_FEAT_DIR_FORMAT] = "DIR_FORMAT", [TALLY_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO",
	[TALLY_FEAT_BPF_BTF] = "BPF_BTF", [TALLY_FEAT_COMPRESSED] = "COMPRESSED",
	[TALLY_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS", [TALLY_FEAT_CLOCK_DATA] = "CLOCK_DATA",
	[TALLY_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY", [TALLY_FEAT_PMU_CAPS] = "PMU_CAPS",
};

static void print_missing(const struct header_ctx *r)
{
	bool any = false;

	for (int f = 1; f < (int)(sizeof(feat_names) / sizeof(feat_names[0])); f++) {
		if (tally_data__has_feature(r->data, f) || !feat_names[f])
			continue;
		printf("%s%s ", any ? "" : "# missing features: ", feat_names[f]);
		any = true;
	}
	if (any)
		putchar('\n');
}

void report_print_header(struct tally_data *d, const char *input)
{
	const struct header_ctx ctx = { d, input }, *r = &ctx;
	bool pipe = tally_data__is_pipe(r->data);

	print_file_block(r, pipe);
	print_machine(r);
	print_events(r);
	if (tally_data__has_feature(r->data, TALLY_FEAT_CPU_TOPOLOGY))
		printf("# CPU_TOPOLOGY info available, use -I to display\n");
	if (tally_data__has_feature(r->data, TALLY_FEAT_NUMA_TOPOLOGY))
		printf("# NUMA_TOPOLOGY info available, use -I to display\n");
	print_pmu_mappings(r);
	print_groups(r);
	if (tally_data__has_feature(r->data, TALLY_FEAT_CACHE))
		printf("# CACHE info available, use -I to display\n");
	print_sample_time(r);
	if (tally_data__has_feature(r->data, TALLY_FEAT_MEM_TOPOLOGY))
		printf("# MEM_TOPOLOGY info available, use -I to display\n");
	print_compressed(r);
	if (pipe)
		return;
	print_missing(r);
	printf("# ========\n#\n");
}
