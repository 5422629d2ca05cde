# CUDA hooks: the stand-in driver and the test programs that reach it (issue 3).
# The library itself needs no CUDA toolkit; these are test artifacts only.

FAKECUDA_DIR := $(BUILD)/fakecuda
FAKECUDA     := $(FAKECUDA_DIR)/libcuda.so.1


# -Bsymbolic: like the real driver, the stand-in's calls between its own entry points (and the
# addresses its cuGetProcAddress hands out) stay inside it instead of reaching the preloaded hooks.
$(FAKECUDA): tests/cuda/fake_libcuda.c runtime/cuda/types.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -I. \
		-Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -pthread -o $@ $<

# Linked with -lcuda like a program built against the driver; found at run time through
# LD_LIBRARY_PATH (no rpath), exactly as the real driver would be.
$(BUILD)/tests/cuda_linked: tests/programs/cuda_linked.c tests/programs/cuda_common.h runtime/cuda/types.h $(FAKECUDA)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $< -o $@ -L$(FAKECUDA_DIR) -l:libcuda.so.1 -ldl -lm

# The other cuda_* programs are built by the main Makefile's rule; they share a header.
CUDA_PROGRAMS := cuda_dlopen cuda_getproc cuda_threads cuda_rtld_next cuda_none cuda_bench cuda_devices \
                 cuda_variants cuda_diag
TEST_PROGRAMS += $(filter-out $(TEST_PROGRAMS),$(CUDA_PROGRAMS) cuda_linked)
$(CUDA_PROGRAMS:%=$(BUILD)/tests/%): tests/programs/cuda_common.h runtime/cuda/types.h
CHECK_DEPS += $(FAKECUDA) $(BUILD)/tests/cuda_linked

.PHONY: cuda-check-toolkit
# Compiles the wrappers (and the driver entry points roundtrim calls itself, runtime/cuda/driver.h)
# against the toolkit's cuda.h: any signature that differs is an error.
CUDA_INCLUDE ?= /usr/local/cuda/include
cuda-check-toolkit:
	$(CC) -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -Wmissing-prototypes -Iinclude -I. \
		-DROUNDTRIM_CUDA_TOOLKIT_CHECK -D__CUDA_API_VERSION_INTERNAL -I$(CUDA_INCLUDE) \
		shim/cuda_hooks.c shim/cuda_resolve.c

# The CUDA block map's unit suite (tests/unit/check_cuda_map.c): the map alone, and many threads
# through the accounting's locked API, so it links runtime/cuda/block_map.c and account.c with a
# stub of the one setting the accounting reads, instead of the policy sources, and with
# --wrap=mmap (its test of a map out of memory). `make unit` builds it with the Makefile's unit
# rule (AddressSanitizer and UBSan), `make tsan` with mk/tsan.mk's (ThreadSanitizer: its
# concurrent stress above all).
UNIT_LINK_check_cuda_map   := runtime/core/pages.c runtime/cuda/block_map.c runtime/cuda/account.c tests/unit/stubs_cuda.c
UNIT_CFLAGS_check_cuda_map := -Wl,--wrap=mmap
TSAN_SUITES += check_cuda_map
