/*
 * Fuzz target: the perf.data reader (lib/format/data.c) on whole files, file or pipe layout as
 * the input says, through tally_data__open_mem; every record is decoded (data-walk.h).
 * Seeds: perf 6.1 files in corpus/data (file mode, -z, two events, pipe).
 */
#include <stdlib.h>

#include "data-walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	walk_data(data, size);
	return 0;
}
