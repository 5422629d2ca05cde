# Benchmarks (issue 6): programs of tests/bench/ become build/tests/<name>, next to the test
# programs, so that the integration tests can run them once at a tiny size; `make bench` runs
# bench/bench.py, which writes docs/performance.md and docs/bench/*.png.
#
# -O2 (not the test programs' -O1): the benchmark loop should be as lean as a real program's, so
# that the shim's share of each malloc/free pair is not hidden by a slow loop. -fno-builtin keeps
# GCC from removing malloc/free pairs.

BENCH_PROGRAMS := $(patsubst tests/bench/%.c,%,$(sort $(wildcard tests/bench/*.c)))
BENCH_BINS     := $(BENCH_PROGRAMS:%=$(BUILD)/tests/%)
BENCH_CFLAGS   := $(BASE_CFLAGS) -O2 -fno-builtin -pthread -Iinclude

$(BENCH_BINS): $(BUILD)/tests/%: tests/bench/%.c include/roundtrim.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -ldl -lm

CHECK_DEPS += $(BENCH_BINS)
bench: $(BENCH_BINS)

# The calibration interposer (tests/bench/interposer/): the floor of any counting interposer,
# measured beside roundtrim by bench/bench.py. Built with the library's optimisation level.
FLOOR_INTERPOSER := $(BUILD)/tests/libfloor_interposer.so
$(FLOOR_INTERPOSER): tests/bench/interposer/floor_interposer.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -fPIC -shared -fvisibility=hidden $< -o $@

CHECK_DEPS += $(FLOOR_INTERPOSER)
bench: $(FLOOR_INTERPOSER)

# An empty preloaded library: the start-up floor of any LD_PRELOAD, beside roundtrim's start-up.
EMPTY_PRELOAD := $(BUILD)/tests/libempty_preload.so
$(EMPTY_PRELOAD): tests/bench/interposer/empty_preload.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -fPIC -shared $< -o $@

CHECK_DEPS += $(EMPTY_PRELOAD)
bench: $(EMPTY_PRELOAD)
