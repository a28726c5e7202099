/*
 * Build-ids, perf's config, the build-id cache (adding, finding, listing, removing, and
 * the checks that keep a damaged entry from being used), the tar writer and jitdump
 * files: the library's side of tally's build-id commands, on files made here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <tally/buildid-cache.h>
#include <tally/jitdump.h>
#include <tally/perfconfig.h>
#include "internal/symbols.h"
#include "internal/tar.h"

static char tmpdir[64];

static int make_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tally-bidtest.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	assert_true(n > 0);
	buf[n] = 0;
}

static void ids(void **state)
{
	struct tally_build_id a, b;
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	char exe[PATH_MAX];
	(void)state;

	assert_int_equal(tally_build_id__parse(&a, "00ff10Ab", 8), 0);
	assert_int_equal(a.size, 4);
	assert_string_equal(tally_build_id__hex(&a, hex), "00ff10ab");
	assert_int_equal(tally_build_id__parse(&a, "abc", 3), -EINVAL);
	assert_int_equal(tally_build_id__parse(&a, "zz", 2), -EINVAL);
	tally_build_id__set(&b, (const uint8_t *)"\x00\xff\x10\xab", 4);
	assert_int_equal(tally_build_id__parse(&a, "00ff10ab", 8), 0);
	assert_true(tally_build_id__equal(&a, &b));
	b.size = 3;
	assert_false(tally_build_id__equal(&a, &b));
	self_exe(exe, sizeof(exe));
	if (tally_build_id__from_elf(&a, exe))
		skip();		/* linked without a build-id */
	assert_true(a.size >= 16);
	assert_int_equal(tally_build_id__from_elf(&a, "/nonexistent"), -ENOENT);
	assert_int_equal(mkfifo("/tmp/tally-bidtest-fifo", 0600), 0);
	assert_int_equal(tally_build_id__from_elf(&a, "/tmp/tally-bidtest-fifo"), -ENOENT);
	unlink("/tmp/tally-bidtest-fifo");
	write_text("/tmp/tally-bidtest-text", "not an ELF file\n");
	assert_int_equal(tally_build_id__from_elf(&a, "/tmp/tally-bidtest-text"), -ENOEXEC);
	unlink("/tmp/tally-bidtest-text");
}

static void perf_config(void **state)
{
	char path[PATH_MAX], v[64];
	(void)state;

	snprintf(path, sizeof(path), "%s/perfconfig", tmpdir);
	write_text(path, "# a comment\n[buildid]\n\tdir = \"/a b\" ; trailing\n"
			 "[Record]\n\tBuild-Id = no-cache\n[report \"sub\"]\n\tflag\n"
			 "[buildid]\n\tdir = /later\n!bad line\n[x]\ny = z\n");
	setenv("PERF_CONFIG", path, 1);
	assert_int_equal(tally_perf_config_get("buildid.dir", v, sizeof(v)), 0);
	assert_string_equal(v, "/later");	/* the later setting wins */
	assert_int_equal(tally_perf_config_get("record.build-id", v, sizeof(v)), 0);
	assert_string_equal(v, "no-cache");
	assert_int_equal(tally_perf_config_get("report.sub.flag", v, sizeof(v)), 0);
	assert_string_equal(v, "true");
	/* reading stops at the bad line, as in perf */
	assert_int_equal(tally_perf_config_get("x.y", v, sizeof(v)), -ENOENT);
	assert_int_equal(tally_perf_config_get("buildid.dir", v, 3), -ENAMETOOLONG);
	write_text(path, "[buildid]\n\tdir = \"/a  b\" # c\n");
	assert_int_equal(tally_perf_config_get("buildid.dir", v, sizeof(v)), 0);
	assert_string_equal(v, "/a  b");
	unsetenv("PERF_CONFIG");
}

struct listed {
	int n;
	char name[PATH_MAX];
	bool current;
};

static int list_fn(void *arg, const struct tally_buildid_cache_entry *e)
{
	struct listed *l = arg;

	l->n++;
	snprintf(l->name, sizeof(l->name), "%s", e->name ? e->name : "");
	l->current = tally_buildid_cache__entry_current(e);
	return 0;
}

