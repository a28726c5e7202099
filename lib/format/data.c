/*
 * The perf.data reader. The whole input is mapped (regular files) or read into
 * memory once (standard input), and records are delivered in place: nothing is
 * copied except what comes out of the zstd decompressor and what the ordering queue
 * must keep across a COMPRESSED record. Every length and offset is checked against
 * the input; damage is reported with its offset in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <tally/data.h>
#include "internal/data.h"
#include "internal/util.h"

struct feat {
	const uint8_t *buf;
	size_t len;
	bool present;
};

/* A buffer of decompressed records; queued records keep it alive. */
struct chunk {
	size_t refs;
	size_t len;
	bool decompressed;	/* else: a copy of one misaligned record */
	uint8_t data[] __attribute__((aligned(8)));
};

struct qent {
	uint64_t time;
	const struct perf_event_header *hdr;
	struct chunk *chunk;
	uint64_t off;
	int evidx;
};

struct tally_data {
	const uint8_t *buf;
	size_t size;
	void *map;		/* munmap on delete */
	uint8_t *owned;		/* free on delete (stdin) */
	bool pipe;
	char *path;
	struct tally_file_header hdr;
	uint64_t data_off, data_end;	/* data section within buf */

	struct tally_data_event *events;
	size_t nr_events;
	struct feat feats[TALLY_FEAT_MAX];
	const char *feat_str[TALLY_FEAT_MAX];	/* decoded string features */

	/* id -> event index, open addressing */
	uint64_t *id_keys;
	int *id_vals;
	size_t id_cap, id_nr;

	/* how to find the id of a record: layout of the first event */
	bool same_id_pos;

	ZSTD_DStream *zstd;
	uint8_t *carry;		/* incomplete record at the end of a decompressed chunk */
	size_t carry_len;
	uint64_t decomp_off;

	struct qent *q;
	size_t q_nr, q_cap;
	struct qent *q_tmp;	/* merge space for queue_sort, q_cap entries */
	uint64_t max_time, flush_limit;

	uint64_t truncated;
	uint64_t nr_unknown;
	uint64_t released;	/* file pages before this offset were given back */
	int stream_fd;		/* pipe still being read (buf holds its start), or -1 */
	bool stream_used;	/* a stream can be walked once */
};

static int fail(struct tally_data_error *err, uint64_t off, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct tally_data_error *err, uint64_t off, int ret, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->offset = off;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* ---- id hash ------------------------------------------------------------- */

static size_t id_slot(uint64_t id, size_t cap)
{
	id *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(id >> 17) & (cap - 1);
}

static int id_add(struct tally_data *d, uint64_t id, int idx)
{
	if ((d->id_nr + 1) * 2 > d->id_cap) {
		size_t ncap = d->id_cap ? d->id_cap * 2 : 64;
		uint64_t *k = calloc(ncap, sizeof(*k));
		int *v = malloc(ncap * sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ncap; i++)
			v[i] = -1;
		for (size_t i = 0; i < d->id_cap; i++) {
			if (d->id_vals[i] < 0)
				continue;
			size_t s = id_slot(d->id_keys[i], ncap);
			while (v[s] >= 0)
				s = (s + 1) & (ncap - 1);
			k[s] = d->id_keys[i];
			v[s] = d->id_vals[i];
		}
		free(d->id_keys);
		free(d->id_vals);
		d->id_keys = k;
		d->id_vals = v;
		d->id_cap = ncap;
	}
	size_t s = id_slot(id, d->id_cap);
	while (d->id_vals[s] >= 0) {
		if (d->id_keys[s] == id) {
			d->id_vals[s] = idx;
			return 0;
		}
		s = (s + 1) & (d->id_cap - 1);
	}
	d->id_keys[s] = id;
	d->id_vals[s] = idx;
	d->id_nr++;
	return 0;
}

static int id_find(const struct tally_data *d, uint64_t id)
{
	if (!d->id_cap)
		return -1;
	size_t s = id_slot(id, d->id_cap);
	while (d->id_vals[s] >= 0) {
		if (d->id_keys[s] == id)
			return d->id_vals[s];
		s = (s + 1) & (d->id_cap - 1);
	}
	return -1;
}

/* ---- events -------------------------------------------------------------- */

static const char *const hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branches",
	"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
	"ref-cycles",
};
static const char *const sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
	"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
	"bpf-output", "cgroup-switches",
};

/* perf's modifier suffix: :u/:k/:h when some levels are excluded, :p… for precise_ip,
 * H/G when host/guest exclusion differs from the default that goes with the rest. */
static void modifiers(const struct perf_event_attr *a, char *out, size_t len)
{
	char m[16];
	size_t n = 0;
	bool guest_default = false;

	if (a->exclude_kernel || a->exclude_user || a->exclude_hv) {
		if (!a->exclude_kernel)
			m[n++] = 'k';
		if (!a->exclude_user)
			m[n++] = 'u';
		if (!a->exclude_hv)
			m[n++] = 'h';
		guest_default = true;
	}
	for (unsigned i = 0; i < a->precise_ip && i < 3; i++)
		m[n++] = 'p';
	if (a->precise_ip)
		guest_default = true;
	if (a->exclude_host || (bool)a->exclude_guest == guest_default) {
		if (!a->exclude_host)
			m[n++] = 'H';
		if (!a->exclude_guest)
			m[n++] = 'G';
	}
	m[n] = 0;
	snprintf(out, len, "%s%s", n ? ":" : "", m);
}

char *tly_event_name(const struct perf_event_attr *a)
{
	char base[96], mod[16], *s = NULL;

	switch (a->type) {
	case PERF_TYPE_HARDWARE:
		if (a->config < TLY_ARRAY_SIZE(hw_names))
			snprintf(base, sizeof(base), "%s", hw_names[a->config]);
		else
			snprintf(base, sizeof(base), "unknown-hardware:0x%" PRIx64, (uint64_t)a->config);
		break;
	case PERF_TYPE_SOFTWARE:
		if (a->config < TLY_ARRAY_SIZE(sw_names))
			snprintf(base, sizeof(base), "%s", sw_names[a->config]);
		else
			snprintf(base, sizeof(base), "unknown-software");
		break;
	case PERF_TYPE_TRACEPOINT:
		snprintf(base, sizeof(base), "unknown:unknown");
		break;
	case PERF_TYPE_BREAKPOINT:
		snprintf(base, sizeof(base), "mem:0x%" PRIx64 ":%s%s%s", (uint64_t)a->bp_addr,
			 a->bp_type & 1 ? "r" : "", a->bp_type & 2 ? "w" : "",
			 a->bp_type & 4 ? "x" : "");
		break;
	case PERF_TYPE_RAW:
		snprintf(base, sizeof(base), "raw 0x%" PRIx64, (uint64_t)a->config);
		break;
	default:
		snprintf(base, sizeof(base), "unknown attr type: %u", a->type);
		break;
	}
	modifiers(a, mod, sizeof(mod));
	if (asprintf(&s, "%s%s", base, mod) < 0)
		return NULL;
	return s;
}

