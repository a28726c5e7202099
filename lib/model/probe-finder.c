/*
 * Where a probe goes (include/tally/probe.h): perf probe's definitions resolved against
 * a binary's ELF symbols and DWARF (libdw), or against the kernel's symbols.
 *
 * A binary probe ends as a file offset plus fetch arguments in the kernel's syntax.
 * The DWARF walk does what perf 6.1 does, so that the same definition gives the same
 * line in uprobe_events:
 *  - a function's address is its entry (low_pc); when variables are to be read and the
 *    unit was compiled without optimization, the prologue is skipped to the next line
 *    row, where the frame is set up and arguments are in their stack homes;
 *  - FUNC:RL is decl_line + RL, probed at every statement row of that line inside the
 *    function (rows at the entry address excepted: they share it with line 0);
 *  - a variable's location is the one its DWARF gives at the probe's address: a
 *    register, a frame-base offset (the CFA from the call-frame info), a register
 *    offset or a global, and member, arrow and index accesses become nested
 *    dereferences with offsets;
 *  - types: signed integers s<bits>, other scalars x<bits>, arrays none, strings
 *    ":string" on the address of a char array or the value of a char pointer.
 * The walk lives in probe-dwarf.c; this file holds the target, its symbols, and the
 * kernel's side.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/buildid.h>
#include <tally/probe.h>

#include "internal/probe.h"
#include "internal/symbols.h"
#include "internal/util.h"

int tly_probe_err(char *err, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* ---- ELF ---- */

static int sym_cmp(const void *a, const void *b)
{
	const struct tly_probe_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int add_sym(struct tally_probe_finder *f, const char *name, uint64_t addr, uint64_t size,
		   unsigned type, bool defined)
{
	struct tly_probe_sym *s;

	if (f->nr_syms == f->cap_syms) {
		size_t cap = f->cap_syms ? f->cap_syms * 2 : 256;
		struct tly_probe_sym *v = realloc(f->syms, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->syms = v;
		f->cap_syms = cap;
	}
	s = &f->syms[f->nr_syms];
	/* C++ names as perf shows and matches them: demangled, no parameters */
	s->name = tly_demangle(name);
	if (!s->name)
		s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	s->addr = addr;
	s->size = size;
	s->func = type == STT_FUNC || type == STT_GNU_IFUNC;
	s->defined = defined;
	f->nr_syms++;
	return 0;
}

/* Symbols of one table (.symtab, else .dynsym): functions and objects; named, defined
 * ones for lookups, undefined dynamic ones only through the plt names. */
static int load_symtab(struct tally_probe_finder *f, Elf *elf, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 1; data && i < n; i++) {
		GElf_Sym sym;
		const char *name;
		unsigned type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name || type == STT_SECTION || type == STT_FILE || type == STT_TLS)
			continue;
		/* version names (CXXABI_1.3) are absolute: no code or data of the file */
		if (sym.st_shndx == SHN_ABS)
			continue;
		if (add_sym(f, name, sym.st_value, sym.st_size, type,
			    sym.st_shndx != SHN_UNDEF))
			return -ENOMEM;
	}
	return 0;
}

/* NAME@plt for each .rela.plt entry, as perf's symbol loader names plt slots. */
static int load_plt_names(struct tally_probe_finder *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, dsh;
		Elf_Data *data, *dyn;
		Elf_Scn *dscn;
		const char *sname;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || (strcmp(sname, ".rela.plt") && strcmp(sname, ".rel.plt")))
			continue;
		dscn = elf_getscn(elf, sh.sh_link);
		if (!dscn || !gelf_getshdr(dscn, &dsh) || !(dyn = elf_getdata(dscn, NULL)))
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; data && i < n; i++) {
			GElf_Rela rela;
			GElf_Rel rel;
			GElf_Sym sym;
			uint64_t info;
			char name[512];
			const char *sn;

			if (sh.sh_type == SHT_RELA) {
				if (!gelf_getrela(data, (int)i, &rela))
					break;
				info = rela.r_info;
			} else {
				if (!gelf_getrel(data, (int)i, &rel))
					break;
				info = rel.r_info;
			}
			if (!gelf_getsym(dyn, (int)GELF_R_SYM(info), &sym))
				continue;
			sn = elf_strptr(elf, dsh.sh_link, sym.st_name);
			if (!sn || !*sn)
				continue;
			snprintf(name, sizeof(name), "%s@plt", sn);
			if (add_sym(f, name, 0, 0, STT_NOTYPE, false))
				return -ENOMEM;
		}
	}
	return 0;
}

