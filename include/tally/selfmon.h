/*
 * Self-monitoring: a program counting (and sampling) its own execution.
 *
 * A tally_selfmon is one perf event, normally on the calling thread. Counts come from
 * the fast path when the kernel allows it -- the mmap'd user page plus rdpmc on x86 or
 * the PMU registers on arm64, with time_enabled/time_running extrapolated from the
 * timestamp counter -- and from read() on the event fd otherwise. The fast path is
 * only ever attempted for events on the calling thread (pid 0 or its own tid, any
 * CPU): attached (other pid) or CPU-bound events always use read(), because rdpmc
 * there returns another context's counter without any error.
 *
 * The fast path needs a hardware PMU that publishes a counter index. Software events
 * (task-clock, page-faults, ...) never do, so they always read() -- correctly, and with
 * the library adding almost nothing to the system call (see bench/read-cost).
 *
 * Every counter is opened with read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING |
 * ID (plus GROUP for a leader opened with TALLY_SELF_GROUP); the attr's own
 * read_format is replaced.
 */
#ifndef TALLY_SELFMON_H
#define TALLY_SELFMON_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include <tally/counter.h>
#include <tally/event.h>
#include <tally/record.h>
#include <tally/ring.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_selfmon;

/* Flags for tally_selfmon__open. */
enum {
	/* Leader of a group that will be read as a whole (PERF_FORMAT_GROUP). */
	TALLY_SELF_GROUP = 1u << 0,
	/* Never map the user page: every read is a read() system call. */
	TALLY_SELF_NO_MMAP = 1u << 1,
	/* tally_selfmon__open_events: leave the events disabled (enable them, e.g.
	 * group-wise, when the region to count starts). */
	TALLY_SELF_START_DISABLED = 1u << 2,
};

/* How a read was (or would be) served; tally_self_path_str() explains each. */
enum tally_self_path {
	TALLY_SELF_PATH_FAST = 0,	/* user page + rdpmc/mrs, no system call */
	TALLY_SELF_PATH_NO_PAGE,	/* user page not mapped (TALLY_SELF_NO_MMAP or mmap failed) */
	TALLY_SELF_PATH_NOT_SELF,	/* attached to another task or bound to a CPU */
	TALLY_SELF_PATH_NO_INDEX,	/* index 0: software event, not scheduled, or not allowed */
	TALLY_SELF_PATH_NO_RDPMC,	/* kernel does not publish cap_user_rdpmc */
	TALLY_SELF_PATH_OLD_CAPS,	/* pre-3.12 kernel: cap_bit0 aliases two capabilities */
	TALLY_SELF_PATH_NO_TIME,	/* no cap_user_time: times could not be extrapolated */
	TALLY_SELF_PATH_METRICS,	/* Intel PERF_METRICS: rdpmc returns packed ratios */
	TALLY_SELF_PATH_BAD_INDEX,	/* index/width this architecture cannot read */
	TALLY_SELF_PATH_ARCH,		/* no user-space counter access on this architecture */
	TALLY_SELF_PATH_BUSY,		/* the page's seqlock never settled */
	TALLY_SELF_PATH_USER_ACCESS_OFF,/* arm64: /proc/sys/kernel/perf_user_access is 0 */
	TALLY_SELF_PATH_INHERIT,	/* attr.inherit: read() sums the children, the page cannot */
};

/* A one-line explanation of @path, with what to do about it where something can be. */
TALLY_API const char *tally_self_path_str(enum tally_self_path path);

/*
 * Open @attr on (@pid, @cpu): pid 0 / cpu -1 is the calling thread, the only target
 * the fast path serves. @leader (or NULL) makes the new event a member of its group.
 * The attr is copied; size and read_format are set by the library. To build a group,
 * open the leader with attr.disabled = 1, then the members with attr.disabled = 0,
 * then enable the leader: a member added to (or enabled in) a group that is already
 * counting is only scheduled in at the thread's next context switch, and until then
 * counts nothing. On arm64, for a
 * self-monitoring CPU PMU event, user access is requested through config1 (bit 1, and
 * bit 0 for a 64-bit counter when the hardware has one) if /proc/sys/kernel/
 * perf_user_access allows it. Returns 0 or -errno (the open's errno, unchanged).
 */
TALLY_API int tally_selfmon__open(struct tally_selfmon **out, const struct perf_event_attr *attr,
				  pid_t pid, int cpu, struct tally_selfmon *leader,
				  unsigned int flags);