/* Copy an attr of on-disk size SZ (0 means 64) into ev. */
static void set_attr(struct tally_data_event *ev, const uint8_t *p, size_t sz)
{
	size_t n = sz < sizeof(ev->attr) ? sz : sizeof(ev->attr);
	memset(&ev->attr, 0, sizeof(ev->attr));
	memcpy(&ev->attr, p, n);
	ev->disk_attr_size = (uint32_t)sz;
	ev->attr.size = (uint32_t)sz;
	if (sz >= 136)
		memcpy(&ev->config3, p + 128, 8);
	tally_sample_layout__from_attr(&ev->layout, &ev->attr);
}

static int add_event(struct tally_data *d, struct tally_data_event **out)
{
	struct tally_data_event *e = realloc(d->events, (d->nr_events + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	d->events = e;
	e = &e[d->nr_events];
	memset(e, 0, sizeof(*e));
	e->leader = (int)d->nr_events;
	d->nr_events++;
	*out = e;
	return 0;
}

static int add_ids(struct tally_data *d, struct tally_data_event *ev, int idx,
		   const uint8_t *p, size_t n)
{
	ev->ids = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!ev->ids)
		return -ENOMEM;
	memcpy(ev->ids, p, n * 8);
	ev->nr_ids = n;
	for (size_t i = 0; i < n; i++) {
		int ret = id_add(d, ev->ids[i], idx);
		if (ret)
			return ret;
	}
	return 0;
}

/* Header strings: u32 len + len bytes (NUL padded). Returns bytes consumed or 0. */
static size_t get_string(const uint8_t *p, size_t avail, const char **s, size_t *slen)
{
	uint32_t len;
	if (avail < 4)
		return 0;
	memcpy(&len, p, 4);
	if (len > avail - 4)
		return 0;
	*s = (const char *)p + 4;
	*slen = strnlen(*s, len);
	return 4 + (size_t)len;
}

static const char *const feat_names[] = {
	[TALLY_FEAT_HOSTNAME] = "HOSTNAME", [TALLY_FEAT_OSRELEASE] = "OSRELEASE",
	[TALLY_FEAT_VERSION] = "VERSION", [TALLY_FEAT_ARCH] = "ARCH",
	[TALLY_FEAT_CPUDESC] = "CPUDESC", [TALLY_FEAT_CPUID] = "CPUID",
	[TALLY_FEAT_EVENT_DESC] = "EVENT_DESC", [TALLY_FEAT_GROUP_DESC] = "GROUP_DESC",
};

static uint64_t feat_off(const struct tally_data *d, const void *p)
{
	return (uint64_t)((const uint8_t *)p - d->buf);
}

static int parse_event_desc(struct tally_data *d, struct tally_data_error *err)
{
	struct feat *f = &d->feats[TALLY_FEAT_EVENT_DESC];
	const uint8_t *p, *end;
	uint32_t nr, asz;

	if (!f->present || f->len < 8)
		return 0;
	p = f->buf;
	end = f->buf + f->len;
	memcpy(&nr, p, 4);
	memcpy(&asz, p + 4, 4);
	p += 8;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nids;
		const char *name;
		size_t nlen, used;

		if ((size_t)(end - p) < (size_t)asz + 4)
			return fail(err, feat_off(d, p), -EINVAL, "EVENT_DESC: event %u of %u with "
				    "attr size %u does not fit in the feature (%zu bytes)", i, nr, asz,
				    f->len);
		p += asz;
		memcpy(&nids, p, 4);
		p += 4;
		used = get_string(p, (size_t)(end - p), &name, &nlen);
		if (!used)
			return fail(err, feat_off(d, p), -EINVAL, "EVENT_DESC: event %u: name "
				    "string does not fit in the feature", i);
		p += used;
		if (nids > (size_t)(end - p) / 8)
			return fail(err, feat_off(d, p), -EINVAL, "EVENT_DESC: event %u: %u ids do "
				    "not fit in the feature", i, nids);
		p += (size_t)nids * 8;
		if (i < d->nr_events && nlen) {
			char *n = strndup(name, nlen);
			if (!n)
				return -ENOMEM;
			free(d->events[i].name);
			d->events[i].name = n;
		}
	}
	return 0;
}

static void parse_group_desc(struct tally_data *d)
{
	struct feat *f = &d->feats[TALLY_FEAT_GROUP_DESC];
	const uint8_t *p, *end;
	uint32_t nr;

	if (!f->present || f->len < 4)
		return;
	p = f->buf;
	end = f->buf + f->len;
	memcpy(&nr, p, 4);
	p += 4;
	for (uint32_t i = 0; i < nr; i++) {
		const char *name;
		size_t nlen, used = get_string(p, (size_t)(end - p), &name, &nlen);
		uint32_t leader, members;
		if (!used || (size_t)(end - p) < used + 8)
			return;
		p += used;
		memcpy(&leader, p, 4);
		memcpy(&members, p + 4, 4);
		p += 8;
		if (leader >= d->nr_events || members > d->nr_events - leader)
			continue;
		for (uint32_t m = 0; m < members; m++)
			d->events[leader + m].leader = (int)leader;
		d->events[leader].nr_members = (int)members;
	}
}

static int decode_string_features(struct tally_data *d, struct tally_data_error *err)
{
	static const int str_feats[] = { TALLY_FEAT_HOSTNAME, TALLY_FEAT_OSRELEASE,
					 TALLY_FEAT_VERSION, TALLY_FEAT_ARCH,
					 TALLY_FEAT_CPUDESC, TALLY_FEAT_CPUID };
	for (size_t i = 0; i < TLY_ARRAY_SIZE(str_feats); i++) {
		struct feat *f = &d->feats[str_feats[i]];
		const char *s;
		size_t len;
		if (!f->present)
			continue;
		if (!get_string(f->buf, f->len, &s, &len)) {
			uint32_t slen = 0;
			if (f->len >= 4)
				memcpy(&slen, f->buf, 4);
			return fail(err, feat_off(d, f->buf), -EINVAL, "%s feature: string of %u "
				    "bytes does not fit in its %zu-byte section",
				    feat_names[str_feats[i]], slen, f->len);
		}
		/* must be NUL terminated within the payload */
		if ((size_t)(s - (const char *)f->buf) + len < f->len)
			d->feat_str[str_feats[i]] = s;
	}
	return 0;
}