static int load_elf_symbols(struct tally_probe_finder *f, Elf *elf)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	GElf_Shdr sh, dsh;
	bool have_symtab = false;
	int ret;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			ret = load_symtab(f, elf, scn, &sh);
			if (ret)
				return ret;
			have_symtab = true;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dsh = sh;
		}
	}
	if (!have_symtab && dynsym) {
		ret = load_symtab(f, elf, dynsym, &dsh);
		if (ret)
			return ret;
	}
	ret = load_plt_names(f, elf);
	if (ret)
		return ret;
	qsort(f->syms, f->nr_syms, sizeof(*f->syms), sym_cmp);
	return 0;
}

static bool has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size)
			return true;
	return false;
}

static bool has_plt_names(const struct tally_probe_finder *f)
{
	for (size_t i = 0; i < f->nr_syms; i++)
		if (strstr(f->syms[i].name, "@plt"))
			return true;
	return false;
}

static int load_segments(struct tally_probe_finder *f)
{
	size_t n;

	if (elf_getphdrnum(f->elf, &n))
		return 0;
	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			f->segs[f->nr_segs++] = ph;
	}
	return 0;
}

int tly_probe_vaddr_to_offset(const struct tally_probe_finder *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const GElf_Phdr *ph = &f->segs[i];

		if (vaddr >= ph->p_vaddr && vaddr < ph->p_vaddr + ph->p_memsz) {
			*off = vaddr - ph->p_vaddr + ph->p_offset;
			return 0;
		}
	}
	if (!f->nr_segs) {
		*off = vaddr;
		return 0;
	}
	return -ERANGE;
}

int tly_probe_offset_to_vaddr(const struct tally_probe_finder *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const GElf_Phdr *ph = &f->segs[i];

		if ((ph->p_flags & PF_X) && off >= ph->p_offset && off < ph->p_offset + ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	if (!f->nr_segs) {
		*vaddr = off;
		return 0;
	}
	return -ERANGE;
}

const struct tly_probe_sym *tly_probe_sym_at(const struct tally_probe_finder *f, uint64_t addr,
					     bool funcs_only)
{
	const struct tly_probe_sym *best = NULL;

	for (size_t i = 0; i < f->nr_syms; i++) {
		const struct tly_probe_sym *s = &f->syms[i];

		if (s->addr > addr)
			break;
		if (!s->defined || (funcs_only && !s->func))
			continue;
		if (addr < s->addr + (s->size ? s->size : 1))
			best = s;
	}
	return best;
}

/* Separate debuginfo: by build-id under /usr/lib/debug, else .gnu_debuglink beside the
 * binary, in its .debug/ or under /usr/lib/debug. */
static int open_debuginfo(struct tally_probe_finder *f, char *path, size_t len)
{
	struct tally_build_id id;
	char hex[TALLY_BUILD_ID_HEX_SIZE], dir[PATH_MAX], *slash;
	const char *link;
	GElf_Word crc;

	if (!tally_build_id__from_elf(&id, f->path) && id.size) {
		tally_build_id__hex(&id, hex);
		snprintf(path, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (!access(path, R_OK))
			return 0;
	}
	link = dwelf_elf_gnu_debuglink(f->elf, &crc);
	if (!link || strchr(link, '/'))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s", f->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	if ((size_t)snprintf(path, len, "%s/%s", dir, link) < len && strcmp(path, f->path) &&
	    !access(path, R_OK))
		return 0;
	if ((size_t)snprintf(path, len, "%s/.debug/%s", dir, link) < len && !access(path, R_OK))
		return 0;
	if ((size_t)snprintf(path, len, "/usr/lib/debug%s/%s", dir, link) < len &&
	    !access(path, R_OK))
		return 0;
	return -ENOENT;
}

static bool has_debug_info(Dwarf *dw)
{
	Dwarf_Off next;
	size_t hsize;

	return dw && dwarf_nextcu(dw, 0, &next, &hsize, NULL, NULL, NULL) == 0;
}

static void open_dwarf(struct tally_probe_finder *f)
{
	char path[PATH_MAX];

	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (has_debug_info(f->dw))
		return;
	if (f->dw)
		dwarf_end(f->dw);
	f->dw = NULL;
	if (open_debuginfo(f, path, sizeof(path)))
		return;
	f->dfd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->dfd < 0)
		return;
	f->delf = elf_begin(f->dfd, ELF_C_READ_MMAP, NULL);
	if (f->delf)
		f->dw = dwarf_begin_elf(f->delf, DWARF_C_READ, NULL);
	if (!has_debug_info(f->dw)) {
		if (f->dw)
			dwarf_end(f->dw);
		f->dw = NULL;
	}
}