/* Close the event and unmap its page. NULL is a no-op. */
TALLY_API void tally_selfmon__delete(struct tally_selfmon *c);

/*
 * Convenience: open every event of @events, in perf's -e syntax
 * ("instructions:u,{cycles,branches}"), on the calling thread, groups as written
 * (a group's leader gets TALLY_SELF_GROUP, so it can be read with
 * tally_selfmon__read_group). Everything is opened disabled, then enabled group by
 * group once all are open, unless @flags has TALLY_SELF_START_DISABLED.
 * On success *out is a malloc'd array of *nr counters (free it with
 * tally_selfmon__close_events). On a syntax error returns -EINVAL and fills @perr (if
 * not NULL; tally_parse_error__format makes perf's caret message of it); on an open
 * error returns that -errno, *failed (if not NULL) is the index of the event that
 * failed, and nothing stays open. Tool events (duration_time, ...) are not kernel
 * counters: -EOPNOTSUPP.
 */
TALLY_API int tally_selfmon__open_events(const char *events, unsigned int flags,
					struct tally_selfmon ***out, size_t *nr,
					struct tally_parse_error *perr, size_t *failed);
/* Close @nr counters from tally_selfmon__open_events (members first) and free the
 * array. NULL is a no-op. */
TALLY_API void tally_selfmon__close_events(struct tally_selfmon **counters, size_t nr);
/* The event's name as perf displays it ("cycles:u") when opened from a string,
 * else NULL. */
TALLY_API const char *tally_selfmon__name(const struct tally_selfmon *c);

/* The event's file descriptor (owned by @c). */
TALLY_API int tally_selfmon__fd(const struct tally_selfmon *c);
/* The kernel's id for the event (PERF_EVENT_IOC_ID); 0 or -errno. */
TALLY_API int tally_selfmon__id(const struct tally_selfmon *c, uint64_t *id);

/* Enable, disable, reset the event, or with @group its whole group
 * (PERF_IOC_FLAG_GROUP). 0 or -errno. */
TALLY_API int tally_selfmon__enable(struct tally_selfmon *c, bool group);
TALLY_API int tally_selfmon__disable(struct tally_selfmon *c, bool group);
TALLY_API int tally_selfmon__reset(struct tally_selfmon *c, bool group);

/* Enable / disable every event the calling process owns (counters opened on it by
 * itself), via prctl(PR_TASK_PERF_EVENTS_ENABLE/DISABLE). 0 or -errno. */
TALLY_API int tally_selfmon__enable_all(void);
TALLY_API int tally_selfmon__disable_all(void);

/* Read the raw {val, ena, run}: the fast path when it is available, read() otherwise.
 * 0 or -errno. */
TALLY_API int tally_selfmon__read(struct tally_selfmon *c, struct tally_count *out);
/* Read through read() only (the reference the fast path must agree with). */
TALLY_API int tally_selfmon__read_syscall(struct tally_selfmon *c, struct tally_count *out);
/* The multiplexing-scaled value (tally_scale of a tally_selfmon__read). */
TALLY_API int tally_selfmon__read_scaled(struct tally_selfmon *c, uint64_t *val);
/*
 * Read a whole group with one read() on a leader opened with TALLY_SELF_GROUP.
 * Fills up to @max entries of @counts (and of @ids if not NULL) in group order, the
 * leader first; every entry carries the group's ena/run. With @scaled, val is scaled.
 * Returns the number of members (which may exceed @max) or -errno.
 */
TALLY_API int tally_selfmon__read_group(struct tally_selfmon *leader, struct tally_count *counts,
					uint64_t *ids, size_t max, bool scaled);
/* How the last tally_selfmon__read was served. */
TALLY_API enum tally_self_path tally_selfmon__last_path(const struct tally_selfmon *c);
/* Whether the fast path can serve @c at all (a fixed reason, independent of when the
 * kernel happens to have the event scheduled): TALLY_SELF_PATH_FAST if so. */
TALLY_API enum tally_self_path tally_selfmon__fast_path(const struct tally_selfmon *c);
/* The mapped user page, or NULL. Valid until tally_selfmon__delete. */
TALLY_API const struct perf_event_mmap_page *tally_selfmon__page(const struct tally_selfmon *c);

/*
 * Overflow signals: deliver @signo to the calling thread on each overflow (or wakeup)
 * of this sampling event: O_ASYNC, F_SETSIG (si_fd identifies the event),
 * F_SETOWN_EX to the calling thread. 0 or -errno.
 */