static int finish_events(struct tally_data *d, struct tally_data_error *err)
{
	int ret;

	for (size_t i = 0; i < d->nr_events; i++) {
		if (!d->events[i].name && !(d->events[i].name = tly_event_name(&d->events[i].attr)))
			return -ENOMEM;
	}
	ret = parse_event_desc(d, err);
	if (ret)
		return ret;
	parse_group_desc(d);
	ret = decode_string_features(d, err);
	if (ret)
		return ret;
	d->same_id_pos = true;
	for (size_t i = 1; i < d->nr_events; i++) {
		const struct tally_sample_layout *a = &d->events[0].layout, *b = &d->events[i].layout;
		uint64_t m = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			     PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			     PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU;
		if ((a->sample_type & m) != (b->sample_type & m))
			d->same_id_pos = false;
	}
	return 0;
}

/* ---- file mode ----------------------------------------------------------- */

static bool in_file(const struct tally_data *d, uint64_t off, uint64_t len)
{
	return off <= d->size && len <= d->size - off;
}

static int open_file_mode(struct tally_data *d, struct tally_data_error *err)
{
	struct tally_file_header *h = &d->hdr;
	uint64_t stride, nattr;
	int ret;

	if (d->size < 72)
		return fail(err, 0, -EINVAL, "file header cut short (%zu bytes)", d->size);
	memset(h, 0, sizeof(*h));
	memcpy(h, d->buf, 72);
	if (h->size != 104 && h->size != 72)
		return fail(err, 8, -EINVAL, "unsupported header size %" PRIu64, h->size);
	if (h->size == 104) {
		if (d->size < 104)
			return fail(err, 72, -EINVAL, "file header cut short (%zu bytes)", d->size);
		memcpy(h->adds_features, d->buf + 72, 32);
	}
	stride = h->attr_size;
	if (stride < 64 + 16 || stride > 4096)
		return fail(err, 16, -EINVAL, "bad attr size %" PRIu64, stride);
	if (!in_file(d, h->attrs.offset, h->attrs.size))
		return fail(err, 24, -EINVAL, "attrs section {0x%" PRIx64 ", %" PRIu64
			    "} outside the file", h->attrs.offset, h->attrs.size);
	if (h->attrs.size % stride)
		return fail(err, 32, -EINVAL, "attrs section of %" PRIu64 " bytes is not a "
			    "multiple of the attr size %" PRIu64, h->attrs.size, stride);
	nattr = h->attrs.size / stride;
	for (uint64_t i = 0; i < nattr; i++) {
		uint64_t off = h->attrs.offset + i * stride;
		const uint8_t *p = d->buf + off;
		uint32_t asz;
		struct tally_file_section ids;
		struct tally_data_event *ev;

		memcpy(&asz, p + 4, 4);
		if (!asz)
			asz = 64;
		if (asz < 64 || asz > stride - 16)
			return fail(err, off + 4, -EINVAL, "attr %" PRIu64 ": bad size %u", i, asz);
		memcpy(&ids, p + stride - 16, 16);
		if (!in_file(d, ids.offset, ids.size) || ids.size % 8)
			return fail(err, off + stride - 16, -EINVAL,
				    "attr %" PRIu64 ": id section outside the file", i);
		ret = add_event(d, &ev);
		if (ret)
			return ret;
		set_attr(ev, p, asz);
		ret = add_ids(d, ev, (int)i, d->buf + ids.offset, ids.size / 8);
		if (ret)
			return ret;
	}

	d->data_off = h->data.offset;
	if (d->data_off > d->size)
		return fail(err, 40, -EINVAL, "data section starts at 0x%" PRIx64
			    " beyond the end of the file (0x%zx)", d->data_off, d->size);
	if (h->data.size > UINT64_MAX - d->data_off)
		return fail(err, 48, -EINVAL, "data size %" PRIu64 " overflows", h->data.size);
	d->data_end = d->data_off + h->data.size;
	if (d->data_end > d->size) {
		d->truncated = d->data_end - d->size;
		d->data_end = d->size;
	}

	/* The feature table follows the data. */
	uint64_t ft = h->data.offset + h->data.size;
	for (int bit = 0; bit < TALLY_FEAT_MAX; bit++) {
		struct tally_file_section s;
		if (!(h->adds_features[bit / 64] >> (bit % 64) & 1))
			continue;
		if (!in_file(d, ft, 16))
			break;	/* cut short: the features are lost, the data is not */
		memcpy(&s, d->buf + ft, 16);
		if (!in_file(d, s.offset, s.size))
			return fail(err, ft, -EINVAL, "feature %d section {0x%" PRIx64 ", %" PRIu64
				    "} lies outside the file (%zu bytes)", bit, s.offset, s.size,
				    d->size);
		ft += 16;
		d->feats[bit].buf = d->buf + s.offset;
		d->feats[bit].len = s.size;
		d->feats[bit].present = true;
	}
	return 0;
}

/* ---- pipe mode: consume the header records up front ----------------------- */

static int pipe_attr(struct tally_data *d, const uint8_t *rec,
		     const struct perf_event_header *hdr, uint64_t off, struct tally_data_error *err)
{
	const uint8_t *p = rec + sizeof(*hdr);
	size_t len = hdr->size - sizeof(*hdr);
	uint32_t asz;
	struct tally_data_event *ev;
	int ret;

	if (len < 64)
		return fail(err, off, -EINVAL, "HEADER_ATTR record too small (%u bytes)", hdr->size);
	memcpy(&asz, p + 4, 4);
	if (!asz)
		asz = 64;
	if (asz < 64 || asz > len)
		return fail(err, off, -EINVAL, "HEADER_ATTR with bad attr size %u", asz);
	ret = add_event(d, &ev);
	if (ret)
		return ret;
	set_attr(ev, p, asz);
	return add_ids(d, ev, (int)d->nr_events - 1, p + asz, (len - asz) / 8);
}

static int pipe_feature(struct tally_data *d, const uint8_t *rec,
			const struct perf_event_header *hdr)
{
	uint64_t feat;
	if (hdr->size < 16)
		return 0;
	memcpy(&feat, rec + 8, 8);
	if (feat == 0 || feat >= TALLY_FEAT_MAX)
		return 0;
	d->feats[feat].buf = rec + 16;
	d->feats[feat].len = hdr->size - 16;
	d->feats[feat].present = true;
	if (feat < 256)
		d->hdr.adds_features[feat / 64] |= 1ULL << (feat % 64);
	return 0;
}

/* Size on the stream of a record: some user records carry data after header.size. */
static int stream_size(const uint8_t *rec, const struct perf_event_header *hdr, size_t avail,
		       uint64_t *sz)
{
	*sz = hdr->size;
	if (hdr->type == TALLY_RECORD_HEADER_TRACING_DATA && hdr->size >= 12 && avail >= 12) {
		uint32_t extra;
		memcpy(&extra, rec + 8, 4);
		*sz += extra;
	} else if (hdr->type == TALLY_RECORD_AUXTRACE && hdr->size >= 16 && avail >= 16) {
		uint64_t extra;
		memcpy(&extra, rec + 8, 8);
		if (extra > UINT64_MAX / 2)
			return -EINVAL;
		*sz += extra;
	}
	return 0;
}

