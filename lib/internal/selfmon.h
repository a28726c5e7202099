/*
 * Self-monitoring internals shared with the unit tests: the user-page read for a
 * given architecture (so x86 and arm64 rules are both testable on one host), the
 * counter-register extension, and the arch override used to test arm64 opens.
 */
#ifndef TALLY_INTERNAL_SELFMON_H
#define TALLY_INTERNAL_SELFMON_H

#include <stdint.h>
#include <linux/perf_event.h>

#include "tally/selfmon.h"

enum tly_arch {
	TLY_ARCH_OTHER,
	TLY_ARCH_X86,
	TLY_ARCH_ARM64,
};

/* The architecture this library was built for. */
enum tly_arch tly_arch_native(void);

/* tally_userpage_read with the rules of @arch. */
enum tally_self_path tly_userpage__read(const struct perf_event_mmap_page *pc,
					enum tly_arch arch, struct tally_count *out);

/* time_enabled extrapolated to now from the page (cap_user_time): 0, or -EOPNOTSUPP
 * without the capability, -EBUSY if the seqlock never settled. With index 0 only
 * enabled advances (the event is not running on a counter); running is returned
 * as published. */
int tly_userpage__times(const struct perf_event_mmap_page *pc, uint64_t *ena,
			uint64_t *run);

/* A raw counter register of @width bits (1..64) as a signed 64-bit delta, returned
 * as its two's-complement u64: bits above @width are ignored (arm64 leaves them
 * UNKNOWN for 32-bit counters), bit width-1 is the sign (x86 programs -left). */
uint64_t tly_pmc_extend(uint64_t raw, unsigned int width);

/* x * mult >> shift, exact (128-bit intermediate), as the kernel's mul_u64_u32_shr. */
uint64_t tly_mul_u64_u32_shr(uint64_t x, uint32_t mult, unsigned int shift);

/* Tests: make tally_selfmon__open behave as on @arch, reading the arm64 user-access
 * sysctl from @user_access_path (NULL: /proc/sys/kernel/perf_user_access).
 * tly_selfmon__set_arch(tly_arch_native(), NULL) restores the default. */
void tly_selfmon__set_arch(enum tly_arch arch, const char *user_access_path);

#endif
