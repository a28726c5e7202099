/*
 * Annotate shares: where inside each function the samples landed. For every (dso,
 * symbol) with samples, the samples and periods at each address, per event, and the
 * totals perf annotate's percentages divide by (the symbol's own, the event's).
 *
 * Feed it every resolved sample; then list the symbols of an event hottest first and
 * ask for the counts of any address range (an instruction: from its offset to the
 * next instruction's). include/tally/listing.h gives the instructions and source lines
 * to lay the counts against.
 */
#ifndef TALLY_ANNOTATE_H
#define TALLY_ANNOTATE_H

#include <tally/api.h>

#include <stddef.h>
#include <stdint.h>

#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_annotate;
struct tally_annotated;

struct tally_annotate_count {
	uint64_t nr_samples;
	uint64_t period;
};

/* Shares for events 0 .. nr_events-1. 0, -EINVAL (no events), -ENOMEM. */
TALLY_API int tally_annotate__new(struct tally_annotate **out, size_t nr_events);
TALLY_API void tally_annotate__delete(struct tally_annotate *a);

/* One sample of event evidx with its period, resolved to loc. Every sample counts in
 * the event's total; one whose address is inside its symbol (loc->sym, from its start
 * up to start + size) also in that symbol's histogram, at offset dso_addr - start.
 * 0, -EINVAL (evidx out of range), -ENOMEM. */
TALLY_API int tally_annotate__add(struct tally_annotate *a, size_t evidx,
				  const struct tally_addr_loc *loc, uint64_t period);

/* Every sample of event evidx added so far. */
TALLY_API struct tally_annotate_count tally_annotate__event_total(const struct tally_annotate *a,
								  size_t evidx);

/* The symbols with samples of event evidx, hottest first as perf annotate lists them:
 * by period, then dso short name, then symbol name, then address. *out is a malloc'd
 * array of *nr pointers (the caller frees the array, not the symbols, which live as long
 * as a). 0 or -ENOMEM. */
TALLY_API int tally_annotate__symbols(struct tally_annotate *a, size_t evidx,
				      struct tally_annotated ***out, size_t *nr);

TALLY_API struct tally_dso *tally_annotated__dso(const struct tally_annotated *s);
TALLY_API const struct tally_symbol *tally_annotated__symbol(const struct tally_annotated *s);
/* Samples of event evidx inside the symbol. */
TALLY_API struct tally_annotate_count tally_annotated__total(const struct tally_annotated *s,
							     size_t evidx);
/* Samples of event evidx at offsets [from, to) of the symbol. */
TALLY_API struct tally_annotate_count tally_annotated__range(struct tally_annotated *s,
							     size_t evidx, uint64_t from,
							     uint64_t to);

#ifdef __cplusplus
}
#endif
#endif
