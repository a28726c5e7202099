/*
 * Output files written through a temporary file and a rename (see out-file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "out-file.h"

int out_file__open(struct out_file *o, const char *path, bool keep_existing)
{
	struct stat st;
	mode_t mask;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!strcmp(path, "-")) {
		o->fp = stdout;
		return 0;
	}
	if (keep_existing && lstat(path, &st) == 0) {
		cli_error("%s: output file exists (use --force to overwrite it)", path);
		return 1;
	}
	if (asprintf(&o->tmp, "%s.XXXXXX", path) < 0) {
		o->tmp = NULL;
		cli_error("out of memory");
		return 1;
	}
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		cli_error("cannot create %s: %s", path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return 1;
	}
	/* what open(path, O_CREAT, 0666) would have made, not mkstemp's 0600 */
	mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	o->fp = fdopen(fd, "w");
	if (!o->fp) {
		cli_error("cannot create %s: %s", path, strerror(errno));
		close(fd);
		out_file__abort(o);
		return 1;
	}
	return 0;
}

int out_file__commit(struct out_file *o)
{
	int err = 0;

	if (!o->tmp)
		return cli_finish_output(o->fp, o->path);
	if (fflush(o->fp) || ferror(o->fp))
		err = errno ? errno : EIO;
	if (fclose(o->fp) && !err)
		err = errno ? errno : EIO;
	o->fp = NULL;
	if (!err && rename(o->tmp, o->path))
		err = errno;
	if (err) {
		cli_error("writing %s failed: %s", o->path, strerror(err));
		out_file__abort(o);
		return 1;
	}
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

void out_file__abort(struct out_file *o)
{
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	o->fp = NULL;
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
}
