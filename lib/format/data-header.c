/*
 * The perf.data reader's header part (lib/format/data.c opens the file): the events and
 * their attrs and ids, a file's header sections, and a pipe stream's header records
 * (attrs, features, tracing data) consumed up front.
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
#include "internal/reader.h"
#include "internal/util.h"

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
		int ret = tly_data_id_add(d, ev->ids[i], idx);
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
			return tly_data_fail(err, feat_off(d, p), -EINVAL,
					     "EVENT_DESC: event %u of %u with "
					     "attr size %u does not fit in the feature (%zu bytes)", i, nr, asz,
					     f->len);
		p += asz;
		memcpy(&nids, p, 4);
		p += 4;
		used = get_string(p, (size_t)(end - p), &name, &nlen);
		if (!used)
			return tly_data_fail(err, feat_off(d, p), -EINVAL,
					     "EVENT_DESC: event %u: name "
					     "string does not fit in the feature", i);
		p += used;
		if (nids > (size_t)(end - p) / 8)
			return tly_data_fail(err, feat_off(d, p), -EINVAL,
					     "EVENT_DESC: event %u: %u ids do "
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
			return tly_data_fail(err, feat_off(d, f->buf), -EINVAL,
					     "%s feature: string of %u "
					     "bytes does not fit in its %zu-byte section",
					     feat_names[str_feats[i]], slen, f->len);
		}
		/* must be NUL terminated within the payload */
		if ((size_t)(s - (const char *)f->buf) + len < f->len)
			d->feat_str[str_feats[i]] = s;
	}
	return 0;
}

int tly_data_finish_events(struct tally_data *d, struct tally_data_error *err)
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

int tly_data_open_file_mode(struct tally_data *d, struct tally_data_error *err)
{
	struct tally_file_header *h = &d->hdr;
	uint64_t stride, nattr;
	int ret;

	if (d->size < 72)
		return tly_data_fail(err, 0, -EINVAL, "file header cut short (%zu bytes)", d->size);
	memset(h, 0, sizeof(*h));
	memcpy(h, d->buf, 72);
	if (h->size != 104 && h->size != 72)
		return tly_data_fail(err, 8, -EINVAL, "unsupported header size %" PRIu64, h->size);
	if (h->size == 104) {
		if (d->size < 104)
			return tly_data_fail(err, 72, -EINVAL, "file header cut short (%zu bytes)",
					     d->size);
		memcpy(h->adds_features, d->buf + 72, 32);
	}
	stride = h->attr_size;
	if (stride < 64 + 16 || stride > 4096)
		return tly_data_fail(err, 16, -EINVAL, "bad attr size %" PRIu64, stride);
	if (!in_file(d, h->attrs.offset, h->attrs.size))
		return tly_data_fail(err, 24, -EINVAL, "attrs section {0x%" PRIx64 ", %" PRIu64
				     "} outside the file", h->attrs.offset, h->attrs.size);
	if (h->attrs.size % stride)
		return tly_data_fail(err, 32, -EINVAL,
				     "attrs section of %" PRIu64 " bytes is not a "
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
			return tly_data_fail(err, off + 4, -EINVAL, "attr %" PRIu64 ": bad size %u",
					     i, asz);
		memcpy(&ids, p + stride - 16, 16);
		if (!in_file(d, ids.offset, ids.size) || ids.size % 8)
			return tly_data_fail(err, off + stride - 16, -EINVAL,
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
		return tly_data_fail(err, 40, -EINVAL, "data section starts at 0x%" PRIx64
				     " beyond the end of the file (0x%zx)", d->data_off, d->size);
	if (h->data.size > UINT64_MAX - d->data_off)
		return tly_data_fail(err, 48, -EINVAL, "data size %" PRIu64 " overflows",
				     h->data.size);
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
			return tly_data_fail(err, ft, -EINVAL,
					     "feature %d section {0x%" PRIx64 ", %" PRIu64
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
		return tly_data_fail(err, off, -EINVAL, "HEADER_ATTR record too small (%u bytes)",
				     hdr->size);
	memcpy(&asz, p + 4, 4);
	if (!asz)
		asz = 64;
	if (asz < 64 || asz > len)
		return tly_data_fail(err, off, -EINVAL, "HEADER_ATTR with bad attr size %u", asz);
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

int tly_data_scan_pipe(struct tally_data *d, struct tally_data_error *err)
{
	uint64_t off = d->data_off;

	while (off + sizeof(struct perf_event_header) <= d->data_end) {
		const uint8_t *rec = d->buf + off;
		struct perf_event_header h, *hdr = &h;
		uint64_t sz;
		int ret;

		memcpy(&h, rec, sizeof(h));
		if (hdr->size < sizeof(*hdr))
			return tly_data_fail(err, off, -EINVAL, "record of size %u (type %u)",
					     hdr->size, hdr->type);
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