static int scan_pipe(struct tally_data *d, struct tally_data_error *err)
{
	uint64_t off = d->data_off;

	while (off + sizeof(struct perf_event_header) <= d->data_end) {
		const uint8_t *rec = d->buf + off;
		struct perf_event_header h, *hdr = &h;
		uint64_t sz;
		int ret;

		memcpy(&h, rec, sizeof(h));
		if (hdr->size < sizeof(*hdr))
			return fail(err, off, -EINVAL, "record of size %u (type %u)", hdr->size,
				    hdr->type);
		if (stream_size(rec, hdr, d->data_end - off, &sz) || sz > d->data_end - off)
			break;	/* cut short: for_each reports it */
		if (hdr->type == TALLY_RECORD_HEADER_ATTR) {
			ret = pipe_attr(d, rec, hdr, off, err);
			if (ret)
				return ret;
		} else if (hdr->type == TALLY_RECORD_HEADER_FEATURE) {
			pipe_feature(d, rec, hdr);
		} else if (hdr->type == TALLY_RECORD_HEADER_TRACING_DATA) {
			d->feats[TALLY_FEAT_TRACING_DATA].buf = rec + hdr->size;
			d->feats[TALLY_FEAT_TRACING_DATA].len = sz - hdr->size;
			d->feats[TALLY_FEAT_TRACING_DATA].present = true;
		} else if (hdr->type == PERF_RECORD_SAMPLE) {
			break;	/* all header records come before the samples */
		}
		off += sz;
	}
	return 0;
}

/* ---- open ---------------------------------------------------------------- */

static int open_buffer(struct tally_data *d, struct tally_data_error *err)
{
	uint64_t magic, hsize;
	int ret;

	if (d->size == 0)
		return fail(err, 0, -ENODATA, "zero-sized data, nothing to do");
	if (d->size < 16)
		return fail(err, 0, -EINVAL, "too small for a perf.data header (%zu bytes)",
			    d->size);
	memcpy(&magic, d->buf, 8);
	memcpy(&hsize, d->buf + 8, 8);
	if (magic == __builtin_bswap64(TALLY_PERF_MAGIC2) ||
	    magic == __builtin_bswap64(TALLY_PERF_MAGIC1))
		return fail(err, 0, -EPROTONOSUPPORT, "foreign-endian perf.data is not supported");
	if (magic != TALLY_PERF_MAGIC2 && magic != TALLY_PERF_MAGIC1)
		return fail(err, 0, -EINVAL, "not a perf.data file (bad magic)");
	if (hsize == sizeof(struct tally_pipe_header)) {
		d->pipe = true;
		d->data_off = 16;
		d->data_end = d->size;
		ret = scan_pipe(d, err);
	} else {
		ret = open_file_mode(d, err);
	}
	if (ret)
		return ret;
	return finish_events(d, err);
}

static struct tally_data *data_new(const char *path)
{
	struct tally_data *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->stream_fd = -1;
	d->path = strdup(path ? path : "(memory)");
	if (!d->path) {
		free(d);
		return NULL;
	}
	return d;
}

int tally_data__open_mem(struct tally_data **out, const void *buf, size_t len,
			 struct tally_data_error *err)
{
	struct tally_data *d = data_new(NULL);
	int ret;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!d)
		return -ENOMEM;
	d->buf = buf;
	d->size = len;
	ret = open_buffer(d, err);
	if (ret) {
		tally_data__delete(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* A pipe: read its header records (up to the first SAMPLE, or its end) now; the rest is
 * read while walking, so a long `record -o - | report -i -` never sits in memory whole.
 * Returns 1 when the stream goes on (fd stays open for the walk), 0 at its end. */
static int read_prefix(int fd, uint8_t **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0, pos = 16;
	uint8_t *b = malloc(cap);
	bool eof = false;

	if (!b)
		return -ENOMEM;
	for (;;) {
		uint64_t hsize = 16;
		if (n >= 16)
			memcpy(&hsize, b + 8, 8);
		/* walk the complete records we have (a file-mode layout is read whole) */
		while (hsize == 16 && pos + 8 <= n) {
			struct perf_event_header h;
			uint64_t sz;
			memcpy(&h, b + pos, 8);
			if (h.size < 8 || stream_size(b + pos, &h, n - pos, &sz))
				goto done;	/* damage: the walk reports it */
			if (h.type == PERF_RECORD_SAMPLE)
				goto done;
			if (sz > n - pos)
				break;
			pos += sz;
		}
		if (eof)
			goto done;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			return e;
		}
		if (r == 0)
			eof = true;
		n += (size_t)r;
	}
done:
	*buf = b;
	*len = n;
	return eof ? 0 : 1;
}

int tally_data__open(struct tally_data **out, const char *path,
		     const struct tally_data_open_opts *opts, struct tally_data_error *err)
{
	struct tally_data *d;
	struct stat st;
	int fd = -1, ret;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!path)
		path = "perf.data";
	d = data_new(path);
	if (!d)
		return -ENOMEM;
	bool is_stdin = !strcmp(path, "-");
	/* standard input redirected from a file is mapped like the file itself */
	if (is_stdin && (fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode) ||
			 lseek(STDIN_FILENO, 0, SEEK_CUR) != 0)) {
		ret = read_prefix(STDIN_FILENO, &d->owned, &d->size);
		if (ret < 0) {
			fail(err, 0, ret, "reading standard input: %s", strerror(-ret));
			goto out;
		}
		if (ret == 1 && (d->stream_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)) < 0) {
			ret = -errno;
			fail(err, 0, ret, "standard input: %s", strerror(errno));
			goto out;
		}
		d->buf = d->owned;
	} else {
		fd = is_stdin ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			fail(err, 0, ret, "%s", strerror(errno));
			goto out;
		}
		if (fstat(fd, &st)) {
			ret = -errno;
			fail(err, 0, ret, "%s", strerror(errno));
			goto out;
		}
		if (S_ISFIFO(st.st_mode)) {
			ret = read_prefix(fd, &d->owned, &d->size);
			if (ret < 0) {
				fail(err, 0, ret, "%s", strerror(-ret));
				goto out;
			}
			if (ret == 1) {
				d->stream_fd = fd;
				fd = -1;
			}
			d->buf = d->owned;
		} else {
			if (!S_ISREG(st.st_mode)) {
				ret = fail(err, 0, -EINVAL, "not a regular file");
				goto out;
			}
			if (!is_stdin && !(opts && opts->force) && st.st_uid != geteuid() &&
			    st.st_uid != 0) {
				ret = fail(err, 0, -EPERM, "file not owned by the current user or "
					   "root (use -f to read it anyway)");
				goto out;
			}
			d->size = (size_t)st.st_size;
			if (d->size) {
				d->map = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE, fd, 0);
				if (d->map == MAP_FAILED) {
					d->map = NULL;
					ret = -errno;
					fail(err, 0, ret, "mmap: %s", strerror(errno));
					goto out;
				}
				madvise(d->map, d->size, MADV_SEQUENTIAL);
				d->buf = d->map;
			}
		}
	}
	ret = open_buffer(d, err);
	if (!ret && d->stream_fd >= 0 && !d->pipe) {
		ret = fail(err, 0, -EINVAL, "a stream must be in pipe mode (perf record -o -)");
	}
