# Programs that embed CPython (tests/programs/embed_*.c) link libpython: they build only where
# its headers are installed (python3-dev, scripts/tools/install-deps); the tests that run them skip
# with the reason when they are missing. PY_EMBED_CONFIG is Debian's python3-config, not whatever
# python3-config comes first on PATH (a pyenv one would link another libpython).
PY_EMBED_CONFIG ?= /usr/bin/python3-config
PY_EMBED_CFLAGS := $(shell $(PY_EMBED_CONFIG) --includes 2>/dev/null)
PY_EMBED_LIBS   := $(shell $(PY_EMBED_CONFIG) --embed --ldflags 2>/dev/null)
PY_EMBED_HEADER := $(firstword $(wildcard $(patsubst -I%,%/Python.h,$(filter -I%,$(PY_EMBED_CFLAGS)))))
EMBED_PROGRAMS  := $(patsubst tests/programs/%.c,%,$(wildcard tests/programs/embed_*.c))
TEST_PROGRAMS   := $(filter-out $(EMBED_PROGRAMS),$(TEST_PROGRAMS))
ifneq ($(PY_EMBED_HEADER),)
CHECK_DEPS += $(EMBED_PROGRAMS:%=$(BUILD)/tests/%)
endif

$(EMBED_PROGRAMS:%=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $(PY_EMBED_CFLAGS) $< -o $@ $(PY_EMBED_LIBS) -ldl
