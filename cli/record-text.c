/*
 * One side-band record as perf 6.1 prints it after its "PERF_RECORD_NAME" (perf's
 * perf_event__fprintf): the text report -D shows after each record's offset and
 * script --show-*-events after the sample-style start of its line. Written from the
 * kernel's record layouts (linux/perf_event.h); a record too short for its layout
 * prints its name only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <tally/record.h>
#include <tally/session.h>

#include "record-text.h"

/* The record's payload after the header, if it has at least n bytes. */
static const void *body(const struct perf_event_header *hdr, size_t n)
{
	return hdr->size >= sizeof(*hdr) + n ? (const void *)(hdr + 1) : NULL;
}

/* A NUL-terminated string in the record, at most up to its end. */
static int str_len(const struct perf_event_header *hdr, const char *s)
{
	const char *end = (const char *)hdr + hdr->size;

	return s < end ? (int)strnlen(s, (size_t)(end - s)) : 0;
}

static void comm_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint32_t *p = body(hdr, 8);
	const char *comm = (const char *)(p + 2);

	if (!p)
		return;
	fprintf(fp, "%s: %.*s:%d/%d", hdr->misc & PERF_RECORD_MISC_COMM_EXEC ? " exec" : "",
		str_len(hdr, comm), comm, (int)p[0], (int)p[1]);
}

static void task_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint32_t *p = body(hdr, 16);

	if (p)	/* pid, ppid, tid, ptid */
		fprintf(fp, "(%d:%d):(%d:%d)", (int)p[0], (int)p[2], (int)p[1], (int)p[3]);
}

static void mmap_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint32_t *p = body(hdr, 32);
	const uint64_t *q = (const void *)(p + 2);
	const char *name = (const char *)(q + 3);

	if (!p)
		return;
	fprintf(fp, " %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 "]: %c %.*s", (int)p[0],
		(int)p[1], q[0], q[1], q[2], hdr->misc & PERF_RECORD_MISC_MMAP_DATA ? 'r' : 'x',
		str_len(hdr, name), name);
}

/* MMAP2: pid, tid, addr, len, pgoff, then maj/min/ino/ino_generation or a build-id,
 * prot, flags, filename. */
static void mmap2_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint32_t *p = body(hdr, 64);
	const uint64_t *q = (const void *)(p + 2);
	const uint8_t *id = (const void *)(q + 3);
	const uint32_t *pf = (const void *)(id + 24);
	const char *name = (const char *)(pf + 2);
	char prot[5];

	if (!p)
		return;
	fprintf(fp, " %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 " ", (int)p[0], (int)p[1],
		q[0], q[1], q[2]);
	if (hdr->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		size_t n = id[0] <= 20 ? id[0] : 20;

		fputc('<', fp);
		for (size_t i = 0; i < n; i++)
			fprintf(fp, "%02x", id[4 + i]);
		fputc('>', fp);
	} else {
		const uint32_t *d = (const void *)id;
		const uint64_t *ino = (const void *)(d + 2);

		fprintf(fp, "%02x:%02x %" PRIu64 " %" PRIu64, d[0], d[1], ino[0], ino[1]);
	}
	prot[0] = pf[0] & PROT_READ ? 'r' : '-';
	prot[1] = pf[0] & PROT_WRITE ? 'w' : '-';
	prot[2] = pf[0] & PROT_EXEC ? 'x' : '-';
	prot[3] = pf[1] & MAP_SHARED ? 's' : 'p';
	prot[4] = 0;
	fprintf(fp, "]: %s %.*s", prot, str_len(hdr, name), name);
}

static void switch_text(FILE *fp, const struct perf_event_header *hdr)
{
	bool out = hdr->misc & PERF_RECORD_MISC_SWITCH_OUT;
	const char *in_out = !out ? "IN         " :
			     !(hdr->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? "OUT        " :
										  "OUT preempt";
	const uint32_t *p;

	if (hdr->type == PERF_RECORD_SWITCH) {
		fprintf(fp, " %s", in_out);
		return;
	}
	p = body(hdr, 8);
	if (p)
		fprintf(fp, " %s  %s pid/tid: %5d/%-5d", in_out, out ? "next" : "prev", (int)p[0],
			(int)p[1]);
}

static void ksymbol_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint64_t *p = body(hdr, 16);
	const uint32_t *l = (const void *)(p + 1);
	const uint16_t *t = (const void *)(l + 1);
	const char *name = (const char *)(t + 2);

	if (p)
		fprintf(fp, " addr %" PRIx64 " len %u type %u flags 0x%x name %.*s", p[0], l[0],
			t[0], t[1], str_len(hdr, name), name);
}