int tally_probe_finder__new_binary(struct tally_probe_finder **out, const char *path)
{
	struct tally_probe_finder *f;
	struct stat st;
	int ret;

	*out = NULL;
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = f->dfd = -1;
	/* /proc/PID/root/...: another mount namespace's file, reached through that process's
	 * root; resolving it would give the path as seen there, not here */
	f->path = !strncmp(path, "/proc/", 6) ? strdup(path) : realpath(path, NULL);
	if (!f->path) {
		ret = -errno;
		goto fail;
	}
	elf_version(EV_CURRENT);
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		ret = -errno;
		goto fail;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		ret = -ENOEXEC;
		goto fail;
	}
	{
		GElf_Ehdr eh;

		if (!gelf_getehdr(f->elf, &eh)) {
			ret = -ENOEXEC;
			goto fail;
		}
		f->machine = eh.e_machine;
		f->is64 = gelf_getclass(f->elf) == ELFCLASS64;
	}
	ret = load_segments(f);
	if (!ret)
		ret = load_elf_symbols(f, f->elf);
	if (ret)
		goto fail;
	open_dwarf(f);
	if (f->delf && has_symtab(f->delf)) {
		/* a debuginfo file's full symbol table (locals too), as perf reads it */
		for (size_t i = 0; i < f->nr_syms; i++)
			free(f->syms[i].name);
		f->nr_syms = 0;
		ret = load_elf_symbols(f, f->delf);
		if (!ret && !has_plt_names(f))
			ret = load_plt_names(f, f->elf);
		if (ret)
			goto fail;
		qsort(f->syms, f->nr_syms, sizeof(*f->syms), sym_cmp);
	}
	*out = f;
	return 0;
fail:
	tally_probe_finder__delete(f);
	return ret;
}

Dwarf_CFI *tly_probe_eh_cfi(struct tally_probe_finder *f)
{
	if (!f->eh_cfi_read && f->elf) {
		f->eh_cfi = dwarf_getcfi_elf(f->elf);
		f->eh_cfi_read = true;
	}
	return f->eh_cfi;
}

void tally_probe_finder__delete(struct tally_probe_finder *f)
{
	if (!f)
		return;
	if (f->eh_cfi)
		dwarf_cfi_end(f->eh_cfi);
	if (f->dw)
		dwarf_end(f->dw);
	if (f->delf)
		elf_end(f->delf);
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	for (size_t i = 0; i < f->nr_syms; i++)
		free(f->syms[i].name);
	free(f->syms);
	free(f->segs);
	free(f->path);
	free(f->kallsyms);
	free(f->module);
	tally_sources__delete(f->src);
	free(f);
}

void tally_probe_finder__no_inlines(struct tally_probe_finder *f)
{
	if (f)
		f->no_inlines = true;
}

const char *tally_probe_finder__path(const struct tally_probe_finder *f)
{
	return f && !f->kernel ? f->path : NULL;
}

bool tally_probe_finder__has_dwarf(struct tally_probe_finder *f)
{
	return f && f->dw;
}

/* ---- the kernel ---- */