out:
	if (fd >= 0)
		close(fd);
	if (ret) {
		tally_data__delete(d);
		return ret;
	}
	*out = d;
	return 0;
}

static void queue_drop(struct tally_data *d);

void tally_data__delete(struct tally_data *d)
{
	if (!d)
		return;
	queue_drop(d);
	for (size_t i = 0; i < d->nr_events; i++) {
		free(d->events[i].name);
		free(d->events[i].ids);
	}
	free(d->events);
	free(d->id_keys);
	free(d->id_vals);
	free(d->q);
	free(d->q_tmp);
	free(d->carry);
	if (d->zstd)
		ZSTD_freeDStream(d->zstd);
	if (d->map)
		munmap(d->map, d->size);
	if (d->stream_fd >= 0)
		close(d->stream_fd);
	free(d->owned);
	free(d->path);
	free(d);
}

/* ---- accessors ----------------------------------------------------------- */

bool tally_data__is_pipe(const struct tally_data *d)
{
	return d->pipe;
}

size_t tally_data__nr_events(const struct tally_data *d)
{
	return d->nr_events;
}

const struct tally_data_event *tally_data__event(const struct tally_data *d, size_t idx)
{
	return idx < d->nr_events ? &d->events[idx] : NULL;
}

int tally_data__event_of_id(const struct tally_data *d, uint64_t id)
{
	return id_find(d, id);
}

int tally_data__event_of(const struct tally_data *d, const struct perf_event_header *hdr)
{
	uint64_t id;
	int idx;

	if (!d->nr_events || hdr->type >= 64)
		return -1;
	if (d->nr_events == 1)
		return 0;
	if (tally_record__peek_id(&d->events[0].layout, hdr, &id) == 0) {
		idx = id_find(d, id);
		if (idx >= 0)
			return idx;
	}
	/* Records without an id are decoded with the first event, as perf does. */
	return hdr->type == PERF_RECORD_SAMPLE ? -1 : 0;
}

bool tally_data__has_feature(const struct tally_data *d, enum tally_feature feat)
{
	return feat > 0 && feat < TALLY_FEAT_MAX && d->feats[feat].present;
}

int tally_data__feature(const struct tally_data *d, enum tally_feature feat,
			const void **buf, size_t *len)
{
	if (!tally_data__has_feature(d, feat))
		return -ENOENT;
	*buf = d->feats[feat].buf;
	*len = d->feats[feat].len;
	return 0;
}

const char *tally_data__feature_string(const struct tally_data *d, enum tally_feature feat)
{
	return feat > 0 && feat < TALLY_FEAT_MAX ? d->feat_str[feat] : NULL;
}

int tally_data__feature_strings(const struct tally_data *d, enum tally_feature feat,
				char ***out, size_t *nr)
{
	const unsigned char *buf, *p, *end;
	const void *raw;
	size_t len, room;
	uint32_t n;
	char **v, *text;

	*out = NULL;
	*nr = 0;
	if (tally_data__feature(d, feat, &raw, &len))
		return -ENOENT;
	buf = raw;
	if (len < 4)
		return -EINVAL;
	memcpy(&n, buf, 4);
	if (n > len / 4)
		return -EINVAL;
	/* room: the pointers, and the payload's bytes bound the strings and their NULs */
	room = (n + 1) * sizeof(char *) + len + n;
	v = malloc(room);
	if (!v)
		return -ENOMEM;
	text = (char *)(v + n + 1);
	p = buf + 4;
	end = buf + len;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l;
		size_t sl;

		if (end - p < 4) {
			free(v);
			return -EINVAL;
		}
		memcpy(&l, p, 4);
		p += 4;
		if (l > (size_t)(end - p)) {
			free(v);
			return -EINVAL;
		}
		sl = strnlen((const char *)p, l);
		memcpy(text, p, sl);
		text[sl] = 0;
		v[i] = text;
		text += sl + 1;
		p += l;
	}
	v[n] = NULL;
	*out = v;
	*nr = n;
	return 0;
}

const struct tally_file_header *tally_data__header(const struct tally_data *d)
{
	return &d->hdr;
}

uint64_t tally_data__file_size(const struct tally_data *d)
{
	return d->size;
}

const char *tally_data__path(const struct tally_data *d)
{
	return d->path;
}

uint64_t tally_data__truncated(const struct tally_data *d)
{
	return d->truncated;
}

uint64_t tally_data__nr_unknown_records(const struct tally_data *d)
{
	return d->nr_unknown;
}

/* ---- walking ------------------------------------------------------------- */

struct walk {
	struct tally_data *d;
	unsigned flags;
	tally_record_fn fn;
	void *arg;
	struct tally_data_error *err;
};

static void chunk_put(struct chunk *c)
{
	if (c && --c->refs == 0)
		free(c);
}

static void queue_drop(struct tally_data *d)
{
	for (size_t i = 0; i < d->q_nr; i++)
		chunk_put(d->q[i].chunk);
	d->q_nr = 0;
}

static int record_time(const struct tally_data *d, int evidx,
		       const struct perf_event_header *hdr, uint64_t *t)
{
	const struct tally_sample_layout *l;

	if (evidx < 0 || hdr->type >= 64)
		return -ENOENT;
	l = &d->events[evidx].layout;
	if (!(l->sample_type & PERF_SAMPLE_TIME))
		return -ENOENT;
	if (hdr->type == PERF_RECORD_SAMPLE) {
		size_t off = sizeof(*hdr) + 8 * (!!(l->sample_type & PERF_SAMPLE_IDENTIFIER) +
						 !!(l->sample_type & PERF_SAMPLE_IP) +
						 !!(l->sample_type & PERF_SAMPLE_TID));
		if (off + 8 > hdr->size)
			return -EINVAL;
		memcpy(t, (const uint8_t *)hdr + off, 8);
		return 0;
	}
	struct tally_sample_id sid;
	if (tally_sample_id__parse(l, hdr, &sid) || !sid.has_time)
		return -ENOENT;
	*t = sid.time;
	return 0;
}

/* End of the run of records in time order that starts at i. */
static size_t run_end(const struct qent *q, size_t i, size_t n)
{
	while (++i < n && q[i - 1].time <= q[i].time)
		;
	return i;
}

