/*
 * Variables for probes (see probe-finder.c for perf's rules): a C expression at an
 * address -- a variable found in the scopes there, then ->, . and [] steps -- becomes
 * a fetch argument in the kernel's syntax, and -V lists what can be read where.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "internal/probe.h"

/* ---- variables ---- */

/* Where a value is: a register, memory at BASE+OFF (BASE a fetch giving an address), or
 * a global at SYM+OFF. */
struct obj {
	enum { O_REG, O_MEM, O_GLOBAL } kind;
	const char *reg;
	char base[512];
	int64_t off;
	char sym[256];
	Dwarf_Die type;
	bool has_type;
	int bit_size, bit_off, bit_container;
};

static void obj_fetch(const struct obj *o, char *buf, size_t len)
{
	switch (o->kind) {
	case O_REG:
		snprintf(buf, len, "%s", o->reg);
		break;
	case O_MEM:
		snprintf(buf, len, "%+" PRId64 "(%s)", o->off, o->base);
		break;
	case O_GLOBAL:
		if (o->sym[0])
			snprintf(buf, len, "@%s%+" PRId64, o->sym, o->off);
		else
			snprintf(buf, len, "@0x%" PRIx64, (uint64_t)o->off);
		break;
	}
}

struct arg_ctx {
	struct tally_probe_finder *f;
	Dwarf_Die *scopes;
	int nscopes;
	uint64_t addr;
	char *err;
	size_t errlen;
	Dwarf_Die *cur_scope;	/* for_each_var: the scope of the variable it passes */
};

/* The frame base of the innermost concrete function at addr, as register + offset. */
static int frame_base(struct arg_ctx *c, const char **reg, int64_t *off)
{
	Dwarf_Die *func = NULL;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;

	for (int i = 0; i < c->nscopes; i++)
		if (dwarf_tag(&c->scopes[i]) == DW_TAG_subprogram) {
			func = &c->scopes[i];
			break;
		}
	if (!func || !dwarf_attr(func, DW_AT_frame_base, &a) ||
	    dwarf_getlocation_addr(&a, c->addr, &ops, &nops, 1) <= 0 || nops != 1)
		return tly_probe_err(c->err, c->errlen, -ENOENT, "no frame base at 0x%" PRIx64,
				     c->addr);
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		Dwarf_CFI *cfis[2] = { tly_probe_eh_cfi(c->f), dwarf_getcfi(c->f->dw) };

		for (int i = 0; i < 2; i++) {
			Dwarf_Frame *fr;
			Dwarf_Op *cops;
			size_t ncops;

			if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], c->addr, &fr))
				continue;
			if (dwarf_frame_cfa(fr, &cops, &ncops) == 0 && ncops == 1) {
				unsigned r = cops[0].atom == DW_OP_bregx ? (unsigned)cops[0].number
					     : (unsigned)(cops[0].atom - DW_OP_breg0);
				int64_t o = cops[0].atom == DW_OP_bregx ? (int64_t)cops[0].number2
					    : (int64_t)cops[0].number;

				if ((cops[0].atom >= DW_OP_breg0 && cops[0].atom <= DW_OP_breg31) ||
				    cops[0].atom == DW_OP_bregx) {
					free(fr);
					*reg = tly_probe_reg_name(c->f, r);
					*off = o;
					return *reg ? 0 : -EOPNOTSUPP;
				}
			}
			free(fr);
		}
		return tly_probe_err(c->err, c->errlen, -ENOENT, "no call frame information "
				     "for 0x%" PRIx64, c->addr);
	}
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		*reg = tly_probe_reg_name(c->f, ops[0].atom - DW_OP_breg0);
		*off = (int64_t)ops[0].number;
		return *reg ? 0 : -EOPNOTSUPP;
	}
	if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
		*reg = tly_probe_reg_name(c->f, ops[0].atom - DW_OP_reg0);
		*off = 0;
		return *reg ? 0 : -EOPNOTSUPP;
	}
	return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP,
			     "DW_OP %x is not supported.\nSorry, we don't support this variable "
			     "location yet.", ops[0].atom);
}