int tally_probe_finder__new_kernel(struct tally_probe_finder **out, const char *kallsyms,
				   const char *module)
{
	struct tally_probe_finder *f = calloc(1, sizeof(*f));
	FILE *in;
	char line[1024];

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->kernel = true;
	f->fd = f->dfd = -1;
	f->kallsyms = strdup(kallsyms ? kallsyms : "/proc/kallsyms");
	f->module = module ? strdup(module) : NULL;
	if (!f->kallsyms || (module && !f->module)) {
		tally_probe_finder__delete(f);
		return -ENOMEM;
	}
	in = fopen(f->kallsyms, "re");
	if (!in) {
		int ret = -errno;

		tally_probe_finder__delete(f);
		return ret;
	}
	while (fgets(line, sizeof(line), in)) {
		char name[512], mod[256] = "";
		unsigned long long addr;
		char type;
		int n = sscanf(line, "%llx %c %511s [%255[^]]]", &addr, &type, name, mod);

		if (n < 3)
			continue;
		if (!strcmp(name, "_text") && !mod[0])
			f->text_addr = addr;
		if (module ? strcmp(mod, module) : mod[0] != 0)
			continue;
		if (add_sym(f, name, addr, 0, strchr("tTwW", type) ? STT_FUNC : STT_OBJECT,
			    true)) {
			fclose(in);
			tally_probe_finder__delete(f);
			return -ENOMEM;
		}
	}
	fclose(in);
	qsort(f->syms, f->nr_syms, sizeof(*f->syms), sym_cmp);
	*out = f;
	return 0;
}

/* A kprobe on a kernel function: perf writes _text+OFFSET (one address even when the
 * name is not unique), SYM+0 for a return probe, MOD:SYM+OFF in a module. */
static int kernel_event(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			const struct tly_probe_sym *s, struct tally_probe_event *e)
{
	e->uprobe = false;
	e->retprobe = spec->retprobe;
	if (f->module) {
		e->module = strdup(f->module);
		e->symbol = strdup(s->name);
		e->offset = spec->offset;
	} else if (spec->retprobe || !f->text_addr || !s->addr) {
		e->symbol = strdup(s->name);
		e->offset = spec->offset;
	} else {
		e->symbol = strdup("_text");
		e->offset = s->addr - f->text_addr + spec->offset;
	}
	e->function = strdup(s->name);
	return e->symbol && e->function && (!f->module || e->module) ? 0 : -ENOMEM;
}

static int find_kernel(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
		       struct tally_probe_event **out, size_t *nr, char *err, size_t errlen)
{
	struct tally_probe_event *v = NULL;
	size_t n = 0;

	if (spec->has_address || !spec->function)
		return tly_probe_err(err, errlen, -EINVAL, "kernel probes take a function name "
				     "(FUNC, FUNC+OFF, FUNC%%return)");
	if (tally_probe_spec__needs_dwarf(spec))
		return tly_probe_err(err, errlen, -EOPNOTSUPP, "source lines, lazy patterns and "
				     "variables of the kernel need its debuginfo (a vmlinux with "
				     "DWARF); tally reads only kallsyms: use raw arguments such "
				     "as %%di or +0(%%si):string");
	for (size_t i = 0; i < f->nr_syms; i++) {
		const struct tly_probe_sym *s = &f->syms[i];
		struct tally_probe_event *nv;

		if (!s->func || fnmatch(spec->function, s->name, 0))
			continue;
		/* aliases at the same address: one probe */
		if (n && v[n - 1].function && !strchr(spec->function, '*') &&
		    !strchr(spec->function, '?'))
			break;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			goto nomem;
		v = nv;
		memset(&v[n], 0, sizeof(*v));
		if (kernel_event(f, spec, s, &v[n++]))
			goto nomem;
	}
	if (!n)
		return tly_probe_err(err, errlen, -ENOENT, "Failed to find symbol %s in %s",
				     spec->function, f->module ? f->module : "kernel");
	*out = v;
	*nr = n;
	return 0;
nomem:
	tally_probe_events__free(v, n);
	return -ENOMEM;
}

/* ---- resolution ---- */

/* "(on POINT ...)" as perf prints the user's point: FUNC[@SRC][:RL|+OFF|%return|;PT],
 * @SRC:AL, @SRC for SRC;PT, 0xADDR. */
static char *point_text(const struct tally_probe_spec *s)
{
	struct tly_buf b = { 0 };
	int ret = 0;

	if (s->has_address)
		ret = tly_buf__printf(&b, "0x%" PRIx64, s->address);
	else if (s->function)
		ret = tly_buf__printf(&b, "%s%s%s", s->function, s->file ? "@" : "",
				      s->file ? s->file : "");
	else
		ret = tly_buf__printf(&b, "@%s", s->file);
	if (!ret && s->has_line)
		ret = tly_buf__printf(&b, ":%u", s->line);
	if (!ret && s->offset)
		ret = tly_buf__printf(&b, "+%" PRIu64, s->offset);
	if (!ret && s->retprobe)
		ret = tly_buf__printf(&b, "%%return");
	if (!ret && s->lazy && s->function)
		ret = tly_buf__printf(&b, ";%s", s->lazy);
	if (ret) {
		tly_buf__exit(&b);
		return NULL;
	}
	return b.data;
}

