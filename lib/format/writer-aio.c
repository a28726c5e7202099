/*
 * The writer's POSIX AIO data path (tally_writer_opts.aio, perf record --aio): up to 4
 * buffers of whole records in flight at their file offsets while the caller fills the
 * next one. Blocks are reaped oldest first, so the bytes reported done are always the
 * data section's contiguous prefix (what a write error leaves is exactly that), and a
 * short write is finished with pwrite.
 */
#include <aio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/writer.h"

struct tly_aio {
	int fd;
	unsigned nr;		/* control blocks */
	unsigned head, busy;	/* oldest in flight, how many */
	struct aiocb cb[TLY_AIO_MAX];
	unsigned char *buf[TLY_AIO_MAX];	/* the buffer each block owns when idle */
	int error;		/* the first failure, sticky */
};

int tly_aio__new(struct tly_aio **out, int fd, unsigned nr, size_t size)
{
	struct tly_aio *a;

	*out = NULL;
	if (!nr || nr > TLY_AIO_MAX)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = fd;
	a->nr = nr;
	for (unsigned i = 0; i < nr; i++)
		if (!(a->buf[i] = malloc(size))) {
			tly_aio__delete(a);
			return -ENOMEM;
		}
	*out = a;
	return 0;
}

/* Wait for the oldest block; its bytes go to *done unless a block failed. */
static void reap_oldest(struct tly_aio *a, uint64_t *done)
{
	struct aiocb *cb = &a->cb[a->head];
	const struct aiocb *list[1] = { cb };
	size_t len = cb->aio_nbytes, off = 0;
	ssize_t n;
	int err;

	while ((err = aio_error(cb)) == EINPROGRESS)
		aio_suspend(list, 1, NULL);
	n = aio_return(cb);
	if (!err && n >= 0) {
		/* a short write: the rest synchronously, at its place */
		for (off = (size_t)n; off < len; off += (size_t)n) {
			n = pwrite(a->fd, (const char *)cb->aio_buf + off, len - off,
				   cb->aio_offset + (off_t)off);
			if (n < 0 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0) {
				err = n < 0 ? errno : EIO;
				break;
			}
		}
	}
	if (err && !a->error)
		a->error = -err;
	if (!a->error)
		*done += len;
	a->head = (a->head + 1) % a->nr;
	a->busy--;
}

int tly_aio__write(struct tly_aio *a, unsigned char **buf, size_t len, uint64_t off,
		   uint64_t *done)
{
	unsigned slot;
	unsigned char *mine;

	if (a->busy == a->nr)
		reap_oldest(a, done);
	if (a->error)
		return a->error;
	slot = (a->head + a->busy) % a->nr;
	/* the block takes the filled buffer; the caller gets the block's idle one */
	mine = a->buf[slot];
	a->buf[slot] = *buf;
	*buf = mine;
	memset(&a->cb[slot], 0, sizeof(a->cb[slot]));
	a->cb[slot].aio_fildes = a->fd;
	a->cb[slot].aio_buf = a->buf[slot];
	a->cb[slot].aio_nbytes = len;
	a->cb[slot].aio_offset = (off_t)off;
	a->cb[slot].aio_sigevent.sigev_notify = SIGEV_NONE;
	if (aio_write(&a->cb[slot])) {
		a->error = -errno;
		return a->error;
	}
	a->busy++;
	return 0;
}

int tly_aio__wait(struct tly_aio *a, uint64_t *done)
{
	while (a->busy)
		reap_oldest(a, done);
	return a->error;
}

void tly_aio__delete(struct tly_aio *a)
{
	uint64_t done = 0;

	if (!a)
		return;
	tly_aio__wait(a, &done);
	for (unsigned i = 0; i < a->nr; i++)
		free(a->buf[i]);
	free(a);
}
