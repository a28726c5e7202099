/*
 * tally record: build-ids of the DSOs that samples hit (the BUILD_ID feature), so a
 * reader can tell whether the binaries it finds are the ones that ran.
 *
 * perf re-reads its whole file at the end to find the hit DSOs. We watch the records
 * as they are written instead: MMAP/MMAP2 give each process its executable maps,
 * FORK copies them, COMM exec clears them, and each sample's ip marks the map it
 * falls in (user space) or the kernel. Build-ids are read once per hit DSO at the end
 * (ELF note via elfutils; the kernel's from /sys/kernel/notes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/symbols.h"
#include "internal/util.h"
#include "cmd.h"
#include "record.h"

struct bt_map {
	uint64_t start, end;
	uint32_t dso;
};

struct bt_proc {
	int32_t pid;		/* 0 = empty slot (pid 0 is the idle task: never has maps) */
	struct bt_map *maps;
	uint32_t nr, cap;
};

struct bt_dso {
	char *name;
	bool hit;
};

struct buildid_tracker {
	struct bt_proc *procs;
	size_t nr_procs, cap_procs;	/* open addressing, cap a power of two */
	struct bt_dso *dsos;
	size_t nr_dsos;
	bool kernel_hit;
	size_t ip_off, tid_off;		/* offsets of ip and pid/tid in samples */
	struct bt_proc *last;
};