/* ELF-only binaries: functions by symbol, raw arguments only. */
static int find_by_symbols(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			   struct tally_probe_event **out, size_t *nr, char *err, size_t errlen)
{
	struct tally_probe_event *v = NULL;
	size_t n = 0;
	uint64_t last = UINT64_MAX;

	for (size_t i = 0; i < f->nr_syms; i++) {
		const struct tly_probe_sym *s = &f->syms[i];
		struct tally_probe_event *nv;
		uint64_t off;

		if (!s->func || !s->defined || fnmatch(spec->function, s->name, 0) ||
		    s->addr == last)
			continue;
		if (tly_probe_vaddr_to_offset(f, s->addr + spec->offset, &off))
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			goto nomem;
		v = nv;
		memset(&v[n], 0, sizeof(*v));
		v[n].uprobe = true;
		v[n].retprobe = spec->retprobe;
		v[n].offset = off;
		v[n].path = strdup(f->path);
		v[n].function = strdup(s->name);
		if (!v[n++].path || !v[n - 1].function)
			goto nomem;
		last = s->addr;
	}
	if (!n) {
		free(v);
		return tly_probe_err(err, errlen, -ENOENT, "Probe point '%s' not found.",
				     spec->text);
	}
	*out = v;
	*nr = n;
	return 0;
nomem:
	tally_probe_events__free(v, n);
	return -ENOMEM;
}

/* The raw arguments (and $retval) of spec, as the kernel takes them. */
int tly_probe_raw_arg(const struct tally_probe_arg *a, struct tly_buf *b)
{
	return tly_buf__printf(b, "%s%s%s%s%s", a->name ? a->name : "", a->name ? "=" : "",
			       a->expr, a->type ? ":" : "", a->type ? a->type : "");
}

static int add_raw_args(struct tally_probe_event *e, const struct tally_probe_spec *spec)
{
	for (size_t i = 0; i < spec->nr_args; i++) {
		struct tly_buf b = { 0 };
		char **v;

		if (tly_probe_raw_arg(&spec->args[i], &b))
			goto nomem;
		v = realloc(e->args, (e->nr_args + 1) * sizeof(*v));
		if (!v) {
			tly_buf__exit(&b);
			goto nomem;
		}
		e->args = v;
		v[e->nr_args++] = b.data;
	}
	return 0;
nomem:
	return -ENOMEM;
}

/* "with ..." of perf's messages: each argument as the user wrote it. */
static int describe_args(struct tally_probe_event *e, const struct tally_probe_spec *spec)
{
	struct tly_buf b = { 0 };

	for (size_t i = 0; i < spec->nr_args; i++) {
		const struct tally_probe_arg *a = &spec->args[i];
		char derived[256] = "";

		if (!a->name && !a->raw)
			tly_probe_field_name(a->expr, derived, sizeof(derived));
		if (tly_buf__printf(&b, "%s%s%s%s%s%s%s", i ? " " : "",
				    a->name ? a->name : derived, a->name || derived[0] ? "=" : "",
				    a->expr, a->type ? ":" : "", a->type ? a->type : "", ""))
			goto nomem;
	}
	free(e->arg_desc);
	e->arg_desc = b.data;
	return 0;
nomem:
	tly_buf__exit(&b);
	return -ENOMEM;
}

