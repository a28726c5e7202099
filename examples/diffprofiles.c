/*
 * diffprofiles: what changed between two perf.data files, through libtally's profiles
 * and diff (tally/diff.h): the ten rows of the first event whose share moved most, with
 * the old share and the change, as `perf diff OLD NEW` orders them.
 *
 *   diffprofiles OLD NEW
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tally/tally.h>

static struct tally_profile *load(const char *path)
{
	struct tally_data_error err = { 0 };
	struct tally_profile *p;
	int ret = tally_profile__load(&p, path, NULL, &err);

	if (ret)
		fprintf(stderr, "diffprofiles: %s: %s\n", path, err.msg[0] ? err.msg : strerror(-ret));
	return ret ? NULL : p;
}

int main(int argc, char **argv)
{
	struct tally_profile *files[2] = { NULL, NULL };
	struct tally_diff *d = NULL;
	int status = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: diffprofiles OLD NEW\n");
		return 2;
	}
	if (!(files[0] = load(argv[1])) || !(files[1] = load(argv[2])))
		goto out;
	if (tally_profile__nr_events(files[0]) == 0 || tally_diff__new(&d, files, 2, 0, NULL)) {
		fprintf(stderr, "diffprofiles: %s has no event to compare\n", argv[1]);
		goto out;
	}
	for (size_t i = 0; i < tally_diff__nr_rows(d) && i < 10; i++) {
		const struct tally_diff_row *r = tally_diff__row(d, i);

		printf("%7.2f%%  %+7.2f%%  %s  ", r->cells[0].percent, r->cells[1].delta,
		       r->dso ? r->dso : "[unknown]");
		if (r->sym)	/* else the dso's samples without a symbol: its lowest address */
			printf("%s\n", r->sym);
		else
			printf("0x%016" PRIx64 "\n", r->ip);
	}
	status = 0;
out:
	tally_diff__delete(d);
	tally_profile__delete(files[0]);
	tally_profile__delete(files[1]);
	return status;
}
