#!/usr/bin/env bash
# tally list: the events of this machine in perf 6.1's layout; filters, --raw-dump, --pmu.
. "$(dirname "$0")/lib.sh"

"$TALLY" list > list.out 2> list.err
check "list exits 0" [ $? -eq 0 ]
for want in task-clock page-faults 'msr/tsc/' 'mem:<addr>'; do
	check "list shows $want" grep -qF "  $want" list.out
done
if [ -r /sys/kernel/tracing/events/sched/sched_switch/id ] || \
   [ -r /sys/kernel/debug/tracing/events/sched/sched_switch/id ]; then
	check "list shows sched:sched_switch" grep -q '^  sched:sched_switch  *\[Tracepoint event\]$' list.out
else
	skip "list shows sched:sched_switch (tracefs not readable)"
fi
check "list lines are '  %-50s [Kind]'" \
	awk '!/^  .* +\[[A-Za-z ]+\]$/ { exit 1 } length($0) < 55 { exit 1 }' list.out

# Hardware events only when they open: compare with a real open of cycles.
cat > probe.c <<'EOF'
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>
int main(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.exclude_kernel = a.exclude_hv = a.disabled = 1;
	return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0) >= 0 ? 0 : 1;
}
EOF
if cc -o probe probe.c 2>/dev/null; then
	if ./probe; then
		check "hardware events listed (cycles opens here)" grep -q '\[Hardware event\]' list.out
	else
		check "no hardware events listed (cycles does not open here)" \
			bash -c "! grep -q '\[Hardware event\]\|\[Hardware cache event\]' list.out"
	fi
else
	skip "hardware event probe (no C compiler)"
fi

# Filters
"$TALLY" list sw > sw.out
check "list sw: software and tool events only" \
	bash -c "grep -q task-clock sw.out && grep -q duration_time sw.out && ! grep -q 'Tracepoint\|PMU event' sw.out"
"$TALLY" list 'page-*' > glob.out
check "list glob 'page-*'" grep -qx '  page-faults OR faults *\[Software event\]' glob.out
check "list glob matches only what it should" [ "$(wc -l < glob.out)" -eq 1 ]
"$TALLY" list faults > alias.out
check "list glob matches the alias (faults)" grep -q 'page-faults OR faults' alias.out
# a word matches as "*WORD*", as perf's does: names, aliases, tracepoints' events
"$TALLY" list clock > word.out
check "list clock: cpu-clock and task-clock" eval 'grep -q "^  cpu-clock  *\[Software event\]$" word.out && grep -q "^  task-clock " word.out'
"$TALLY" list switch > word.out
check "list switch: context-switches OR cs" grep -q '^  context-switches OR cs  *\[Software event\]$' word.out
"$TALLY" list sched > word.out
check "list sched: sched:sched_switch (tracefs mounted if need be)" grep -q '^  sched:sched_switch  *\[Tracepoint event\]$' word.out
"$TALLY" list --raw-dump pmu > raw.out
check "list --raw-dump pmu" grep -q 'msr/tsc/ ' raw.out
check "list --raw-dump has no newline" [ "$(wc -l < raw.out)" -eq 0 ]
"$TALLY" list --help > help.out
check "list --help prints usage" grep -q 'Usage: tally list' help.out
"$TALLY" list --bogus > /dev/null 2>&1
check "list with a bad option exits 129" [ $? -eq 129 ]

# --pmu: sysfs and CPUID, plainly
"$TALLY" list --pmu > pmu.out
check "list --pmu shows msr with its type" grep -q "^  msr  *$(cat /sys/bus/event_source/devices/msr/type 2>/dev/null || echo 9) " pmu.out
check "list --pmu says what CPUID reports" grep -q 'CPUID' pmu.out
if ! [ -d /sys/bus/event_source/devices/cpu ]; then
	check "list --pmu says plainly there is no hardware PMU" \
		grep -q 'kernel exposes none\|Neither the CPU nor the kernel offers a hardware PMU' pmu.out
fi

