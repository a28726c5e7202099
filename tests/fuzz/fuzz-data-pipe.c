/*
 * Fuzz target: the perf.data reader on pipe streams (`perf record -o -`). The input is
 * the stream after the 16-byte pipe header, which is always supplied, so every byte the
 * fuzzer mutates lands in records: HEADER_ATTR, HEADER_FEATURE, TRACING_DATA, COMPRESSED…
 */
#include <stdlib.h>

#include "data-walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t pipe_hdr[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	/* An input that already starts with the pipe header is used as is (seed files). */
	if (size >= 16 && memcmp(data, pipe_hdr, 16) == 0) {
		walk_data(data, size);
		return 0;
	}
	uint8_t *buf = malloc(size + 16);
	if (!buf)
		return 0;
	memcpy(buf, pipe_hdr, 16);
	memcpy(buf + 16, data, size);
	walk_data(buf, size + 16);
	free(buf);
	return 0;
}
