# The diagnosis corpus (tests/corpus/): programs with one known behaviour each, the truth in each
# file's header. `make corpus` builds the native ones and runs them all under the library with
# its defaults; it prints the confusion table and fails on any miss. Part of make check.
# CORPUS_ARGS passes options (--load N, -v, program names).
CORPUS_C    := $(sort $(wildcard tests/corpus/*.c))
CORPUS_BINS := $(CORPUS_C:tests/corpus/%.c=$(BUILD)/corpus/%)
CORPUS_ARGS ?=

$(CORPUS_BINS): $(BUILD)/corpus/%: tests/corpus/%.c $(wildcard tests/corpus/*.h) runtime/cuda/types.h
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $< -o $@ -ldl -lm

.PHONY: corpus
# (the stand-in driver by its path: mk/cuda.mk, which names it, is read after this file)
corpus: lib $(CORPUS_BINS) $(BUILD)/fakecuda/libcuda.so.1 $(BUILD)/roundtrim-diagnose
	$(PYTHON) tests/corpus/run.py --lib $(BUILD)/libroundtrim.so --build $(BUILD) $(CORPUS_ARGS)

check: corpus