# A fake sysfs tree: PMU aliases, units, caps
FAKE="$TALLY_TOP/tests/data/sysfs/arm64"
if [ -d "$FAKE" ]; then
	"$TALLY" list --sysfs "$FAKE" pmu > fake.out
	check "list --sysfs: fake PMU aliases" grep -q '  armv8_pmuv3_0/cpu_cycles/ ' fake.out
	"$TALLY" list --sysfs "$FAKE" --pmu > fakepmu.out
	check "list --pmu --sysfs: caps shown" grep -q 'caps/threshold_max = 0xfff' fakepmu.out
	"$TALLY" list --sysfs "$TALLY_TOP/tests/data/sysfs/x86" pmu > fakex86.out
	check "list: core PMU aliases as 'name OR cpu/name/'" \
		grep -q '^  cpu-cycles OR cpu/cpu-cycles/  *\[Kernel PMU event\]$' fakex86.out
	check "list: uncore and power aliases" grep -q '^  power/energy-pkg/ ' fakex86.out
	"$TALLY" list --sysfs "$TALLY_TOP/tests/data/sysfs/x86" --pmu > fakex86pmu.out
	check "list --pmu: formats with ranges" grep -q 'cmask=config:24-31' fakex86pmu.out
	check "list --pmu: alias scale and unit" grep -q 'energy-pkg/ = event=0x02  (unit Joules' fakex86pmu.out
	if grep -q 'no architectural PMU' fakex86pmu.out; then
		check "list --pmu: kernel PMU without a CPUID PMU is called out" \
			grep -q 'kernel exposes a CPU PMU although CPUID' fakex86pmu.out
	fi
fi

# perf oracle: every software event, tool event, kernel PMU event and tracepoint perf
# lists here, tally lists with the same line.
have_perf || { skip "list vs perf list (perf absent)"; exit 0; }
perf list 2>/dev/null | grep -E '\[(Software event|Tool event|Kernel PMU event|Tracepoint event|Hardware event|Hardware cache event|Raw hardware event descriptor|Hardware breakpoint)\]$' > perf.out
missing=$(grep -vxFf list.out perf.out | head -5)
check "every perf list software/tool/PMU/tracepoint line is in tally list${missing:+ (missing: $missing)}" [ -z "$missing" ]
extra=$(grep -vxFf perf.out list.out | head -5)
check "tally list has nothing perf list lacks${extra:+ (extra: $extra)}" [ -z "$extra" ]
check "list 'sched:*' equals perf" cmp -s <("$TALLY" list 'sched:*') <(perf list 'sched:*' 2>/dev/null)
for words in sched clock switch cs faults tsc MSR 'clock*' 'sched:*wake*' irq_vectors 'sw clock' 'cs sched:sched_switch'; do
	# shellcheck disable=SC2086
	check "list $words equals perf" cmp -s <("$TALLY" list $words) <(perf list $words 2>/dev/null)
done
check "list --raw-dump pmu equals perf" cmp -s raw.out <(perf list --raw-dump pmu 2>/dev/null)
# the full raw dump is perf's up to perf's SDT events and metrics
"$TALLY" list --raw-dump > rawall.out
check "list --raw-dump is a prefix of perf's" \
	cmp -s rawall.out <(perf list --raw-dump 2>/dev/null | head -c "$(wc -c < rawall.out)")
# perf's description options change only its JSON events and metrics, which tally does
# not list: on every section tally lists, the same text as perf's with them
bad=""
for a in --details --long-desc -v --deprecated -d --no-desc "--cputype core" --debug; do
	# (tracepoints of one subsystem: uprobes that other tests on the machine add and
	# remove would come and go between the two listings)
	for cat in sw hw cache 'sched:*' pmu; do
		# shellcheck disable=SC2086
		cmp -s <("$TALLY" list $a $cat 2>/dev/null) <(perf list $a $cat 2>/dev/null) ||
			bad="$bad '$a $cat'"
	done
done
check "list --details/--long-desc/--deprecated/-d/--cputype/--debug equal perf${bad:+ (differ:$bad)}" \
	test -z "$bad"
"$TALLY" list --cputype core sw >/dev/null 2>err
perf list --cputype core sw >/dev/null 2>perr
check "list --cputype on a machine without hybrid PMUs: perf's warning" cmp -s err perr
