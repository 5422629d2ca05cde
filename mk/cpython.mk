# make cpython-check: CPython's longer suites (test_subprocess, test_threading) run with and
# without the shim, which must give the same verdicts. make check runs the shorter ones
# (test_signal, test_faulthandler) through the same test.
.PHONY: cpython-check
cpython-check: deps lib $(TEST_PROGRAMS:%=$(BUILD)/tests/%) $(CHECK_DEPS)
	CPYTHON_SUITES="test_subprocess test_threading" $(PYTHON) -m pytest -q -p no:cacheprovider \
	    tests/integration/test_hardening_shim.py -k cpython
