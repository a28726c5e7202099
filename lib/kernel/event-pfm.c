/*
 * The libpfm4 bridge: event names only libpfm4's tables know ("inst_retired.any",
 * "INST_RETIRED:ANY_P") turned into a perf_event_attr.
 *
 * libpfm4 keeps process-wide state of its own; it is initialised once. On a machine
 * where libpfm4 detects no PMU (a VM without a virtual PMU) every lookup fails with
 * -ENODEV so the caller can say that plainly instead of "unknown event".
 *
 * libpfm4 is loaded with dlopen() the first time a name reaches it, not linked: its
 * tables carry thousands of relocations, and the dynamic loader spends ~4 ms on them at
 * the start of every process, which is a quarter of `tally stat true`. Most runs never
 * need it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon/pfmlib.h>
#include <perfmon/pfmlib_perf_event.h>

/* <perfmon/perf_event.h> clashes with <linux/perf_event.h>, so this file cannot include
 * internal/event.h; these are its declarations of the two functions below. */
int tly_pfm_encode(const char *name, struct perf_event_attr *attr, char *msg, size_t msglen);
int tly_pfm_nr_present(void);

static pthread_once_t pfm_once = PTHREAD_ONCE_INIT;
static int pfm_init_err;
static int pfm_present;
static char pfm_load_msg[256];	/* why libpfm4 could not be loaded, or "" */

/* The libpfm4 functions used here, resolved from the loaded library. */
static struct {
	__typeof__(pfm_initialize) *initialize;
	__typeof__(pfm_get_pmu_info) *get_pmu_info;
	__typeof__(pfm_get_os_event_encoding) *get_os_event_encoding;
	__typeof__(pfm_strerror) *strerror;
} pfm;

static int pfm_load(void)
{
	void *h = dlopen("libpfm.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(pfm_load_msg, sizeof(pfm_load_msg), "libpfm4 is not available (%s): "
			 "install libpfm4 (Debian: apt-get install libpfm4)", dlerror());
		return -1;
	}
	pfm.initialize = (__typeof__(pfm.initialize))dlsym(h, "pfm_initialize");
	pfm.get_pmu_info = (__typeof__(pfm.get_pmu_info))dlsym(h, "pfm_get_pmu_info");
	pfm.get_os_event_encoding =
		(__typeof__(pfm.get_os_event_encoding))dlsym(h, "pfm_get_os_event_encoding");
	pfm.strerror = (__typeof__(pfm.strerror))dlsym(h, "pfm_strerror");
	if (!pfm.initialize || !pfm.get_pmu_info || !pfm.get_os_event_encoding || !pfm.strerror) {
		snprintf(pfm_load_msg, sizeof(pfm_load_msg),
			 "libpfm.so.4 lacks the functions tally needs (too old?)");
		dlclose(h);
		return -1;
	}
	return 0;	/* the library stays loaded for the life of the process */
}

static void pfm_init(void)
{
	pfm_pmu_t p;

	if (pfm_load()) {
		pfm_init_err = PFM_ERR_NOINIT;
		return;
	}
	pfm_init_err = pfm.initialize();
	if (pfm_init_err != PFM_SUCCESS)
		return;
	pfm_for_all_pmus(p) {
		pfm_pmu_info_t info;

		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		if (pfm.get_pmu_info(p, &info) == PFM_SUCCESS && info.is_present)
			pfm_present++;
	}
}

int tly_pfm_nr_present(void)
{
	pthread_once(&pfm_once, pfm_init);
	return pfm_init_err == PFM_SUCCESS ? pfm_present : 0;
}

/* "inst_retired.any" is the JSON spelling; libpfm4 spells it INST_RETIRED:ANY. */
static int try_encode(const char *name, struct perf_event_attr *attr)
{
	pfm_perf_encode_arg_t arg;
	struct perf_event_attr a;

	memset(&arg, 0, sizeof(arg));
	memset(&a, 0, sizeof(a));
	arg.attr = &a;
	arg.size = sizeof(arg);
	int ret = pfm.get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);

	if (ret != PFM_SUCCESS)
		return ret;
	attr->type = a.type;
	attr->config = a.config;
	attr->config1 = a.config1;
	attr->config2 = a.config2;
	attr->exclude_user = a.exclude_user;
	attr->exclude_kernel = a.exclude_kernel;
	attr->exclude_hv = a.exclude_hv;
	attr->exclude_idle = a.exclude_idle;
	attr->precise_ip = a.precise_ip;
	return 0;
}

int tly_pfm_encode(const char *name, struct perf_event_attr *attr, char *msg, size_t msglen)
{
	char *alt, *p;
	int ret;

	pthread_once(&pfm_once, pfm_init);
	if (pfm_load_msg[0]) {
		snprintf(msg, msglen, "%s", pfm_load_msg);
		return -ENODEV;
	}
	if (pfm_init_err != PFM_SUCCESS) {
		snprintf(msg, msglen, "libpfm4 failed to initialise: %s", pfm.strerror(pfm_init_err));
		return -ENODEV;
	}
	if (!pfm_present) {
		snprintf(msg, msglen, "libpfm4 detects no hardware PMU on this machine "
			 "(a VM without a virtual PMU?), so it cannot encode '%s'", name);
		return -ENODEV;
	}
	ret = try_encode(name, attr);
	if (ret == PFM_ERR_NOTFOUND && strchr(name, '.')) {
		alt = strdup(name);
		if (!alt)
			return -ENOMEM;
		for (p = alt; *p; p++)
			if (*p == '.')
				*p = ':';
		ret = try_encode(alt, attr);
		free(alt);
	}
	if (ret == PFM_SUCCESS)
		return 0;
	snprintf(msg, msglen, "libpfm4: %s", pfm.strerror(ret));
	return ret == PFM_ERR_NOTFOUND ? -ENOENT : -EINVAL;
}
