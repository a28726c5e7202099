/*
 * tally data convert: a perf.data's samples in formats other tools read, as perf data
 * convert does: perf 6.1's JSON (--to-json) and gzipped pprof (--to-pprof), in one pass
 * when both are asked for. The encoders are the library's (tally/convert.h); this file
 * parses options, walks the samples and writes the files (each through a temporary
 * file, renamed into place when complete).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/convert.h>

#include "cmd.h"
#include "options.h"
#include "out-file.h"
#include "sample-stacks.h"

#define MAX_LABELS 32

struct convert_opts {
	struct stack_walk_opts in;
	const char *json, *pprof;
	bool force;
	bool no_lines;
	const char *label_keys[MAX_LABELS], *label_values[MAX_LABELS];
	char *label_buf[MAX_LABELS];
	size_t nr_labels;
};

/* --label key=value */
static int opt_label(void *opts, const struct cli_opt *opt, const char *kv, bool unset)
{
	struct convert_opts *o = opts;
	const char *eq = strchr(kv, '=');
	char *copy;

	(void)opt;
	(void)unset;
	if (!eq || eq == kv) {
		cli_error("--label '%s': give key=value (e.g. --label host=web1)", kv);
		return -1;
	}
	if (o->nr_labels == MAX_LABELS) {
		cli_error("--label: at most %d labels", MAX_LABELS);
		return -1;
	}
	copy = strdup(kv);
	if (!copy) {
		cli_error("out of memory");
		return -1;
	}
	copy[eq - kv] = 0;
	o->label_buf[o->nr_labels] = copy;
	o->label_keys[o->nr_labels] = copy;
	o->label_values[o->nr_labels++] = copy + (eq - kv) + 1;
	return 0;
}

#define CLI_OPTS struct convert_opts
static const struct cli_opt convert_options[] = {
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_STRING('i', "input", in.input, "file", "input file name"),
	OPT_VERBOSE("be more verbose"),
	OPT_REFUSED(0, "all", NULL, CLI_ARG_NONE, "Convert all events",
		    "data convert: --all is only for --to-ctf, which tally does not write"),
	OPT_REFUSED(0, "to-ctf", "...", CLI_ARG_REQUIRED, "Convert to CTF format",
		    "data convert: --to-ctf (babeltrace's CTF) is not supported; use --to-json "
		    "or --to-pprof"),
	OPT_STRING(0, "to-json", json, "...", "Convert to JSON format"),
	OPT_REFUSED(0, "tod", NULL, CLI_ARG_NONE, "Convert time to wall clock time",
		    "data convert: --tod is only for --to-ctf, which tally does not write"),
	OPT_GROUP("tally's:"),
	OPT_STRING(0, "to-pprof", pprof, "file", "Convert to a gzipped pprof profile "
		   "(profile.proto)"),
	OPT_CALLBACK(0, "label", "key=value", "(pprof) a label on every sample,\ne.g. host=web1 "
		     "(may be repeated)", opt_label, .flags = CLI_NONEG),
	OPT_BOOL(0, "no-lines", no_lines, "(pprof) functions only: no source lines\nor inline "
		 "frames", .flags = CLI_NONEG),
	OPT_STRING('k', "kallsyms", in.kallsyms, "file", "kernel symbols"),
	OPT_STRING(0, "symfs", in.symfs, "dir", "look for binaries under dir"),
	OPT_END(),
};
#undef CLI_OPTS

static const char *const convert_usage[] = { "data convert [<options>]", NULL };

struct convert {
	struct convert_opts *o;
	struct tally_json_export *json;
	struct tally_pprof *pprof;
};

static int on_sample(void *arg, const struct tally_convert_sample *s)
{
	struct convert *c = arg;
	int err = 0;

	if (c->json)
		err = tally_json_export__sample(c->json, s);
	/* perf report leaves samples with damaged chains out: so do its shares in pprof */
	if (!err && c->pprof && !s->chain_damaged)
		err = tally_pprof__add(c->pprof, s);
	return err;
}

/* The input's modification time (perf's "captured-on"): -1 when unknown. */
static int64_t input_mtime(const char *path)
{
	struct stat st;

	if (!strcmp(path, "-") ? fstat(STDIN_FILENO, &st) : stat(path, &st))
		return -1;
	return (int64_t)st.st_mtime;
}