static void bpf_event_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint16_t *p = body(hdr, 8);
	const uint32_t *id = (const void *)(p + 2);

	if (p)
		fprintf(fp, " type %u, flags %u, id %u", p[0], p[1], id[0]);
}

/* pid/tid, then each namespace's dev/inode, four to a line. */
static void namespaces_text(FILE *fp, const struct perf_event_header *hdr)
{
	static const char *const names[] = { "net", "uts", "ipc", "pid", "user", "mnt", "cgroup" };
	const uint32_t *p = body(hdr, 16);
	const uint64_t *nr = (const void *)(p + 2), *link = nr + 1;

	if (!p)
		return;
	fprintf(fp, " %d/%d - nr_namespaces: %" PRIu64 "\n\t\t[", (int)p[0], (int)p[1], nr[0]);
	for (uint64_t i = 0; i < nr[0] && (const char *)(link + 2 * i + 2) <= (const char *)hdr + hdr->size; i++) {
		if (i && i % 4 == 0)
			fputs("\n\t\t ", fp);
		fprintf(fp, "%" PRIu64 "/%s: %" PRIu64 "/%#" PRIx64 "%s", i,
			i < sizeof(names) / sizeof(names[0]) ? names[i] : "UNKNOWN", link[2 * i],
			link[2 * i + 1], i + 1 != nr[0] ? ", " : "]");
	}
}

static void cgroup_text(FILE *fp, const struct perf_event_header *hdr)
{
	const uint64_t *id = body(hdr, 8);
	const char *path = (const char *)(id + 1);

	if (id)
		fprintf(fp, " cgroup: %" PRIu64 " %.*s", id[0], str_len(hdr, path), path);
}

/* "            Old bytes: 0f 1f ..." sixteen bytes to a line */
static void poke_bytes(FILE *fp, const char *which, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 16 == 0)
			fprintf(fp, "            %s bytes:", which);
		fprintf(fp, " %02x", b[i]);
		if (i % 16 == 15 || i + 1 == n)
			fputc('\n', fp);
	}
}

/* addr, its kernel symbol+offset, the lengths, then the old and the new bytes (the
 * record's own newline ends the last line of bytes, so it is left out here) */
static void text_poke_text(FILE *fp, const struct perf_event_header *hdr, struct tally_session *s)
{
	const uint64_t *addr = body(hdr, 12);
	const uint16_t *len = (const void *)(addr + 1);
	const uint8_t *bytes = (const void *)(len + 2);
	struct tally_addr_loc loc;

	if (!addr || (const char *)bytes + len[0] + len[1] > (const char *)hdr + hdr->size)
		return;
	fprintf(fp, " %" PRIx64 " ", addr[0]);
	if (s && !tally_session__resolve(s, -1, -1, PERF_RECORD_MISC_KERNEL, addr[0], &loc) &&
	    loc.sym && loc.sym->name)
		fprintf(fp, "%s+0x%" PRIx64, loc.sym->name, loc.dso_addr - loc.sym->start);
	fprintf(fp, " old len %u new len %u\n", len[0], len[1]);
	poke_bytes(fp, "Old", bytes, len[0]);
	poke_bytes(fp, "New", bytes + len[0], len[1]);
}

void record_text(FILE *fp, const struct perf_event_header *hdr)
{
	record_text_in(fp, hdr, NULL);
}

void record_text_in(FILE *fp, const struct perf_event_header *hdr, struct tally_session *s)
{
	const char *name = tally_record__type_name(hdr->type);
	const uint64_t *lost;

	fprintf(fp, "PERF_RECORD_%s", name ? name : "UNKNOWN");
	switch (hdr->type) {
	case PERF_RECORD_COMM:
		comm_text(fp, hdr);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		task_text(fp, hdr);
		break;
	case PERF_RECORD_MMAP:
		mmap_text(fp, hdr);
		break;
	case PERF_RECORD_MMAP2:
		mmap2_text(fp, hdr);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		switch_text(fp, hdr);
		break;
	case PERF_RECORD_LOST:
		lost = body(hdr, 16);	/* id, lost */
		if (lost)
			fprintf(fp, " lost %" PRIu64, lost[1]);
		break;
	case PERF_RECORD_KSYMBOL:
		ksymbol_text(fp, hdr);
		break;
	case PERF_RECORD_BPF_EVENT:
		bpf_event_text(fp, hdr);
		break;
	case PERF_RECORD_NAMESPACES:
		namespaces_text(fp, hdr);
		break;
	case PERF_RECORD_CGROUP:
		cgroup_text(fp, hdr);
		break;
	case PERF_RECORD_TEXT_POKE:
		text_poke_text(fp, hdr, s);
		return;		/* its lines end with their own newlines */
	default:
		break;
	}
	fputc('\n', fp);
}
