# make cpython-check: CPython's longer suites (test_subprocess, test_threading) run with and
# without the shim, which must give the same verdicts. make check runs the shorter ones
# (test_signal, test_faulthandler) through the same test.
.PHONY: cpython-check
cpython-check: deps lib $(TEST_PROGRAMS:%=$(BUILD)/tests/%) $(CHECK_DEPS)
	CPYTHON_SUITES="test_subprocess test_threading" $(PYTHON) -m pytest -q -p no:cacheprovider \
	    tests/integration/test_hardening_shim.py -k cpython

# make cpython-wide: about 120 modules of CPython's suite (tests/cpython/modules.txt, one process
# each) bare, preloaded with default settings, and preloaded with a cleanup every round and a
# timer round every second, each also under -X dev; the verdicts are compared with the bare run of
# the same mode and a table written to $(CPYTHON_WIDE_OUT)/table.md. Not part of make check: it
# takes about an hour on two cores. Runs already in $(CPYTHON_WIDE_OUT) are kept (resume);
# CPYTHON_WIDE_ARGS passes options (--force, -c bare,rt, module names, -j).
CPYTHON_WIDE_OUT  ?= /tmp/roundtrim-wide
CPYTHON_WIDE_ARGS ?=
.PHONY: cpython-wide
cpython-wide: deps lib
	nice -n 10 $(PYTHON) tests/cpython/compare.py --out $(CPYTHON_WIDE_OUT) --lib $(BUILD)/libroundtrim.so $(CPYTHON_WIDE_ARGS)