static int convert(struct convert_opts *o)
{
	struct convert c = { .o = o };
	struct stack_walk w;
	struct out_file jf = { 0 }, pf = { 0 };
	int status = 1, ret;
	int64_t mtime = input_mtime(o->in.input);

	o->in.recorded = o->json != NULL;	/* perf's JSON lists the recorded chain */
	if (stack_walk__open(&w, &o->in))
		goto out;
	if (o->json) {
		struct tally_json_export_opts jo = { .captured_on = mtime };

		if (out_file__open(&jf, o->json, !o->force))
			goto out;
		if (tally_json_export__new(&c.json, jf.fp, w.data, &jo)) {
			cli_error("writing %s failed: %s", o->json, strerror(errno ? errno : EIO));
			goto out;
		}
	}
	if (o->pprof) {
		struct tally_pprof_opts po = {
			.label_keys = o->label_keys, .label_values = o->label_values,
			.nr_labels = o->nr_labels, .no_lines = o->no_lines,
			.end_ns = mtime > 0 ? mtime * 1000000000 : 0,
		};

		if (out_file__open(&pf, o->pprof, !o->force))
			goto out;
		if (tally_pprof__new(&c.pprof, w.data, w.session, &po)) {
			cli_error("out of memory");
			goto out;
		}
	}
	ret = stack_walk__run(&w, on_sample, &c);
	if (ret == -EIO) {
		cli_error("writing %s failed: %s", o->json, strerror(errno ? errno : EIO));
		goto out;
	}
	if (ret < 0)
		cli_error("out of memory");
	if (ret)
		goto out;
	if (c.json) {
		long size;

		if (tally_json_export__finish(c.json) || out_file__commit(&jf))
			goto out;
		fprintf(stderr, "[ tally data convert: Converted '%s' into JSON data '%s' ]\n",
			o->in.input, o->json);
		size = 0;
		{
			struct stat st;

			if (strcmp(o->json, "-") && stat(o->json, &st) == 0)
				size = (long)st.st_size;
		}
		fprintf(stderr, "[ tally data convert: Converted and wrote %.3f MB (%" PRIu64
			" samples) ]\n", size / 1024.0 / 1024.0,
			tally_json_export__nr_samples(c.json));
	}
	if (c.pprof) {
		size_t ns, nl, nf, nm;

		ret = tally_pprof__write(c.pprof, pf.fp);
		if (ret) {
			cli_error("writing %s failed: %s", o->pprof, strerror(-ret));
			goto out;
		}
		if (out_file__commit(&pf))
			goto out;
		tally_pprof__counts(c.pprof, &ns, &nl, &nf, &nm);
		fprintf(stderr, "[ tally data convert: Converted '%s' into pprof '%s': %" PRIu64
			" samples as %zu, %zu locations, %zu functions, %zu mappings ]\n",
			o->in.input, o->pprof, w.nr_samples, ns, nl, nf, nm);
	}
	status = 0;
out:
	out_file__abort(&jf);
	out_file__abort(&pf);
	tally_json_export__delete(c.json);
	tally_pprof__delete(c.pprof);
	stack_walk__close(&w);
	return status;
}

static const struct cli_command cmd_data_convert;

static int convert_init(void *opts)
{
	((struct convert_opts *)opts)->in.input = "perf.data";
	return 0;
}

static int convert_exec(void *opts, const struct cli_args *args)
{
	struct convert_opts *o = opts;

	(void)args;
	o->in.force = o->force;
	if (!o->json && !o->pprof)
		return cli_usage_error(&cmd_data_convert, "say what to write: --to-json FILE "
				       "and/or --to-pprof FILE");
	if (o->json && o->pprof && !strcmp(o->json, o->pprof))
		return cli_usage_error(&cmd_data_convert, "--to-json and --to-pprof name the "
				       "same file '%s'", o->json);
	return convert(o);
}

static void convert_exit(void *opts)
{
	struct convert_opts *o = opts;

	for (size_t i = 0; i < o->nr_labels; i++)
		free(o->label_buf[i]);
}

static const struct cli_command cmd_data_convert = {
	.name = "data convert",
	.summary = "Convert a perf.data to perf's JSON or to pprof",
	.usage = convert_usage,
	.opts = convert_options,
	.max_args = 0,
	.args_hint = "(use -i to name the input file)",
	.size = sizeof(struct convert_opts),
	.init = convert_init,
	.exec = convert_exec,
	.exit = convert_exit,
};

static const struct cli_opt data_options[] = { OPT_END() };
static const char *const data_usage[] = { "data [<common options>] <command> [<options>]",
					  NULL };

static int data_exec(void *opts, const struct cli_args *args)
{
	(void)opts;
	if (args->argc)
		return cli_usage_error(&cmd_data, "unknown subcommand '%s' (tally data convert is "
				       "the one subcommand)", args->argv[0]);
	return cli_usage_error(&cmd_data, "say what to do: tally data convert [<options>]");
}

static const struct cli_command *const data_subcommands[] = { &cmd_data_convert, NULL };

const struct cli_command cmd_data = {
	.name = "data",
	.summary = "Data file related processing (convert to JSON or pprof)",
	.usage = data_usage,
	.opts = data_options,
	.max_args = 1,
	.exec = data_exec,
	.subcommands = data_subcommands,
};