/*
 * Sort the queue by time, records of equal time in the order they came:
 * a stable natural merge sort. A round is a few runs already in order (one per ring
 * buffer, after what the previous round left), so this is a pass or two of merging,
 * and no pass at all when one CPU wrote the round.
 */
static int queue_sort(struct tally_data *d)
{
	struct qent *src = d->q, *dst;
	size_t n = d->q_nr;

	if (run_end(src, 0, n) == n)
		return 0;
	if (!d->q_tmp) {
		d->q_tmp = malloc(d->q_cap * sizeof(*d->q_tmp));
		if (!d->q_tmp)
			return -ENOMEM;
	}
	dst = d->q_tmp;
	for (;;) {
		size_t i = 0, runs = 0;

		while (i < n) {
			size_t a = run_end(src, i, n), b = a < n ? run_end(src, a, n) : n;
			size_t x = i, y = a, o = i;

			while (x < a && y < b)
				dst[o++] = src[y].time < src[x].time ? src[y++] : src[x++];
			while (x < a)
				dst[o++] = src[x++];
			while (y < b)
				dst[o++] = src[y++];
			i = b;
			runs++;
		}
		struct qent *t = src;
		src = dst;
		dst = t;
		if (runs == 1)
			break;
	}
	if (src != d->q) {	/* the sorted queue is in the other array: swap them */
		d->q_tmp = d->q;
		d->q = src;
	}
	return 0;
}

/* Deliver queued records with time <= limit, in time order. */
static int queue_flush(struct walk *w, uint64_t limit)
{
	struct tally_data *d = w->d;
	size_t n = 0;
	int ret = 0;

	if (!d->q_nr)
		return 0;
	ret = queue_sort(d);
	if (ret)
		return ret;
	while (n < d->q_nr && d->q[n].time <= limit) {
		struct qent *e = &d->q[n++];
		struct tally_record_ctx ctx = { .evidx = e->evidx, .file_offset = e->off,
						.compressed = e->chunk && e->chunk->decompressed };
		ret = w->fn(w->arg, e->hdr, &ctx);
		if (ret)
			break;
	}
	for (size_t i = 0; i < n; i++)
		chunk_put(d->q[i].chunk);
	memmove(d->q, d->q + n, (d->q_nr - n) * sizeof(*d->q));
	d->q_nr -= n;
	return ret;
}

static int deliver(struct walk *w, const struct perf_event_header *hdr, uint64_t off,
		   struct chunk *chunk, bool consumed);
static int deliver_aligned(struct walk *w, const uint8_t *rec, uint64_t off, bool consumed);

static int decompress(struct walk *w, const uint8_t *rec, const struct perf_event_header *hdr,
		      uint64_t off)
{
	struct tally_data *d = w->d;
	const uint8_t *src = rec + sizeof(*hdr);
	size_t srclen = hdr->size - sizeof(*hdr);
	struct chunk *c;
	size_t cap;
	int ret = 0;

	if (hdr->type == TALLY_RECORD_COMPRESSED2) {
		uint64_t dsz;
		if (srclen < 8)
			return fail(w->err, off, -EINVAL, "COMPRESSED2 record too small");
		memcpy(&dsz, src, 8);
		if (dsz > srclen - 8)
			return fail(w->err, off, -EINVAL, "COMPRESSED2 data_size %" PRIu64
				    " exceeds the record", dsz);
		src += 8;
		srclen = dsz;
	}
	if (!d->zstd) {
		d->zstd = ZSTD_createDStream();
		if (!d->zstd)
			return -ENOMEM;
		ZSTD_initDStream(d->zstd);
	}
	cap = d->carry_len + srclen * 8 + 4096;
	c = malloc(sizeof(*c) + cap);
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->decompressed = true;
	if (d->carry_len)
		memcpy(c->data, d->carry, d->carry_len);
	c->len = d->carry_len;
	ZSTD_inBuffer in = { src, srclen, 0 };
	for (;;) {
		if (c->len == cap) {
			struct chunk *nc = realloc(c, sizeof(*c) + cap * 2);
			if (!nc) {
				free(c);
				return -ENOMEM;
			}
			c = nc;
			cap *= 2;
		}
		ZSTD_outBuffer o = { c->data, cap, c->len };
		size_t r = ZSTD_decompressStream(d->zstd, &o, &in);
		if (ZSTD_isError(r)) {
			free(c);
			return fail(w->err, off, -EINVAL, "zstd: %s", ZSTD_getErrorName(r));
		}
		c->len = o.pos;
		/* done when the input is used up and the decoder had room to spare (a full
		 * output buffer may mean it holds more) */
		if (in.pos == in.size && o.pos < o.size)
			break;
	}
	/* Walk the records that are complete; keep an incomplete tail for the next. */
	size_t pos = 0;
	uint64_t base = d->decomp_off - d->carry_len;
	while (pos + sizeof(struct perf_event_header) <= c->len) {
		struct perf_event_header h;
		memcpy(&h, c->data + pos, sizeof(h));
		if (h.size < sizeof(h)) {
			chunk_put(c);
			return fail(w->err, base + pos, -EINVAL,
				    "record of size %u in compressed data", h.size);
		}
		if (h.size > c->len - pos)
			break;
		if (pos % 8)
			ret = deliver_aligned(w, c->data + pos, base + pos, false);
		else
			ret = deliver(w, (const void *)(c->data + pos), base + pos, c, false);
		if (ret)
			break;
		pos += h.size;
	}
	d->decomp_off = base + c->len;
	d->carry_len = 0;
	if (!ret && pos < c->len) {
		uint8_t *nb = realloc(d->carry, c->len - pos);
		if (!nb) {
			chunk_put(c);
			return -ENOMEM;
		}
		d->carry = nb;
		memcpy(d->carry, c->data + pos, c->len - pos);
		d->carry_len = c->len - pos;
	}
	chunk_put(c);
	return ret;
}

/* Give back the pages of the mapped file that the walk has left behind (nothing queued
 * points there any more): a file-backed private mapping re-reads them if touched
 * again, so this only lowers the peak RSS on big files. */
static void release_behind(struct tally_data *d, uint64_t off)
{
	const long page = 4096;
	for (size_t i = 0; i < d->q_nr; i++) {
		if (!d->q[i].chunk) {
			uint64_t o = (uint64_t)((const uint8_t *)d->q[i].hdr - d->buf);
			if (o < off)
				off = o;
		}
	}
	off &= ~(uint64_t)(page - 1);
	if (!d->map || off < d->released + (256u << 10))
		return;
	madvise((uint8_t *)d->map + d->released, off - d->released, MADV_DONTNEED);
	d->released = off;
}

/* Counts inside records the reader hands out must fit the record: callers may trust
 * them. Samples are checked against their event's layout for the same reason. */