static int not_found(struct arg_ctx *c, const char *name)
{
	return tly_probe_err(c->err, c->errlen, -ENOENT,
			     "Failed to find the location of the '%s' variable at this address.\n"
			     " Perhaps it has been optimized out.\n"
			     " Use -V with the --range option to show '%s' location range.",
			     name, name);
}

/* The variable's location at the address, as an object. */
static int var_obj(struct arg_ctx *c, Dwarf_Die *var, const char *name, struct obj *o)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	unsigned atom;

	memset(o, 0, sizeof(*o));
	o->has_type = tly_probe_die_type(var, &o->type);
	if (!dwarf_attr_integrate(var, DW_AT_location, &a)) {
		if (dwarf_attr_integrate(var, DW_AT_const_value, &a))
			return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP, "Sorry, we don't "
					     "support this variable location yet.");
		return not_found(c, name);
	}
	if (dwarf_getlocation_addr(&a, c->addr, &ops, &nops, 1) <= 0 || !nops)
		return not_found(c, name);
	atom = ops[0].atom;
	if (nops == 1 && atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
		o->kind = O_REG;
		o->reg = tly_probe_reg_name(c->f, atom - DW_OP_reg0);
	} else if (nops == 1 && atom == DW_OP_regx) {
		o->kind = O_REG;
		o->reg = tly_probe_reg_name(c->f, (unsigned)ops[0].number);
	} else if (nops == 1 && ((atom >= DW_OP_breg0 && atom <= DW_OP_breg31) ||
				 atom == DW_OP_bregx)) {
		const char *r = tly_probe_reg_name(c->f, atom == DW_OP_bregx ? (unsigned)ops[0].number
							      : atom - DW_OP_breg0);

		if (!r)
			return -EOPNOTSUPP;
		o->kind = O_MEM;
		snprintf(o->base, sizeof(o->base), "%s", r);
		o->off = atom == DW_OP_bregx ? (int64_t)ops[0].number2 : (int64_t)ops[0].number;
	} else if (nops == 1 && atom == DW_OP_fbreg) {
		const char *r = NULL;
		int64_t fo = 0;
		int ret = frame_base(c, &r, &fo);

		if (ret)
			return ret;
		o->kind = O_MEM;
		snprintf(o->base, sizeof(o->base), "%s", r);
		o->off = fo + (int64_t)ops[0].number;
	} else if (nops == 1 && atom == DW_OP_addr) {
		const struct tly_probe_sym *s = tly_probe_sym_at(c->f, ops[0].number, false);

		o->kind = O_GLOBAL;
		if (s) {
			snprintf(o->sym, sizeof(o->sym), "%s", s->name);
			o->off = (int64_t)(ops[0].number - s->addr);
		} else {
			o->off = (int64_t)ops[0].number;
		}
	} else {
		return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP,
				     "DW_OP %x is not supported.\nSorry, we don't support this "
				     "variable location yet.", atom);
	}
	if (o->kind == O_REG && !o->reg)
		return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP, "register of '%s' has no "
				     "name in the kernel's fetch syntax", name);
	return 0;
}

/* Find member name in a struct/union type (anonymous members searched too), adding its
 * byte offset to *off. */
