/*
 * Every sample of a perf.data with its call chain resolved, for the commands that turn
 * whole stacks into something else (flamegraph, data convert): opening the file with
 * its session, the --pid/--tid/--comm/-e filters, and the messages at the end (a file
 * cut short, records of unknown type, binaries without symbols).
 *
 * Chains are resolved by the library (tally_session__resolve_chain), so frames it adds
 * (inlined functions, unwound user stacks) reach both commands without change here.
 */
#ifndef TALLY_CLI_SAMPLE_STACKS_H
#define TALLY_CLI_SAMPLE_STACKS_H

#include <stdbool.h>

#include <tally/convert.h>
#include <tally/data.h>
#include <tally/session.h>

#include "report-common.h"

struct stack_walk_opts {
	const char *input;		/* path or "-" */
	bool force;
	const char *kallsyms, *symfs;
	const char *event;		/* -e: only this event's samples (NULL: every event) */
	const char *pids, *tids, *comms;	/* comma lists (NULL: no filter) */
	bool recorded;			/* also each chain as recorded (the samples'
					 * .recorded: for perf's JSON) */
};

struct stack_walk {
	struct stack_walk_opts o;
	struct tally_data *data;
	struct tally_session *session;
	struct tally_frames *frames;	/* the library's resolved chain */
	struct tally_addr_loc *v;	/* the frames handed over, contiguous */
	size_t cap;
	struct tally_addr_loc *rv;	/* the recorded chain (o.recorded) */
	size_t rcap;
	int evidx;			/* -e's event, or -1 */
	long *pids, *tids;
	size_t nr_pids, nr_tids;
	char **comms;
	uint64_t nr_samples;		/* samples handed over */
};

/* Open o->input and its session; prints the error. 0 or exit status 1. */
int stack_walk__open(struct stack_walk *w, const struct stack_walk_opts *o);
void stack_walk__close(struct stack_walk *w);

/* fn gets every sample that passes the filters, resolved (frames valid until it
 * returns); a negative return stops the walk and is returned (for the caller to
 * report). Side-band records go to the session first. 0, that negative value, or 1
 * after printing why the file could not be read to its end. */
typedef int (*stack_fn)(void *arg, const struct tally_convert_sample *s);
int stack_walk__run(struct stack_walk *w, stack_fn fn, void *arg);

#endif