TALLY_API int tally_selfmon__set_signal(struct tally_selfmon *c, int signo);
/* PERF_EVENT_IOC_REFRESH: enable for @n more overflows, then disable. 0 or -errno. */
TALLY_API int tally_selfmon__refresh(struct tally_selfmon *c, int n);
/* PERF_EVENT_IOC_PERIOD: change the sample period (or frequency). 0 or -errno. */
TALLY_API int tally_selfmon__set_period(struct tally_selfmon *c, uint64_t period);

/*
 * The fast path on a user page mapped by the caller (the page of any perf event fd
 * of the calling thread). Computes {val, ena, run} as the kernel documents it:
 * seqlock loop, counter offset plus the pmc_width-sign-extended register,
 * time_enabled/running extrapolated with time_offset/mult/shift (and
 * time_cycles/mask). Returns TALLY_SELF_PATH_FAST with @out filled, or the reason
 * the caller must fall back to read() (then @out is untouched).
 */
TALLY_API enum tally_self_path tally_userpage_read(const struct perf_event_mmap_page *pc,
						   struct tally_count *out);

/* Conversion between perf timestamps (sample time, perf clock) and the hardware
 * timestamp counter (TSC / cntvct), from a user page's time_zero/mult/shift. */
struct tally_time_conv {
	uint64_t time_zero;
	uint32_t time_mult;
	uint16_t time_shift;
	bool has_short;		/* cap_user_time_short: counter narrower than 64 bits */
	uint64_t time_cycles;
	uint64_t time_mask;
};

/* Snapshot the conversion from @pc (consistent under its seqlock). 0, or
 * -EOPNOTSUPP when the kernel does not publish cap_user_time_zero (as in most VMs),
 * -EBUSY if the seqlock never settled. */
TALLY_API int tally_userpage_time_conv(const struct perf_event_mmap_page *pc,
				       struct tally_time_conv *conv);
/* Same from @c's page; -ENODATA if it has none. */
TALLY_API int tally_selfmon__time_conv(const struct tally_selfmon *c, struct tally_time_conv *conv);
/* A hardware counter reading -> perf timestamp (ns on the perf clock). */
TALLY_API uint64_t tally_time_conv__to_perf(const struct tally_time_conv *conv, uint64_t cyc);
/* A perf timestamp -> hardware counter reading (the inverse, rounded down). */
TALLY_API uint64_t tally_time_conv__to_cycles(const struct tally_time_conv *conv, uint64_t ts);
/* Read the hardware timestamp counter now (rdtsc / cntvct_el0; 0 elsewhere). */
TALLY_API uint64_t tally_read_timestamp_counter(void);

/*
 * Self-sampling: a sampling event on the calling thread and its ring buffer, read by
 * the process itself (e.g. between phases, or from a loop that polls the fd).
 */
struct tally_selfsample;

/*
 * Open @attr -- a sampling event: sample_period or sample_freq, sample_type as
 * wanted -- on the calling thread (any CPU) and map its ring of @data_pages pages
 * (a power of two) after the user page. The attr is copied; `disabled` is honoured
 * (enable through tally_selfsample__counter). 0 or -errno; -EPERM from the mmap
 * usually means the locked-memory limit (ulimit -l, perf_event_mlock_kb).
 */
TALLY_API int tally_selfsample__open(struct tally_selfsample **out,
				     const struct perf_event_attr *attr, size_t data_pages);
/* Unmap and close. NULL is a no-op. */
TALLY_API void tally_selfsample__delete(struct tally_selfsample *s);
/* The event as a tally_selfmon: enable/disable/reset, read its count, set a signal,
 * refresh, change the period, time conversion from its user page. Owned by @s. */
TALLY_API struct tally_selfmon *tally_selfsample__counter(struct tally_selfsample *s);
/* The ring (statistics: samples, lost, throttling). Owned by @s. */
TALLY_API struct tally_ring *tally_selfsample__ring(struct tally_selfsample *s);
/*
 * The next PERF_RECORD_SAMPLE, decoded with the event's sample_type: returns 1 and
 * fills @out (pointers into the ring, valid until the next call), 0 when the ring
 * holds no further complete sample, or -errno (-EBADMSG: the ring held a damaged
 * record and was reset). Other records (LOST, THROTTLE, ...) are skipped and show up
 * in the ring's statistics. Each call first hands the space read so far back to the
 * kernel.
 */
TALLY_API int tally_selfsample__next(struct tally_selfsample *s, struct tally_sample *out);

#ifdef __cplusplus
}
#endif
#endif
