/*
 * The library version, from the build (meson project version).
 */
#include "tally/tally.h"
#include "tally-config.h"

const char *tally_version(void)
{
	return TALLY_VERSION;
}