static void cache(void **state)
{
	char exe[PATH_MAX], dir[PATH_MAX], path[PATH_MAX], why[2 * PATH_MAX + 256], copy[3 * PATH_MAX];
	char hex[TALLY_BUILD_ID_HEX_SIZE], link[PATH_MAX + 64], rmcmd[2 * PATH_MAX + 64];
	struct tally_buildid_cache *c;
	struct tally_build_id id, other;
	struct listed l = { 0 };
	struct stat st;
	(void)state;

	self_exe(exe, sizeof(exe));
	if (tally_build_id__from_elf(&id, exe))
		skip();
	tally_build_id__hex(&id, hex);
	snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
	assert_int_equal(tally_buildid_cache__new(&c, dir), 0);
	assert_string_equal(tally_buildid_cache__dir(c), dir);
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), -ENOENT);
	assert_int_equal(tally_buildid_cache__add_file(c, exe, &id), 0);
	assert_true(tally_buildid_cache__has(c, &id));
	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), 0);
	assert_string_equal(why, "");
	snprintf(copy, sizeof(copy), "%s%s/%s/elf", dir, exe, hex);
	assert_string_equal(path, copy);
	assert_int_equal(tally_buildid_cache__for_each(c, list_fn, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.name, exe);
	assert_true(l.current);
	/* another id: the file is not cached under it */
	other = id;
	other.data[0] ^= 0xff;
	assert_int_equal(tally_buildid_cache__add_file(c, exe, &other), -ESTALE);

	/* a copy cut short: found, refused, said why */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size / 2), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), -EBADF);
	assert_non_null(strstr(why, "cut short"));
	/* another file in its place: refused (not the id asked for) */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), -EBADF);
	assert_int_equal(tally_buildid_cache__remove(c, &id), 0);
	assert_false(tally_buildid_cache__has(c, &id));
	assert_int_equal(tally_buildid_cache__remove(c, &id), -ENOENT);

	/* a dangling link */
	assert_int_equal(tally_buildid_cache__add_file(c, exe, NULL), 0);
	snprintf(rmcmd, sizeof(rmcmd), "rm -rf '%s%s'", dir, exe);
	assert_int_equal(system(rmcmd), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), -EBADF);
	assert_non_null(strstr(why, "dangling link"));
	/* adding again repairs it */
	assert_int_equal(tally_buildid_cache__add_file(c, exe, NULL), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, exe, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), 0);
	/* a link out of the cache is never followed, nor removed through */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("../../../../../../etc", link), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, NULL, TALLY_BUILDID_ELF, path,
						   sizeof(path), why, sizeof(why)), -EBADF);
	assert_non_null(strstr(why, "outside the cache"));
	assert_int_equal(tally_buildid_cache__remove(c, &id), 0);
	assert_int_equal(access("/etc/passwd", F_OK), 0);

	/* purging a path, purging all */
	assert_int_equal(tally_buildid_cache__add_file(c, exe, NULL), 0);
	assert_int_equal(tally_buildid_cache__purge(c, exe), 1);
	assert_int_equal(tally_buildid_cache__purge(c, exe), -ENOENT);
	assert_int_equal(tally_buildid_cache__add_file(c, exe, NULL), 0);
	assert_int_equal(tally_buildid_cache__purge_all(c), 1);
	l.n = 0;
	assert_int_equal(tally_buildid_cache__for_each(c, list_fn, &l), 0);
	assert_int_equal(l.n, 0);
	tally_buildid_cache__delete(c);
	tally_buildid_cache__delete(NULL);
}

static void kallsyms_copies(void **state)
{
	char dir[PATH_MAX], src[PATH_MAX], path[PATH_MAX], why[2 * PATH_MAX + 256];
	struct tally_buildid_cache *c;
	struct tally_build_id id;
	struct tly_symtab t = { 0 };
	(void)state;

	snprintf(dir, sizeof(dir), "%s/kcache", tmpdir);
	snprintf(src, sizeof(src), "%s/kallsyms", tmpdir);
	assert_int_equal(tally_build_id__parse(&id, "0123456789abcdef0123456789abcdef01234567", 40), 0);
	assert_int_equal(tally_buildid_cache__new(&c, dir), 0);
	write_text(src, "0000000000000000 T a\n0000000000000000 T b\n");
	assert_int_equal(tally_buildid_cache__add_kallsyms(c, &id, src), -EPERM);
	assert_false(tally_buildid_cache__has(c, &id));
	write_text(src, "ffffffff81000000 T _text\nffffffff81000010 T f\n");
	assert_int_equal(tally_buildid_cache__add_kallsyms(c, &id, src), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, NULL, TALLY_BUILDID_KALLSYMS, path,
						   sizeof(path), why, sizeof(why)), 0);
	assert_int_equal(tly_symtab__load_kallsyms(&t, path), 0);
	assert_int_equal(t.nr, 2);
	tly_symtab__exit(&t);
	/* cut in the middle of a line */
	assert_int_equal(truncate(path, 30), 0);
	assert_int_equal(tally_buildid_cache__find(c, &id, NULL, TALLY_BUILDID_KALLSYMS, path,
						   sizeof(path), why, sizeof(why)), -EBADF);
	assert_non_null(strstr(why, "cut short"));
	tally_buildid_cache__delete(c);
}

