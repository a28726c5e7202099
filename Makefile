# Front door for tally. The real build is Meson (meson.build); this file sets up the
# machine (scripts/deps.sh), configures build directories and runs things.
#   make            build build/tally and libtally
#   make run        set up, build, and run the demo (or: make run ARGS='stat -- ls')
#   make check      set up, build, run the suite, then again under ASan+UBSan
#   make bench      benchmarks against perf (writes bench/RESULTS.md)
#   make fuzz       run every fuzz target for FUZZ_SECONDS each
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 120
ARGS ?=

.PHONY: all deps build run check check-plain check-asan bench fuzz clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) >/dev/null

build: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD) >/dev/null || ninja -C $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug >/dev/null
	@touch $(ASAN_BUILD)/.asan

run: build
ifeq ($(strip $(ARGS)),)
	@scripts/demo.sh $(BUILD)
else
	$(BUILD)/tally $(ARGS)
endif

check: build $(ASAN_BUILD)/build.ninja
	@ninja -C $(ASAN_BUILD) >/dev/null || ninja -C $(ASAN_BUILD)
	@scripts/check.sh $(BUILD) $(ASAN_BUILD)

bench: build
	@bench/run.sh $(BUILD)

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