int tally_probe_finder__find(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			     struct tally_probe_event **out, size_t *nr, char *err, size_t errlen,
			     char *note, size_t notelen)
{
	struct tally_probe_event *v = NULL;
	size_t n = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	if (note && notelen)
		note[0] = 0;
	if (err && errlen)
		err[0] = 0;
	if (f->kernel)
		ret = find_kernel(f, spec, &v, &n, err, errlen);
	else if (!f->dw && tally_probe_spec__needs_dwarf(spec))
		ret = tly_probe_err(err, errlen, -ENODATA, "The %s file has no debug information.\n"
				    "Rebuild with -g, or install an appropriate debuginfo package.",
				    f->path);
	else if (spec->has_address)
		ret = tly_probe_find_address(f, spec, &v, &n, err, errlen);
	else if (f->dw) {
		ret = tly_probe_find_dwarf(f, spec, &v, &n, err, errlen, note, notelen);
		/* a name only the symbol table has (a compiler's clone "work.constprop.0") */
		if (ret == -ENOENT && spec->function && !tally_probe_spec__needs_dwarf(spec))
			ret = find_by_symbols(f, spec, &v, &n, err, errlen);
	} else
		ret = find_by_symbols(f, spec, &v, &n, err, errlen);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].point && !(v[i].point = point_text(spec)))
			goto nomem;
		if (!v[i].nr_args && !tally_probe_spec__needs_dwarf(spec) &&
		    add_raw_args(&v[i], spec))
			goto nomem;
		if (describe_args(&v[i], spec))
			goto nomem;
	}
	*out = v;
	*nr = n;
	return 0;
nomem:
	tally_probe_events__free(v, n);
	return -ENOMEM;
}

/* ---- -F ---- */

/*
 * perf's symbol filters: OR of ANDs of optionally negated globs, with parentheses:
 *   expr := term ('|' term)*     term := factor ('&' factor)*
 *   factor := '!' factor | '(' expr ')' | GLOB
 */
struct filter {
	const char *p;
	bool bad;
};

static bool filter_expr(struct filter *fl, const char *name);

static void filter_blanks(struct filter *fl)
{
	while (*fl->p == ' ' || *fl->p == '\t')
		fl->p++;
}

static bool filter_factor(struct filter *fl, const char *name)
{
	char glob[512];
	size_t n;

	filter_blanks(fl);
	if (*fl->p == '!') {
		fl->p++;
		return !filter_factor(fl, name);
	}
	if (*fl->p == '(') {
		bool v;

		fl->p++;
		v = filter_expr(fl, name);
		filter_blanks(fl);
		if (*fl->p != ')')
			fl->bad = true;
		else
			fl->p++;
		return v;
	}
	n = strcspn(fl->p, "&|() \t");
	if (!n || n >= sizeof(glob)) {
		fl->bad = true;
		return false;
	}
	memcpy(glob, fl->p, n);
	glob[n] = 0;
	fl->p += n;
	return fnmatch(glob, name, 0) == 0;
}

static bool filter_term(struct filter *fl, const char *name)
{
	bool v = filter_factor(fl, name);

	for (filter_blanks(fl); *fl->p == '&'; filter_blanks(fl)) {
		fl->p++;
		v = filter_factor(fl, name) && v;
	}
	return v;
}

static bool filter_expr(struct filter *fl, const char *name)
{
	bool v = filter_term(fl, name);

	for (filter_blanks(fl); *fl->p == '|'; filter_blanks(fl)) {
		fl->p++;
		v = filter_term(fl, name) || v;
	}
	return v;
}

/* 1 match, 0 no match, -EINVAL when the filter does not parse. */
static int filter_match(const char *filter, const char *name)
{
	struct filter fl = { .p = filter };
	bool v = filter_expr(&fl, name);

	filter_blanks(&fl);
	if (fl.bad || *fl.p)
		return -EINVAL;
	return v;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tally_probe_finder__funcs(struct tally_probe_finder *f, const char *filter,
			      tally_probe_func_fn fn, void *arg)
{
	char **names = calloc(f->nr_syms ? f->nr_syms : 1, sizeof(*names));
	size_t n = 0;
	int ret = 0;

	if (!names)
		return -ENOMEM;
	if (!filter)
		filter = "!_* & !*@plt";
	if (filter_match(filter, "") < 0) {
		free(names);
		return -EINVAL;
	}
	for (size_t i = 0; i < f->nr_syms; i++) {
		const struct tly_probe_sym *s = &f->syms[i];

		/* the binary's own symbols (defined, or its plt slots) */
		if (!s->defined && !strstr(s->name, "@plt"))
			continue;
		if (f->kernel && !s->func)
			continue;
		if (filter_match(filter, s->name) == 1)
			names[n++] = s->name;
	}
	qsort(names, n, sizeof(*names), str_cmp);
	for (size_t i = 0; i < n && !ret; i++)
		ret = fn(arg, names[i]);
	free(names);
	return ret;
}