static int check_record(const struct tally_data *d, const struct perf_event_header *hdr,
			int idx, uint64_t off, struct tally_data_error *err)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	size_t len = hdr->size - sizeof(*hdr);
	uint64_t nr;
	uint16_t type, n16, lsz;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		if (idx >= 0 && tally_sample__check(&d->events[idx].layout, hdr))
			return fail(err, off, -EINVAL, "SAMPLE of %u bytes is shorter than its "
				    "fields say (event %d)", hdr->size, idx);
		return 0;
	case TALLY_RECORD_THREAD_MAP:
		if (len < 8)
			return fail(err, off, -EINVAL, "THREAD_MAP record too small");
		memcpy(&nr, p, 8);
		if (nr > (len - 8) / 24)
			return fail(err, off, -EINVAL, "THREAD_MAP with %" PRIu64 " entries does not "
				    "fit in %u bytes", nr, hdr->size);
		return 0;
	case TALLY_RECORD_CPU_MAP:
		if (len < 4)
			return fail(err, off, -EINVAL, "CPU_MAP record too small");
		memcpy(&type, p, 2);
		memcpy(&n16, p + 2, 2);
		if (type == 0 && n16 > (len - 4) / 2)	/* cpus: u16 cpu[nr] */
			return fail(err, off, -EINVAL, "CPU_MAP with %u cpus does not fit in %u "
				    "bytes", n16, hdr->size);
		if (type == 2) {			/* range: u8 any_cpu, pad; u16 start, end */
			uint16_t r[2];
			if (len < 8)
				return fail(err, off, -EINVAL, "CPU_MAP range record too small");
			memcpy(r, p + 4, 4);
			if (p[2] > 1 || r[0] > r[1])
				return fail(err, off, -EINVAL, "CPU_MAP range %u-%u (any_cpu %u) is "
					    "not a cpu range", r[0], r[1], p[2]);
		}
		if (type == 1) {			/* mask: u16 long_size; mask[nr] */
			if (len < 6)
				return fail(err, off, -EINVAL, "CPU_MAP mask record too small");
			memcpy(&lsz, p + 4, 2);
			if ((lsz != 4 && lsz != 8) || (size_t)n16 * lsz > len - 6)
				return fail(err, off, -EINVAL, "CPU_MAP mask of %u x %u bytes does not "
					    "fit in %u bytes", n16, lsz, hdr->size);
		}
		return 0;
	default:
		return 0;
	}
}

/* One record: consumed by the reader, decompressed, queued or handed over. */
static int deliver(struct walk *w, const struct perf_event_header *hdr, uint64_t off,
		   struct chunk *chunk, bool consumed)
{
	struct tally_data *d = w->d;
	int evidx;
	uint64_t t;

	if (consumed && !(w->flags & TALLY_DATA_RAW))
		return 0;
	if (hdr->type == TALLY_RECORD_ID_INDEX && hdr->size >= 16) {
		uint64_t nr;
		memcpy(&nr, hdr + 1, 8);
		if (nr > (hdr->size - 16u) / 32)
			return fail(w->err, off, -EINVAL, "ID_INDEX with %" PRIu64
				    " entries does not fit in %u bytes", nr, hdr->size);
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t e[2];
			memcpy(e, (const uint8_t *)hdr + 16 + i * 32, 16);
			if (e[1] < d->nr_events && id_find(d, e[0]) < 0) {
				int ret = id_add(d, e[0], (int)e[1]);
				if (ret)
					return ret;
			}
		}
	}
	evidx = tally_data__event_of(d, hdr);
	if (!consumed) {
		int ret = check_record(d, hdr, evidx, off, w->err);
		if (ret)
			return ret;
	}
	if (!consumed && !tally_record__type_name(hdr->type)) {
		d->nr_unknown++;
		if (!(w->flags & TALLY_DATA_RAW))
			return 0;
	}
	if (w->flags & TALLY_DATA_ORDERED) {
		if (hdr->type == TALLY_RECORD_FINISHED_ROUND) {
			int ret = queue_flush(w, d->flush_limit);
			d->flush_limit = d->max_time;
			if (ret)
				return ret;
			if (!chunk)
				release_behind(d, off);
		} else if (!consumed && record_time(d, evidx, hdr, &t) == 0) {
			if (d->q_nr == d->q_cap) {
				size_t ncap = d->q_cap ? d->q_cap * 2 : 1024;
				struct qent *nq = realloc(d->q, ncap * sizeof(*nq));
				if (!nq)
					return -ENOMEM;
				d->q = nq;
				d->q_cap = ncap;
				free(d->q_tmp);	/* queue_sort allocates it again at the new size */
				d->q_tmp = NULL;
			}
			d->q[d->q_nr++] = (struct qent){ .time = t, .hdr = hdr,
							 .chunk = chunk, .off = off, .evidx = evidx };
			if (chunk)
				chunk->refs++;
			if (t > d->max_time)
				d->max_time = t;
			return 0;
		}
	}
	struct tally_record_ctx ctx = { .evidx = evidx, .file_offset = off,
					.compressed = chunk && chunk->decompressed };
	return w->fn(w->arg, hdr, &ctx);
}

/* Pipe streams hold unpadded records (HEADER_FEATURE, COMPRESSED), so the records after
 * them may sit at any address: hand out an 8-byte aligned copy instead. */
static int deliver_aligned(struct walk *w, const uint8_t *rec, uint64_t off, bool consumed)
{
	struct chunk *c;
	uint16_t size;
	int ret;

	if (((uintptr_t)rec & 7) == 0)
		return deliver(w, (const struct perf_event_header *)rec, off, NULL, consumed);
	memcpy(&size, rec + 6, 2);
	c = malloc(sizeof(*c) + size);
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->len = size;
	c->decompressed = false;
	memcpy(c->data, rec, size);
	ret = deliver(w, (const struct perf_event_header *)c->data, off, c, consumed);
	chunk_put(c);
	return ret;
}

