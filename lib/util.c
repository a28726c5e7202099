/*
 * Internal helpers: small file reads, sorted directory listings and a growable buffer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/util.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tly_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int tly_dir_list(const char *path, const char *pat, bool dirs_only, char ***names, size_t *nr)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;

	*names = NULL;
	*nr = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (pat && fnmatch(pat, de->d_name, 0)))
			continue;
		if (dirs_only && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(v, ncap * sizeof(*v));

			if (!nv)
				goto nomem;
			v = nv;
			cap = ncap;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*names = v;
	*nr = n;
	return 0;
nomem:
	closedir(d);
	tly_strv_free(v, n);
	return -ENOMEM;
}

ssize_t tly_read_file_str(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)total < len - 1) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	while (total > 0 && (buf[total - 1] == '\n' || buf[total - 1] == ' '))
		buf[--total] = '\0';
	return total;
}

int tly_read_file_u64(const char *path, uint64_t *val)
{
	char buf[64], *end;
	ssize_t n = tly_read_file_str(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	errno = 0;
	*val = strtoull(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

int tly_read_file_all(const char *path, char **out, size_t *len)
{
	struct tly_buf b = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;
		int err = tly_buf__reserve(&b, 65536);

		if (err) {
			close(fd);
			tly_buf__exit(&b);
			return err;
		}
		n = read(fd, b.data + b.len, b.cap - b.len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			tly_buf__exit(&b);
			return err;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
	}
	close(fd);
	if (tly_buf__reserve(&b, 1)) {
		tly_buf__exit(&b);
		return -ENOMEM;
	}
	b.data[b.len] = '\0';
	*out = b.data;
	if (len)
		*len = b.len;
	return 0;
}

int tly_buf__reserve(struct tly_buf *b, size_t extra)
{
	size_t need, ncap;
	char *n;

	if (__builtin_add_overflow(b->len, extra, &need))
		return -ENOMEM;
	need += 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	n = realloc(b->data, ncap);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = ncap;
	return 0;
}

int tly_buf__append(struct tly_buf *b, const void *data, size_t len)
{
	int err = tly_buf__reserve(b, len);

	if (err)
		return err;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int tly_buf__printf(struct tly_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	err = tly_buf__reserve(b, (size_t)n);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void tly_buf__exit(struct tly_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int tly_open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int tly_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int tly_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char save = *p;

		*p = 0;
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		if (!save)
			break;
		*p = save;
	}
	return 0;
}

void tly_huge_hint(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	uintptr_t page, lo, hi;
	long ps;

	if (!p || n < TLY_HUGE_MIN || (ps = sysconf(_SC_PAGESIZE)) <= 0)
		return;
	page = (uintptr_t)ps;
	/* its pages (the part of a last one beyond it may change pages, never contents) */
	lo = (uintptr_t)p & ~(page - 1);
	hi = ((uintptr_t)p + n + page - 1) & ~(page - 1);
	(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);	/* a hint: its refusal changes nothing */
#else
	(void)p;
	(void)n;
#endif
}

void *tly_malloc_big(size_t n)
{
	void *p;

	if (n < TLY_HUGE_MIN)
		return malloc(n);
	/* aligned, all of it can be huge pages (the alignment costs address space only) */
	if (posix_memalign(&p, TLY_HUGE_MIN, n))
		return NULL;
	tly_huge_hint(p, n);
	return p;
}

void *tly_calloc_big(size_t nmemb, size_t size)
{
	size_t n;
	void *p;

	if (tly_mul_size(nmemb, size, &n))
		return NULL;
	if (n < TLY_HUGE_MIN)
		return calloc(nmemb, size);
	/* hinted before calloc's clearing would touch the pages */
	p = tly_malloc_big(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *tly_realloc_big(void *p, size_t n)
{
	void *q = realloc(p, n);

	tly_huge_hint(q, n);
	return q;
}

int tly_grow_big(void **v, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first, bytes;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		if (tly_mul_size(ncap, 2, &ncap))
			return -ENOMEM;
	if (tly_mul_size(ncap, elem, &bytes) || !(p = tly_realloc_big(*v, bytes)))
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}