int buildid_tracker__new(struct buildid_tracker **out, const struct record *r)
{
	struct buildid_tracker *bt = calloc(1, sizeof(*bt));
	uint64_t t = r->ev[0].attr.sample_type;

	*out = NULL;
	if (!bt)
		return -ENOMEM;
	bt->cap_procs = 256;
	bt->procs = calloc(bt->cap_procs, sizeof(*bt->procs));
	if (!bt->procs) {
		free(bt);
		return -ENOMEM;
	}
	bt->ip_off = 8 + ((t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0);
	bt->tid_off = bt->ip_off + ((t & PERF_SAMPLE_IP) ? 8 : 0);
	if (!(t & PERF_SAMPLE_IP) || !(t & PERF_SAMPLE_TID))
		bt->ip_off = 0;	/* cannot attribute samples */
	*out = bt;
	return 0;
}

void buildid_tracker__delete(struct buildid_tracker *bt)
{
	size_t i;

	if (!bt)
		return;
	for (i = 0; i < bt->cap_procs; i++)
		free(bt->procs[i].maps);
	free(bt->procs);
	for (i = 0; i < bt->nr_dsos; i++)
		free(bt->dsos[i].name);
	free(bt->dsos);
	free(bt);
}

static size_t slot_of(const struct buildid_tracker *bt, int32_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (bt->cap_procs - 1);
}

static struct bt_proc *find_proc(struct buildid_tracker *bt, int32_t pid, bool create)
{
	size_t i;

	if (pid <= 0)
		return NULL;
	if (bt->last && bt->last->pid == pid)
		return bt->last;
	for (i = slot_of(bt, pid); bt->procs[i].pid; i = (i + 1) & (bt->cap_procs - 1))
		if (bt->procs[i].pid == pid)
			return bt->last = &bt->procs[i];
	if (!create)
		return NULL;
	if ((bt->nr_procs + 1) * 2 > bt->cap_procs) {
		struct bt_proc *old = bt->procs;
		size_t oldcap = bt->cap_procs, k;

		bt->procs = calloc(oldcap * 2, sizeof(*bt->procs));
		if (!bt->procs) {
			bt->procs = old;
			return NULL;
		}
		bt->cap_procs = oldcap * 2;
		for (k = 0; k < oldcap; k++) {
			size_t j;

			if (!old[k].pid)
				continue;
			for (j = slot_of(bt, old[k].pid); bt->procs[j].pid; j = (j + 1) & (bt->cap_procs - 1))
				;
			bt->procs[j] = old[k];
		}
		free(old);
		bt->last = NULL;
		return find_proc(bt, pid, true);
	}
	for (i = slot_of(bt, pid); bt->procs[i].pid; i = (i + 1) & (bt->cap_procs - 1))
		;
	bt->procs[i].pid = pid;
	bt->nr_procs++;
	return bt->last = &bt->procs[i];
}

static int dso_index(struct buildid_tracker *bt, const char *name)
{
	struct bt_dso *n;
	size_t i;

	for (i = bt->nr_dsos; i-- > 0;)
		if (!strcmp(bt->dsos[i].name, name))
			return (int)i;
	n = realloc(bt->dsos, (bt->nr_dsos + 1) * sizeof(*n));
	if (!n)
		return -1;
	bt->dsos = n;
	n[bt->nr_dsos].name = strdup(name);
	n[bt->nr_dsos].hit = false;
	if (!n[bt->nr_dsos].name)
		return -1;
	return (int)bt->nr_dsos++;
}

static void add_map(struct buildid_tracker *bt, int32_t pid, uint64_t start, uint64_t len,
		    const char *name)
{
	struct bt_proc *p;
	uint32_t i;
	int d;

	if (name[0] != '/')
		return;		/* [vdso], //anon, [heap]: no file to read an id from */
	p = find_proc(bt, pid, true);
	if (!p)
		return;
	d = dso_index(bt, name);
	if (d < 0)
		return;
	/* A new map replaces what it overlaps. */
	for (i = 0; i < p->nr;) {
		if (p->maps[i].start < start + len && start < p->maps[i].end)
			p->maps[i] = p->maps[--p->nr];
		else
			i++;
	}
	if (p->nr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 16;
		struct bt_map *m = realloc(p->maps, cap * sizeof(*m));

		if (!m)
			return;
		p->maps = m;
		p->cap = cap;
	}
	p->maps[p->nr++] = (struct bt_map){ start, start + len, (uint32_t)d };
}

static void fork_proc(struct buildid_tracker *bt, int32_t pid, int32_t ppid)
{
	struct bt_proc *parent, *child;
	struct bt_map *m;

	if (pid == ppid || !find_proc(bt, ppid, false))
		return;		/* a new thread shares its process's maps */
	child = find_proc(bt, pid, true);	/* may grow the table: look the parent up after */
	parent = find_proc(bt, ppid, false);
	if (!child || !parent || !parent->nr)
		return;
	m = malloc(parent->nr * sizeof(*m));
	if (!m)
		return;
	memcpy(m, parent->maps, parent->nr * sizeof(*m));
	free(child->maps);
	child->maps = m;
	child->nr = child->cap = parent->nr;
}

static void sample(struct buildid_tracker *bt, const struct perf_event_header *h)
{
	uint64_t ip;
	uint32_t pid;
	struct bt_proc *p;
	uint32_t i;

	if (!bt->ip_off || h->size < bt->tid_off + 8)
		return;
	memcpy(&ip, (const char *)h + bt->ip_off, 8);
	memcpy(&pid, (const char *)h + bt->tid_off, 4);
	switch (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_KERNEL:
		bt->kernel_hit = true;
		return;
	case PERF_RECORD_MISC_USER:
		break;
	default:
		return;
	}
	p = find_proc(bt, (int32_t)pid, false);
	if (!p)
		return;
	for (i = 0; i < p->nr; i++)
		if (ip >= p->maps[i].start && ip < p->maps[i].end) {
			bt->dsos[p->maps[i].dso].hit = true;
			return;
		}
}

void buildid_tracker__record(struct buildid_tracker *bt, const struct perf_event_header *h)
{
	const uint32_t *u = (const uint32_t *)(h + 1);
	const uint64_t *q = (const uint64_t *)(h + 1);
	const char *end = (const char *)h + h->size;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		sample(bt, h);
		break;
	case PERF_RECORD_MMAP:		/* pid, tid, start, len, pgoff, filename */
		if (h->size > 48 && memchr((const char *)h + 40, 0, (size_t)(end - ((const char *)h + 40))))
			add_map(bt, (int32_t)u[0], q[1], q[2], (const char *)h + 40);
		break;
	case PERF_RECORD_MMAP2:		/* ... maj, min, ino, ino_gen, prot, flags, filename */
		if ((h->misc & PERF_RECORD_MISC_MMAP_DATA) || h->size <= 80)
			break;
		if (memchr((const char *)h + 72, 0, (size_t)(end - ((const char *)h + 72))))
			add_map(bt, (int32_t)u[0], q[1], q[2], (const char *)h + 72);
		break;
	case PERF_RECORD_COMM:		/* an exec replaces the process image */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && h->size >= 16) {
			struct bt_proc *p = find_proc(bt, (int32_t)u[0], false);

			if (p)
				p->nr = 0;
		}
		break;
	case PERF_RECORD_FORK:		/* pid, ppid, tid, ptid */
		if (h->size >= 24)
			fork_proc(bt, (int32_t)u[0], (int32_t)u[1]);
		break;
	default:
		break;
	}
}

int buildid_tracker__write(struct buildid_tracker *bt, struct tally_writer *w)
{
	uint8_t id[20];
	size_t i;
	int n, err = 0;

	if (bt->kernel_hit) {
		n = tly_kernel_build_id("/sys/kernel/notes", id, sizeof(id));
		if (n > 0)
			err = tally_writer__add_build_id(w, -1, id, (size_t)n, "[kernel.kallsyms]", true);
	}
	for (i = 0; !err && i < bt->nr_dsos; i++) {
		if (!bt->dsos[i].hit)
			continue;
		n = tly_elf_build_id(bt->dsos[i].name, id, sizeof(id));
		if (n <= 0)
			continue;	/* no note, or the file is gone: nothing to vouch for */
		err = tally_writer__add_build_id(w, -1, id, (size_t)n, bt->dsos[i].name, false);
	}
	return err;
}