/* Read the stream into c until it holds cap bytes or the stream ends (*eof). */
static int fill_chunk(struct walk *w, struct chunk *c, size_t cap, uint64_t off, bool *eof)
{
	while (c->len < cap) {
		ssize_t r = read(w->d->stream_fd, c->data + c->len, cap - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(w->err, off + c->len, -errno, "reading the stream: %s",
				    strerror(errno));
		if (r == 0) {
			*eof = true;
			return 0;
		}
		c->len += (size_t)r;
	}
	return 0;
}

/* Deliver the whole records of c (off: where c starts in the stream); *pos ends at
 * the first byte not delivered, *need says how long a record cut by c's end is. */
static int walk_chunk(struct walk *w, struct chunk *c, uint64_t off, size_t *pos,
		      uint64_t *need)
{
	int ret = 0;

	*need = 0;
	while (!ret && *pos + 8 <= c->len) {
		const uint8_t *rec = c->data + *pos;
		struct perf_event_header h;
		uint64_t sz;
		memcpy(&h, rec, 8);
		if (h.size < 8)
			return fail(w->err, off + *pos, -EINVAL, "record of size %u (type %u): the "
				    "stream is damaged here", h.size, h.type);
		if (stream_size(rec, &h, c->len - *pos, &sz))
			return fail(w->err, off + *pos, -EINVAL, "record of type %u claims %" PRIu64
				    " bytes of data", h.type, sz);
		if (sz > c->len - *pos) {
			*need = sz;
			break;
		}
		bool consumed = h.type == TALLY_RECORD_HEADER_ATTR ||
				h.type == TALLY_RECORD_HEADER_FEATURE ||
				h.type == TALLY_RECORD_HEADER_TRACING_DATA;
		if (h.type == TALLY_RECORD_COMPRESSED || h.type == TALLY_RECORD_COMPRESSED2) {
			if (w->flags & TALLY_DATA_RAW)
				ret = deliver_aligned(w, rec, off + *pos, true);
			if (!ret)
				ret = decompress(w, rec, &h, off + *pos);
		} else if ((uintptr_t)rec & 7) {
			ret = deliver_aligned(w, rec, off + *pos, consumed);
		} else {
			ret = deliver(w, (const struct perf_event_header *)rec, off + *pos, c,
				      consumed);
		}
		*pos += sz;
	}
	return ret;
}

/* The rest of a pipe: read in chunks; records are delivered from the chunk, which
 * queued records keep alive; a record cut by a chunk's end starts the next one. */
static int walk_stream(struct walk *w, const uint8_t *tail, size_t tail_len, uint64_t off)
{
	struct tally_data *d = w->d;
	const size_t chunk_size = 4u << 20;
	uint8_t *carry = NULL;
	size_t carry_len = tail_len;
	uint64_t need = 0;	/* size of the record the carry starts, once known */
	bool eof = false;
	int ret = 0;

	if (tail_len && !(carry = malloc(tail_len)))
		return -ENOMEM;
	if (tail_len)
		memcpy(carry, tail, tail_len);
	while (!eof && !ret) {
		size_t cap = chunk_size;
		if (need > (1u << 30)) {
			free(carry);
			return fail(w->err, off, -EINVAL, "record claims %" PRIu64 " bytes", need);
		}
		if (need > cap)
			cap = (size_t)need;
		struct chunk *c = malloc(sizeof(*c) + cap);
		if (!c) {
			free(carry);
			return -ENOMEM;
		}
		c->refs = 1;
		c->decompressed = false;
		if (carry_len)
			memcpy(c->data, carry, carry_len);
		c->len = carry_len;
		ret = fill_chunk(w, c, cap, off, &eof);
		size_t pos = 0;
		need = 0;
		if (!ret)
			ret = walk_chunk(w, c, off, &pos, &need);
		off += pos;
		carry_len = c->len - pos;
		if (!ret && carry_len) {
			uint8_t *nc = realloc(carry, carry_len);
			if (!nc) {
				chunk_put(c);
				free(carry);
				return -ENOMEM;
			}
			carry = nc;
			memcpy(carry, c->data + pos, carry_len);
		}
		chunk_put(c);
	}
	if (!ret && carry_len)
		d->truncated += need > carry_len ? need - carry_len : 8 - carry_len;
	free(carry);
	return ret;
}

int tally_data__for_each(struct tally_data *d, unsigned flags, tally_record_fn fn, void *arg,
			 struct tally_data_error *err)
{
	struct walk w = { d, flags, fn, arg, err };
	uint64_t off = d->data_off;
	int ret = 0;

	if (err)
		memset(err, 0, sizeof(*err));
	queue_drop(d);
	d->carry_len = 0;
	d->decomp_off = 0;
	d->max_time = d->flush_limit = 0;
	d->released = d->data_off & ~(uint64_t)4095;
	d->nr_unknown = 0;
	if (d->zstd)
		ZSTD_initDStream(d->zstd);
	if (!d->pipe && d->hdr.data.offset + d->hdr.data.size > d->size)
		d->truncated = d->hdr.data.offset + d->hdr.data.size - d->size;
	else
		d->truncated = 0;

	if (d->stream_fd >= 0) {
		if (d->stream_used)
			return fail(err, 0, -ESPIPE, "a pipe stream can be read only once");
		d->stream_used = true;
	}
	while (off < d->data_end) {
		const uint8_t *rec = d->buf + off;
		struct perf_event_header h, *hdr = &h;
		uint64_t sz;
		bool consumed = false;

		if (d->data_end - off < sizeof(*hdr)) {
			if (d->stream_fd >= 0)
				break;	/* the rest comes from the stream */
			d->truncated += sizeof(*hdr) - (d->data_end - off);
			break;
		}
		memcpy(&h, rec, sizeof(h));
		if (hdr->size < sizeof(*hdr)) {
			ret = fail(err, off, -EINVAL, "record of size %u (type %u): the file is "
				   "damaged here", hdr->size, hdr->type);
			break;
		}
		if (stream_size(rec, hdr, d->data_end - off, &sz)) {
			ret = fail(err, off, -EINVAL, "record of type %u claims %" PRIu64
				   " bytes of data", hdr->type, sz);
			break;
		}
		if (sz > d->data_end - off) {
			if (d->stream_fd >= 0)
				break;	/* the rest comes from the stream */
			if (d->pipe || d->data_end == d->size) {
				d->truncated += sz - (d->data_end - off);
				break;	/* the file ends here: cut short */
			}
			ret = fail(err, off, -EINVAL, "record of type %u and %" PRIu64 " bytes runs "
				   "past the end of the data section (0x%" PRIx64 ")", hdr->type, sz,
				   d->data_end);
			break;
		}
		switch (hdr->type) {
		case TALLY_RECORD_COMPRESSED:
		case TALLY_RECORD_COMPRESSED2:
			if (flags & TALLY_DATA_RAW)
				ret = deliver_aligned(&w, rec, off, true);
			if (!ret)
				ret = decompress(&w, rec, hdr, off);
			break;
		case TALLY_RECORD_HEADER_ATTR:
		case TALLY_RECORD_HEADER_FEATURE:
		case TALLY_RECORD_HEADER_TRACING_DATA:
			consumed = d->pipe;
			/* fallthrough */
		default:
			ret = deliver_aligned(&w, rec, off, consumed);
			break;
		}
		if (ret)
			break;
		off += sz;
		if (off - d->released > (8u << 20))
			release_behind(d, off);
	}
	if (!ret && d->stream_fd >= 0)
		ret = walk_stream(&w, d->buf + off, d->data_end - off, off);
	if (!ret && (flags & TALLY_DATA_ORDERED))
		ret = queue_flush(&w, UINT64_MAX);
	queue_drop(d);
	return ret;
}