static bool find_member(Dwarf_Die *type, const char *name, Dwarf_Die *member, int64_t *off,
			int depth)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(type, &child) != 0)
		return false;
	do {
		Dwarf_Attribute a;
		Dwarf_Word mo = 0;
		const char *n;

		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		if (dwarf_attr(&child, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &mo);
		n = dwarf_diename(&child);
		if (n && !strcmp(n, name)) {
			*member = child;
			*off += (int64_t)mo;
			return true;
		}
		if (!n) {
			Dwarf_Die t, st;

			if (tly_probe_die_type(&child, &t) && tly_probe_strip_type(&t, &st) &&
			    find_member(&st, name, member, off, depth + 1)) {
				*off += (int64_t)mo;
				return true;
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static const char *type_tag_name(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
		return "struct ";
	case DW_TAG_union_type:
		return "union ";
	case DW_TAG_enumeration_type:
		return "enum ";
	case DW_TAG_class_type:
		return "class ";
	default:
		return "";
	}
}

/* perf's type names: qualifiers dropped, pointers and arrays as "T*". */
static void type_name(Dwarf_Die *type, bool has, char *buf, size_t len)
{
	Dwarf_Die t = *type, sub;
	int stars = 0;
	const char *n;

	if (!has) {
		snprintf(buf, len, "void");
		return;
	}
	for (int i = 0; i < 64; i++) {
		int tag = dwarf_tag(&t);

		if (tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
		    tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type) {
			if (!tly_probe_die_type(&t, &sub)) {
				snprintf(buf, len, "void%.*s", stars, "********************");
				return;
			}
			t = sub;
			continue;
		}
		if (tag == DW_TAG_pointer_type || tag == DW_TAG_array_type ||
		    tag == DW_TAG_reference_type) {
			stars++;
			if (!tly_probe_die_type(&t, &sub)) {
				snprintf(buf, len, "void%.*s", stars, "********************");
				return;
			}
			t = sub;
			continue;
		}
		if (tag == DW_TAG_subroutine_type) {
			snprintf(buf, len, "(function_type)%.*s", stars > 0 ? stars - 1 : 0,
				 "********************");
			return;
		}
		n = dwarf_diename(&t);
		snprintf(buf, len, "%s%s%.*s", type_tag_name(tag), n ? n : "",
			 stars > 20 ? 20 : stars, "********************");
		return;
	}
	snprintf(buf, len, "?");
}

/* One access step: ->F, .F or [N]. */
static int step(struct arg_ctx *c, struct obj *o, const char *what, const char *field,
		long index, const char *name)
{
	Dwarf_Die t, pt, member;
	char fetch[512], tn[256];
	int tag;

	if (!o->has_type || !tly_probe_strip_type(&o->type, &t))
		return tly_probe_err(c->err, c->errlen, -EINVAL, "%s has no type to access", name);
	tag = dwarf_tag(&t);
	if (what[0] == '-') {
		if (tag != DW_TAG_pointer_type || !tly_probe_die_type(&t, &pt) || !tly_probe_strip_type(&pt, &pt))
			return tly_probe_err(c->err, c->errlen, -EINVAL,
					     "Semantic error: %s must be referred by '.'", name);
		obj_fetch(o, fetch, sizeof(fetch));
		if (!find_member(&pt, field, &member, &(int64_t){ 0 }, 0)) {
			type_name(&pt, true, tn, sizeof(tn));
			return tly_probe_err(c->err, c->errlen, -EINVAL, "%s(type:%s) has no "
					     "member %s.", name, dwarf_diename(&pt) ?
					     dwarf_diename(&pt) : tn, field);
		}
		o->kind = O_MEM;
		snprintf(o->base, sizeof(o->base), "%s", fetch);
		o->off = 0;
		find_member(&pt, field, &member, &o->off, 0);
	} else if (what[0] == '.') {
		if (tag == DW_TAG_pointer_type)
			return tly_probe_err(c->err, c->errlen, -EINVAL,
					     "Semantic error: %s must be referred by '->'", name);
		if (o->kind == O_REG)
			return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP, "%s is in a "
					     "register: its members cannot be read", name);
		if (!find_member(&t, field, &member, &o->off, 0)) {
			type_name(&t, true, tn, sizeof(tn));
			return tly_probe_err(c->err, c->errlen, -EINVAL, "%s(type:%s) has no "
					     "member %s.", name, dwarf_diename(&t) ?
					     dwarf_diename(&t) : tn, field);
		}
	} else {
		Dwarf_Die et;
		Dwarf_Word size;

		if ((tag != DW_TAG_array_type && tag != DW_TAG_pointer_type) ||
		    !tly_probe_die_type(&t, &et) || dwarf_aggregate_size(&et, &size))
			return tly_probe_err(c->err, c->errlen, -EINVAL,
					     "%s is not an array or a pointer", name);
		if (tag == DW_TAG_pointer_type) {
			obj_fetch(o, fetch, sizeof(fetch));
			o->kind = O_MEM;
			snprintf(o->base, sizeof(o->base), "%s", fetch);
			o->off = 0;
		} else if (o->kind == O_REG) {
			return tly_probe_err(c->err, c->errlen, -EOPNOTSUPP,
					     "%s is in a register: it cannot be indexed", name);
		}
		o->off += index * (int64_t)size;
		o->type = et;
		o->has_type = true;
		o->bit_size = 0;
		return 0;
	}
	o->has_type = tly_probe_die_type(&member, &o->type);
	o->bit_size = 0;
	{
		Dwarf_Attribute a;
		Dwarf_Word bs, bo, bytes;

		if (dwarf_attr(&member, DW_AT_bit_size, &a) && !dwarf_formudata(&a, &bs) &&
		    dwarf_attr(&member, DW_AT_data_bit_offset, &a) && !dwarf_formudata(&a, &bo) &&
		    o->has_type && !dwarf_aggregate_size(&o->type, &bytes) && bytes) {
			/* the bits within the member's type-sized container */
			int64_t cbits = (int64_t)bytes * 8;

			o->off += (int64_t)(bo / (Dwarf_Word)cbits) * (int64_t)bytes;
			o->bit_size = (int)bs;
			o->bit_off = (int)(bo % (Dwarf_Word)cbits);
			o->bit_container = (int)cbits;
		}
	}
	return 0;
}

/* The fetch type perf gives an object. */
static void auto_type(const struct obj *o, const struct tally_probe_finder *f, char *buf,
		      size_t len)
{
	Dwarf_Die t;
	Dwarf_Word size = 0;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	int tag;

	buf[0] = 0;
	if (o->bit_size) {
		snprintf(buf, len, "b%d@%d/%d", o->bit_size, o->bit_off, o->bit_container);
		return;
	}
	if (!o->has_type || !tly_probe_strip_type((Dwarf_Die *)&o->type, &t))
		return;
	tag = dwarf_tag(&t);
	if (tag == DW_TAG_array_type)
		return;
	if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type)
		size = f->is64 ? 8 : 4;
	else if (dwarf_aggregate_size(&t, &size))
		return;
	if (size > 8 || !size)
		size = 8;
	if (tag == DW_TAG_base_type && dwarf_attr(&t, DW_AT_encoding, &a))
		dwarf_formudata(&a, &enc);
	snprintf(buf, len, "%c%u",
		 tag == DW_TAG_base_type && (enc == DW_ATE_signed || enc == DW_ATE_signed_char) ?
		 's' : 'x', (unsigned)size * 8);
}

static bool is_char_type(Dwarf_Die *type)
{
	Dwarf_Die t;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0, size = 0;

	if (!tly_probe_strip_type(type, &t) || dwarf_tag(&t) != DW_TAG_base_type)
		return false;
	if (dwarf_attr(&t, DW_AT_encoding, &a))
		dwarf_formudata(&a, &enc);
	dwarf_aggregate_size(&t, &size);
	return size == 1 && (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
			     enc == DW_ATE_signed || enc == DW_ATE_unsigned);
}

/* ":string": the address of a char array, the value of a char pointer. */
static int string_fetch(struct arg_ctx *c, struct obj *o, const char *name, char *fetch,
			size_t len)
{
	Dwarf_Die t, et;
	char tn[256], inner[512];

	if (!o->has_type || !tly_probe_strip_type(&o->type, &t))
		return tly_probe_err(c->err, c->errlen, -EINVAL, "Failed to cast into string: "
				     "%s is not (unsigned) char *.", name);
	if (dwarf_tag(&t) == DW_TAG_array_type || dwarf_tag(&t) == DW_TAG_pointer_type) {
		if (!tly_probe_die_type(&t, &et) || !is_char_type(&et))
			return tly_probe_err(c->err, c->errlen, -EINVAL, "Failed to cast into "
					     "string: %s is not (unsigned) char *.", name);
		if (dwarf_tag(&t) == DW_TAG_array_type) {
			if (o->kind == O_REG)
				return -EOPNOTSUPP;
			obj_fetch(o, fetch, len);
			return 0;
		}
		obj_fetch(o, inner, sizeof(inner));
		snprintf(fetch, len, "+0(%s)", inner);
		return 0;
	}
	type_name(&o->type, o->has_type, tn, sizeof(tn));
	return tly_probe_err(c->err, c->errlen, -EINVAL, "Failed to cast into string: %s(%s) "
			     "is not a pointer nor array.", name, tn);
}

void tly_probe_field_name(const char *expr, char *buf, size_t len)
{
	const char *last = NULL, *p = expr;
	size_t n;

	buf[0] = 0;
	if (!strpbrk(expr, ".-["))
		return;
	/* the name after the last -> or . (arr[1]: the name before '[') */
	for (; *p; p++) {
		if (*p == '.')
			last = p + 1;
		else if (*p == '-' && p[1] == '>')
			last = p + 2;
	}
	if (!last)
		last = expr;
	n = strcspn(last, ".-[");
	snprintf(buf, len, "%.*s", (int)n, last);
}

/* Find a variable by name in the scopes at the address. */
static int lookup_var(struct arg_ctx *c, const char *name, Dwarf_Die *var)
{
	int i = dwarf_getscopevar(c->scopes, c->nscopes, name, 0, NULL, 0, 0, var);

	return i >= 0 ? 0 : -ENOENT;
}

/* A C expression: NAME followed by ->F, .F and [N] steps. */
static int expr_obj(struct arg_ctx *c, const char *expr, struct obj *o)
{
	char name[256];
	size_t n = strcspn(expr, ".-[");
	const char *p = expr + n;
	Dwarf_Die var;
	int ret;

	if (n >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(name, expr, n);
	name[n] = 0;
	if (lookup_var(c, name, &var))
		return not_found(c, name);
	ret = var_obj(c, &var, name, o);
	while (!ret && *p) {
		char field[256];
		const char *what = p;
		long idx = 0;

		if (p[0] == '-' && p[1] == '>')
			p += 2;
		else if (p[0] == '.')
			p++;
		else if (p[0] == '[') {
			char *end;

			idx = strtol(p + 1, &end, 0);
			if (end == p + 1 || *end != ']')
				return tly_probe_err(c->err, c->errlen, -EINVAL, "Semantic error: "
						     "'%s' has a bad index", expr);
			p = end + 1;
			ret = step(c, o, "[", NULL, idx, name);
			continue;
		} else {
			return tly_probe_err(c->err, c->errlen, -EINVAL, "Semantic error: "
					     "'%s' is not a variable expression", expr);
		}
		n = strcspn(p, ".-[");
		if (!n || n >= sizeof(field))
			return tly_probe_err(c->err, c->errlen, -EINVAL, "Semantic error: "
					     "'%s' is not a variable expression", expr);
		memcpy(field, p, n);
		field[n] = 0;
		p += n;
		ret = step(c, o, what, field, 0, name);
		snprintf(name, sizeof(name), "%s", field);
	}
	return ret;
}

static int push_arg(struct tally_probe_event *e, const char *text)
{
	char **v = realloc(e->args, (e->nr_args + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	e->args = v;
	v[e->nr_args] = strdup(text);
	return v[e->nr_args++] ? 0 : -ENOMEM;
}

/* One C-expression argument as NAME=FETCH[:TYPE]. */
static int var_arg(struct arg_ctx *c, const struct tally_probe_arg *a, char *out, size_t len)
{
	struct obj o;
	char fetch[1024], type[64], name[256], field[256];
	int ret = expr_obj(c, a->expr, &o);

	if (ret)
		return ret;
	tly_probe_field_name(a->expr, field, sizeof(field));
	if (a->name)
		snprintf(name, sizeof(name), "%s", a->name);
	else if (field[0])
		snprintf(name, sizeof(name), "%s", field);
	else
		snprintf(name, sizeof(name), "%s%s%s", a->expr, a->type ? "_" : "",
			 a->type ? a->type : "");
	if (!a->name)
		tally_probe__sanitize_name(name);
	if (a->type && !strcmp(a->type, "string")) {
		ret = string_fetch(c, &o, a->expr, fetch, sizeof(fetch));
		if (ret)
			return ret;
		snprintf(type, sizeof(type), "string");
	} else {
		obj_fetch(&o, fetch, sizeof(fetch));
		if (a->type)
			snprintf(type, sizeof(type), "%s", a->type);
		else
			auto_type(&o, c->f, type, sizeof(type));
	}
	snprintf(out, len, "%s=%s%s%s", name, fetch, type[0] ? ":" : "", type);
	return 0;
}

/* The scope of the function at the address (its variables: params, then locals), and
 * the scopes inside it, outermost first. */
static int func_scope(struct arg_ctx *c)
{
	for (int i = 0; i < c->nscopes; i++) {
		int tag = dwarf_tag(&c->scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			return i;
	}
	return -1;
}

typedef int (*var_fn)(struct arg_ctx *c, Dwarf_Die *var, const char *name, void *arg);

/* Variables in scope at the address: the function's parameters and locals, then those of
 * inner blocks; only parameters with params_only; CU globals too with externs. */
static int for_each_var(struct arg_ctx *c, bool params_only, bool externs, var_fn fn, void *arg)
{
	int fs = func_scope(c), ret;

	if (fs < 0)
		return 0;
	for (int i = fs; i >= 0; i--) {
		Dwarf_Die child;

		if (dwarf_child(&c->scopes[i], &child) != 0)
			continue;
		c->cur_scope = &c->scopes[i];
		do {
			int tag = dwarf_tag(&child);
			const char *name;

			if (tag != DW_TAG_formal_parameter && (params_only || tag != DW_TAG_variable))
				continue;
			name = dwarf_diename(&child);
			if (!name)
				continue;
			ret = fn(c, &child, name, arg);
			if (ret)
				return ret;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (params_only)
			break;
	}
	if (externs && c->nscopes) {
		Dwarf_Die child, *cu = &c->scopes[c->nscopes - 1];

		c->cur_scope = cu;
		if (dwarf_tag(cu) == DW_TAG_compile_unit && dwarf_child(cu, &child) == 0) {
			do {
				const char *name = dwarf_diename(&child);

				if (dwarf_tag(&child) != DW_TAG_variable || !name)
					continue;
				ret = fn(c, &child, name, arg);
				if (ret)
					return ret;
			} while (dwarf_siblingof(&child, &child) == 0);
		}
	}
	return 0;
}

static int expand_one(struct arg_ctx *c, Dwarf_Die *var, const char *name, void *arg)
{
	struct tally_probe_event *e = arg;
	struct obj o;
	char fetch[1024], type[64], text[1400];
	char *save = c->err;

	(void)var;
	c->err = NULL;	/* variables that cannot be read are left out, silently */
	if (var_obj(c, var, name, &o)) {
		c->err = save;
		return 0;
	}
	c->err = save;
	obj_fetch(&o, fetch, sizeof(fetch));
	auto_type(&o, c->f, type, sizeof(type));
	snprintf(text, sizeof(text), "%s=%s%s%s", name, fetch, type[0] ? ":" : "", type);
	return push_arg(e, text);
}

int tly_probe_resolve_args(struct tally_probe_finder *f, Dwarf_Die *cu, uint64_t addr,
			const struct tally_probe_spec *spec, struct tally_probe_event *e,
			char *err, size_t errlen)
{
	struct arg_ctx c = { .f = f, .addr = addr, .err = err, .errlen = errlen };
	int ret = 0;

	c.nscopes = dwarf_getscopes(cu, addr, &c.scopes);
	if (c.nscopes < 0)
		c.nscopes = 0;
	for (size_t i = 0; i < spec->nr_args && !ret; i++) {
		const struct tally_probe_arg *a = &spec->args[i];
		char text[2048];
		struct tly_buf b = { 0 };

		if (a->raw || !strcmp(a->expr, "$retval")) {
			ret = tly_probe_raw_arg(a, &b);
			if (!ret)
				ret = push_arg(e, b.data);
			tly_buf__exit(&b);
		} else if (!strcmp(a->expr, "$vars") || !strcmp(a->expr, "$params")) {
			ret = for_each_var(&c, !strcmp(a->expr, "$params"), false, expand_one, e);
		} else {
			ret = var_arg(&c, a, text, sizeof(text));
			if (!ret)
				ret = push_arg(e, text);
		}
	}
	free(c.scopes);
	return ret;
}

/* ---- -V ---- */

struct var_list {
	char **v;
	size_t nr, cap;
	bool range;
	uint64_t entry;
	const char *func;
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "@<func+[a-b,c-d]>": the ranges where the variable has a location, relative to the
 * function's entry (a single location: the function's own ranges). */
static void var_ranges(Dwarf_Die *var, Dwarf_Die *func, uint64_t entry, const char *fname,
		       char *buf, size_t len)
{
	Dwarf_Attribute a;
	ptrdiff_t off = 0;
	Dwarf_Addr base, start, end;
	Dwarf_Op *ops;
	size_t nops, n = 0;
	bool first = true, whole = false;

	n += (size_t)snprintf(buf, len, "@<%s+[", fname);
	if (dwarf_attr_integrate(var, DW_AT_location, &a)) {
		while (n < len && (off = dwarf_getlocations(&a, off, &base, &start, &end, &ops,
							     &nops)) > 0) {
			if (start == 0 && end == (Dwarf_Addr)-1) {
				whole = true;
				break;
			}
			n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64 "-%" PRIu64,
					      first ? "" : ",", start - entry, end - entry);
			first = false;
		}
	}
	off = 0;
	while (whole && n < len && (off = dwarf_ranges(func, off, &base, &start, &end)) > 0) {
		n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64 "-%" PRIu64, first ? "" : ",",
				      start - entry, end - entry);
		first = false;
	}
	if (n < len)
		snprintf(buf + n, len - n, "]>");
}

/* How perf -V sees a variable at the address: readable when the first operation of its
 * location there is one it reads (a register, a register or frame-base offset, an
 * address), whatever follows; absent when it has no location there; else (a value the
 * compiler computes, a constant) not listed at all. */
enum var_state { V_SKIP, V_VAL, V_INV };

static enum var_state var_state(struct arg_ctx *c, Dwarf_Die *var)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	unsigned atom;

	if (!dwarf_attr_integrate(var, DW_AT_location, &a))
		return dwarf_attr_integrate(var, DW_AT_const_value, &a) ? V_SKIP : V_INV;
	if (dwarf_getlocation_addr(&a, c->addr, &ops, &nops, 1) <= 0 || !nops)
		return V_INV;
	atom = ops[0].atom;
	return (atom >= DW_OP_reg0 && atom <= DW_OP_breg31) || atom == DW_OP_regx ||
	       atom == DW_OP_bregx || atom == DW_OP_fbreg || atom == DW_OP_addr ? V_VAL : V_SKIP;
}

static int list_var(struct arg_ctx *c, Dwarf_Die *var, const char *name, void *arg)
{
	struct var_list *l = arg;
	Dwarf_Die type;
	char tn[256], text[1024], ranges[512] = "";
	enum var_state st = var_state(c, var);

	if (st == V_SKIP || (st == V_INV && !l->range))
		return 0;
	type_name(&type, tly_probe_die_type(var, &type), tn, sizeof(tn));
	if (l->range && dwarf_tag(c->cur_scope) == DW_TAG_compile_unit) {
		snprintf(text, sizeof(text), "[EXT]\t%s\t%s", tn, name);
	} else if (l->range) {
		var_ranges(var, c->cur_scope, l->entry, l->func, ranges, sizeof(ranges));
		snprintf(text, sizeof(text), "[%s]\t%s\t%s\t%s", st == V_VAL ? "VAL" : "INV", tn,
			 name, ranges);
	} else {
		snprintf(text, sizeof(text), "%s\t%s", tn, name);
	}
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->nr] = strdup(text);
	return l->v[l->nr++] ? 0 : -ENOMEM;
}

int tally_probe_finder__vars(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			     bool range, bool externs, tally_probe_vars_fn fn, void *arg,
			     char *err, size_t errlen)
{
	struct tally_probe_event *evs = NULL;
	size_t nr = 0;
	int ret;

	if (f->kernel || !f->dw)
		return tly_probe_err(err, errlen, -ENODATA, "The %s file has no debug "
				     "information.\nRebuild with -g, or install an appropriate "
				     "debuginfo package.", f->kernel ? "kernel" : f->path);
	{
		/* the addresses the probe would have (variables asked for: none) */
		struct tally_probe_spec s = *spec;

		s.nr_args = 0;
		s.args = NULL;
		ret = spec->has_address ? tly_probe_find_address(f, &s, &evs, &nr, err, errlen)
					: tly_probe_find_dwarf(f, &s, &evs, &nr, err, errlen, NULL, 0);
		if (ret == -ENOENT && spec->function && !spec->has_line && !spec->lazy)
			tly_probe_err(err, errlen, ret, "Failed to find the address of %s",
				      spec->function);
	}
	for (size_t i = 0; !ret && i < nr; i++) {
		struct arg_ctx c = { .f = f, .err = NULL };
		struct var_list l = { .range = range };
		Dwarf_Die cu, func;
		char where[512];
		uint64_t entry = 0;
		const char *name;

		if (tly_probe_offset_to_vaddr(f, evs[i].offset, &c.addr) ||
		    !dwarf_addrdie(f->dw, c.addr, &cu))
			continue;
		name = tly_probe_function_at(&cu, c.addr, &func);
		if (!name || !tly_probe_die_entry(&func, &entry))
			continue;
		l.entry = entry;
		l.func = name;
		snprintf(where, sizeof(where), "@<%s+%" PRIu64 ">", name, c.addr - entry);
		c.nscopes = dwarf_getscopes(&cu, c.addr, &c.scopes);
		if (c.nscopes < 0)
			c.nscopes = 0;
		ret = for_each_var(&c, false, externs, list_var, &l);
		free(c.scopes);
		if (!ret) {
			qsort(l.v, l.nr, sizeof(*l.v), str_cmp);
			ret = fn(arg, where, NULL);
			for (size_t j = 0; !ret && j < l.nr; j++)
				ret = fn(arg, where, l.v[j]);
		}
		for (size_t j = 0; j < l.nr; j++)
			free(l.v[j]);
		free(l.v);
	}
	tally_probe_events__free(evs, nr);
	return ret;
}