/* A jitdump with one function loaded, moved, described, closed. */
static void write_dump(const char *path, const uint8_t *code, size_t size)
{
	FILE *f = fopen(path, "w");
	uint32_t h32[6] = { 0x4A695444, 1, 40, 62, 0, 4242 };
	uint64_t h64[2] = { 1000, 0 };
	uint32_t ids[2] = { 4242, 4243 };
	uint64_t load[4] = { 0x7000, 0x7000, size, 7 };
	uint64_t move[5] = { 0x9000, 0x7000, 0x9000, size, 7 };
	uint32_t pre[2];
	uint64_t ts = 2000;

	assert_non_null(f);
	fwrite(h32, 4, 6, f);
	fwrite(h64, 8, 2, f);
	pre[0] = 0;
	pre[1] = (uint32_t)(16 + 8 + 32 + 6 + size);
	fwrite(pre, 4, 2, f);
	fwrite(&ts, 8, 1, f);
	fwrite(ids, 4, 2, f);
	fwrite(load, 8, 4, f);
	fwrite("jfunc", 1, 6, f);
	fwrite(code, 1, size, f);
	pre[0] = 1;
	pre[1] = 16 + 8 + 40;
	fwrite(pre, 4, 2, f);
	fwrite(&ts, 8, 1, f);
	fwrite(ids, 4, 2, f);
	fwrite(move, 8, 5, f);
	pre[0] = 3;
	pre[1] = 16;
	fwrite(pre, 4, 2, f);
	fwrite(&ts, 8, 1, f);
	pre[0] = 0;		/* a record the runtime was still writing: the end */
	pre[1] = 400;
	fwrite(pre, 4, 2, f);
	fwrite(&ts, 8, 1, f);
	fclose(f);
}

