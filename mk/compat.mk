# make compat: libraries and programs nobody here wrote (numba/llvmlite JIT, SciPy,
# scikit-learn, pandas, h5py, PyTorch, gRPC, openssl, sqlite, a C++ program that runs out of
# memory), each bare and under roundtrim, with identical results required
# (tests/compat/run.py). Part of make check.
.PHONY: compat
COMPAT_PROGRAMS := $(BUILD)/compat/bad_alloc
$(BUILD)/compat/bad_alloc: tests/compat/bad_alloc.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -pthread $< -o $@
compat: deps lib $(COMPAT_PROGRAMS)
	@rm -f $(BUILD)/compat-results.txt; $(PYTHON) tests/compat/run.py $(BUILD)
check: compat
