/*
 * Replays fuzz inputs without libFuzzer: runs the target's LLVMFuzzerTestOneInput on
 * every file named on the command line (directories are walked one level deep).
 * Built with any compiler, so the ASan+UBSan build checks the seed corpus and every
 * regression input on each `make check`. Exit 0 when every input ran, 1 on a read error
 * (a crash is reported by the sanitizer itself).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, unsigned long *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	int err = ferror(f);
	fclose(f);
	if (!buf || err) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, so the sanitizer sees any read past the input. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	(*n)++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			rc = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i], &n) < 0)
				rc = 1;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			rc = 1;
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && run_file(path, &n) < 0)
				rc = 1;
		}
		closedir(d);
	}
	printf("replayed %lu inputs\n", n);
	return rc;
}
