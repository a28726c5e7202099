/*
 * Output files that are never left half-written: the output goes to a temporary file
 * beside the target, which is renamed into place only once everything reached it, so a
 * failed or interrupted run leaves the old file (or none), never a truncated one that
 * looks complete. "-" writes to standard output instead.
 */
#ifndef TALLY_CLI_OUT_FILE_H
#define TALLY_CLI_OUT_FILE_H

#include <stdbool.h>
#include <stdio.h>

struct out_file {
	const char *path;	/* the target, as given */
	char *tmp;		/* the temporary file (NULL for standard output) */
	FILE *fp;		/* write here */
};

/* Start writing path. keep_existing: refuse when it exists (perf data convert's rule
 * without --force). Prints the error. 0 or 1. */
int out_file__open(struct out_file *o, const char *path, bool keep_existing);
/* Everything is written: flush and check it, then rename it into place. Prints the
 * error (naming the file) and removes the temporary file on failure. 0 or 1. */
int out_file__commit(struct out_file *o);
/* Give up: remove the temporary file (nothing if none or already committed). */
void out_file__abort(struct out_file *o);

#endif
