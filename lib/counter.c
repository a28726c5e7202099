/*
 * Counting events on targets, and scaling multiplexed counts (include/tally/counter.h).
 */
#include "tally/counter.h"

uint64_t tally_scale(uint64_t val, uint64_t ena, uint64_t run)
{
	unsigned __int128 r;

	if (run == 0)
		return 0;
	if (run >= ena)
		return val;
	r = (unsigned __int128)val * ena / run;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}
