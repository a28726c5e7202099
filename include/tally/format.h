/*
 * The perf.data format: on-disk structures, user-space record types and header
 * feature numbers, as perf 6.1 reads and writes them (see shared/reference/perf-compat.md).
 * Kernel record types (PERF_RECORD_SAMPLE …) come from <linux/perf_event.h>.
 * All fields are native-endian; the magic tells a reader the byte order.
 */
#ifndef TALLY_FORMAT_H
#define TALLY_FORMAT_H

#include <tally/api.h>

#include <stdint.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY_PERF_MAGIC2	0x32454c4946524550ULL	/* "PERFILE2" */
#define TALLY_PERF_MAGIC1	0x454c494646524550ULL	/* "PERFFILE" (legacy) */

/* The attr size perf 6.1 understands; writers never put a larger attr.size on disk. */
#define TALLY_ATTR_SIZE_MAX_COMPAT	128

struct tally_file_section {
	uint64_t offset;
	uint64_t size;
};

struct tally_file_header {
	uint64_t magic;
	uint64_t size;			/* 104 */
	uint64_t attr_size;		/* sizeof(attr on disk) + sizeof(struct tally_file_section) */
	struct tally_file_section attrs;
	struct tally_file_section data;
	struct tally_file_section event_types;	/* ignored */
	uint64_t adds_features[4];	/* bit n = feature n (enum tally_feature) */
};

struct tally_pipe_header {
	uint64_t magic;
	uint64_t size;			/* 16 */
};

/* User-space record types (perf's enum perf_user_event_type). */
enum tally_user_record_type {
	TALLY_RECORD_HEADER_ATTR = 64,
	TALLY_RECORD_HEADER_EVENT_TYPE = 65,
	TALLY_RECORD_HEADER_TRACING_DATA = 66,
	TALLY_RECORD_HEADER_BUILD_ID = 67,
	TALLY_RECORD_FINISHED_ROUND = 68,
	TALLY_RECORD_ID_INDEX = 69,
	TALLY_RECORD_AUXTRACE_INFO = 70,
	TALLY_RECORD_AUXTRACE = 71,
	TALLY_RECORD_AUXTRACE_ERROR = 72,
	TALLY_RECORD_THREAD_MAP = 73,
	TALLY_RECORD_CPU_MAP = 74,
	TALLY_RECORD_STAT_CONFIG = 75,
	TALLY_RECORD_STAT = 76,
	TALLY_RECORD_STAT_ROUND = 77,
	TALLY_RECORD_EVENT_UPDATE = 78,
	TALLY_RECORD_TIME_CONV = 79,
	TALLY_RECORD_HEADER_FEATURE = 80,
	TALLY_RECORD_COMPRESSED = 81,	/* perf 6.1: zstd chunk, unpadded */
	TALLY_RECORD_FINISHED_INIT = 82,
	TALLY_RECORD_COMPRESSED2 = 83,	/* newer perf: u64 data_size; data[]; 8-byte aligned */
	TALLY_RECORD_USER_MAX
};

/* Header feature bits. */
enum tally_feature {
	TALLY_FEAT_RESERVED = 0,
	TALLY_FEAT_TRACING_DATA = 1,
	TALLY_FEAT_BUILD_ID,
	TALLY_FEAT_HOSTNAME,
	TALLY_FEAT_OSRELEASE,
	TALLY_FEAT_VERSION,
	TALLY_FEAT_ARCH,
	TALLY_FEAT_NRCPUS,
	TALLY_FEAT_CPUDESC,
	TALLY_FEAT_CPUID,
	TALLY_FEAT_TOTAL_MEM,
	TALLY_FEAT_CMDLINE,
	TALLY_FEAT_EVENT_DESC,
	TALLY_FEAT_CPU_TOPOLOGY,
	TALLY_FEAT_NUMA_TOPOLOGY,
	TALLY_FEAT_BRANCH_STACK,
	TALLY_FEAT_PMU_MAPPINGS,
	TALLY_FEAT_GROUP_DESC,
	TALLY_FEAT_AUXTRACE,
	TALLY_FEAT_STAT,
	TALLY_FEAT_CACHE,
	TALLY_FEAT_SAMPLE_TIME,
	TALLY_FEAT_MEM_TOPOLOGY,
	TALLY_FEAT_CLOCKID,
	TALLY_FEAT_DIR_FORMAT,
	TALLY_FEAT_BPF_PROG_INFO,
	TALLY_FEAT_BPF_BTF,
	TALLY_FEAT_COMPRESSED,
	TALLY_FEAT_CPU_PMU_CAPS,
	TALLY_FEAT_CLOCK_DATA,
	TALLY_FEAT_HYBRID_TOPOLOGY,
	TALLY_FEAT_PMU_CAPS,
	TALLY_FEAT_LAST_6_1 = 32,	/* perf 6.1's HEADER_LAST_FEATURE: pipe-mode end marker */
	TALLY_FEAT_MAX = 256
};

/* Header strings are u32 len (strlen+1 rounded up to 64) + zero-padded bytes. */
#define TALLY_NAME_ALIGN 64

/* HEADER_BUILD_ID records (and BUILD_ID feature entries): u32 pid, u8 build_id[24]
 * (the id, zero padded; with the flag below its length is the byte after 20 ids
 * bytes), then the file name NUL-padded to TALLY_NAME_ALIGN. perf's own flag, not
 * the kernel's. */
#define TALLY_RECORD_MISC_BUILD_ID_SIZE (1 << 15)
#define TALLY_BUILD_ID_RECORD_HEADER 36		/* header + pid + build_id[24] */

/* EVENT_UPDATE sub-types. */
enum { TALLY_EVENT_UPDATE_UNIT = 0, TALLY_EVENT_UPDATE_SCALE = 1,
       TALLY_EVENT_UPDATE_NAME = 2, TALLY_EVENT_UPDATE_CPUS = 3 };

/* STAT_CONFIG tags. */
enum { TALLY_STAT_CONFIG_AGGR_MODE = 0, TALLY_STAT_CONFIG_INTERVAL = 1,
       TALLY_STAT_CONFIG_SCALE = 2, TALLY_STAT_CONFIG_AGGR_LEVEL = 3 };

/* STAT_ROUND types. */
enum { TALLY_STAT_ROUND_INTERVAL = 0, TALLY_STAT_ROUND_FINAL = 1 };

#ifdef __cplusplus
}
#endif
#endif
