# make debug: the library built with ROUNDTRIM_DEBUG into $(BUILD)/debug, where the fast path's
# rules are checked (runtime/alloc/fast_modes.h: the table of its modes and their transitions),
# and the integration tests that take the fast path through its modes run with it: glibc and
# jemalloc, counting and sampling, a worker started at a signal handler's request, fork, exec,
# many threads. A broken rule aborts the program, naming the rule and where: the test fails.
# (The unit suites link no hook: the modes are the shim's.)
DEBUG_BUILD := $(BUILD)/debug
DEBUG_TESTS := tests/integration/test_thread_counts.py tests/integration/test_sites.py \
               tests/integration/test_startup.py tests/integration/test_core.py
DEBUG_SELECT := signal or jemalloc or fork or exec or counted or threads or sampl

.PHONY: debug
# (CHECK_DEPS is complete only once every fragment is read: built from the recipe.)
debug: deps lib $(TEST_PROGRAMS:%=$(BUILD)/tests/%)
	@$(MAKE) --no-print-directory $(CHECK_DEPS)
	@$(MAKE) --no-print-directory -j2 BUILD=$(DEBUG_BUILD) DIST_CPPFLAGS=-DROUNDTRIM_DEBUG \
	    DIST_CFLAGS=-O1 lib >/dev/null
	ROUNDTRIM_TEST_LIB=$(CURDIR)/$(DEBUG_BUILD)/libroundtrim.so $(PYTHON) -m pytest -q \
	    -p no:cacheprovider $(DEBUG_TESTS) -k '$(DEBUG_SELECT)'
check: debug