static void jitdump(void **state)
{
	static const uint8_t code[] = { 0x48, 0x31, 0xc0, 0xc3 };
	char path[PATH_MAX], elf[PATH_MAX];
	struct tally_jitdump *j;
	struct tally_jit_record r;
	struct tally_build_id id, read_back;
	struct tly_symtab t = { 0 };
	(void)state;

	assert_true(tally_jitdump__is_marker("/tmp/x/jit-4242.dump", 4242));
	assert_true(tally_jitdump__is_marker("/tmp/x/jit-4242.dump", 0));
	assert_false(tally_jitdump__is_marker("/tmp/x/jit-4242.dump", 1));
	assert_false(tally_jitdump__is_marker("/tmp/x/jit-4242.dumpx", 4242));
	assert_false(tally_jitdump__is_marker("jit-4242.dump", 4242));
	assert_false(tally_jitdump__is_marker("/tmp/x/jit-.dump", 0));

	snprintf(path, sizeof(path), "%s/jit-4242.dump", tmpdir);
	write_dump(path, code, sizeof(code));
	assert_int_equal(tally_jitdump__open(&j, path), 0);
	assert_int_equal(tally_jitdump__pid(j), 4242);
	assert_int_equal(tally_jitdump__elf_mach(j), 62);
	assert_int_equal(tally_jitdump__next(j, &r), 1);
	assert_int_equal(r.type, TALLY_JIT_CODE_LOAD);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(r.tid, 4243);
	assert_int_equal(r.code_addr, 0x7000);
	assert_int_equal(r.code_size, sizeof(code));
	assert_int_equal(r.code_index, 7);
	assert_string_equal(r.name, "jfunc");
	assert_memory_equal(r.code, code, sizeof(code));
	snprintf(elf, sizeof(elf), "%s/jitted-4242-7.so", tmpdir);
	assert_int_equal(tally_jitdump__write_elf(elf, &r, 62, &id), 0);
	assert_int_equal(tally_build_id__from_elf(&read_back, elf), 0);
	assert_true(tally_build_id__equal(&id, &read_back));
	assert_int_equal(tly_symtab__load_elf(&t, elf, NULL), 0);
	assert_int_equal(t.nr, 1);
	assert_string_equal(t.syms[0].name, "jfunc");
	assert_int_equal(t.syms[0].start, TALLY_JIT_ELF_TEXT_OFFSET);
	assert_int_equal(t.syms[0].size, sizeof(code));
	tly_symtab__exit(&t);
	/* the same function again: the same file (the id is the code's, not random) */
	assert_int_equal(tally_jitdump__write_elf(elf, &r, 62, &read_back), 0);
	assert_true(tally_build_id__equal(&id, &read_back));
	assert_int_equal(tally_jitdump__next(j, &r), 1);
	assert_int_equal(r.type, TALLY_JIT_CODE_MOVE);
	assert_int_equal(r.old_code_addr, 0x7000);
	assert_int_equal(r.code_addr, 0x9000);
	assert_int_equal(r.code_index, 7);
	assert_int_equal(tally_jitdump__next(j, &r), 1);
	assert_int_equal(r.type, TALLY_JIT_CODE_CLOSE);
	assert_int_equal(tally_jitdump__next(j, &r), 0);	/* cut short: the end */
	tally_jitdump__delete(j);

	write_text(path, "not a jitdump, but long enough to have a header of its own.\n");
	assert_int_equal(tally_jitdump__open(&j, path), -EINVAL);
	assert_int_equal(tally_jitdump__open(&j, "/nonexistent/jit-1.dump"), -ENOENT);
	tally_jitdump__delete(NULL);
}

static void tar_writer(void **state)
{
	char path[PATH_MAX], cmd[3 * PATH_MAX], name[300], target[300];
	struct tly_tar *t;
	int fd, data;
	(void)state;

	if (system("tar --version >/dev/null 2>&1 && bzip2 --help >/dev/null 2>&1"))
		skip();
	snprintf(path, sizeof(path), "%s/t.tar.bz2", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	data = open("/proc/self/exe", O_RDONLY);
	assert_true(data >= 0);
	assert_int_equal(tly_tar__open(&t, fd, true), 0);
	/* names past ustar's 100 and 155+100, a link target past 100 */
	memset(name, 'n', sizeof(name));
	memcpy(name, "dir/", 4);
	name[150] = '/';
	name[299] = 0;
	memset(target, 't', sizeof(target));
	target[250] = 0;
	assert_int_equal(tly_tar__add_dir(t, "dir", 0755, 0), 0);
	assert_int_equal(tly_tar__add_file(t, name, data, 1000, 0644, 0), 0);
	assert_int_equal(tly_tar__add_file(t, "dir/short", data, 0, 0644, 0), 0);
	assert_int_equal(tly_tar__add_symlink(t, "dir/link", target, 0), 0);
	assert_int_equal(tly_tar__add_file(t, "dir/too-long", data, UINT64_MAX / 2, 0644, 0), -EFBIG);
	tly_tar__delete(t);
	close(fd);
	/* the error stays: a new archive for the checks */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(tly_tar__open(&t, fd, true), 0);
	assert_int_equal(tly_tar__add_dir(t, "dir", 0755, 0), 0);
	assert_int_equal(tly_tar__add_file(t, name, data, 1000, 0644, 0), 0);
	assert_int_equal(tly_tar__add_symlink(t, "dir/link", target, 0), 0);
	assert_int_equal(tly_tar__finish(t), 0);
	tly_tar__delete(t);
	close(fd);
	close(data);
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir x && tar xjf t.tar.bz2 -C x && "
		 "test \"$(wc -c <'x/%s')\" -eq 1000 && test \"$(readlink x/dir/link)\" = '%s'",
		 tmpdir, name, target);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ids),
		cmocka_unit_test(perf_config),
		cmocka_unit_test(cache),
		cmocka_unit_test(kallsyms_copies),
		cmocka_unit_test(jitdump),
		cmocka_unit_test(tar_writer),
	};

	return cmocka_run_group_tests(tests, make_tmp, rm_tmp);
}
