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
                 cuda_variants
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
# stub of the one setting the accounting reads, instead of the policy sources the Makefile's rule
# links, and with --wrap=mmap (its test of a map out of memory). `make unit` builds it with this
# rule (AddressSanitizer and UBSan).
UNIT_LINK_check_cuda_map   := runtime/core/pages.c runtime/cuda/block_map.c runtime/cuda/account.c tests/unit/stubs_cuda.c
UNIT_CFLAGS_check_cuda_map := -Wl,--wrap=mmap

$(BUILD)/unit/check_cuda_map: tests/unit/check_cuda_map.c $(UNIT_LINK_check_cuda_map) \
                              $(HEADERS) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 $(SAN_FLAGS) -pthread -I. $(CHECK_CFLAGS) \
	    $(UNIT_CFLAGS_check_cuda_map) $< $(UNIT_LINK_check_cuda_map) -o $@ $(CHECK_LIBS)

# ---- ThreadSanitizer: the same suite, its concurrent stress above all (make cuda-tsan) ----
# To fold into mk/tsan.mk once it lands: `TSAN_SUITES += check_cuda_map` stays, the rule and the
# cuda-tsan target below go (tsan.mk's $(BUILD)/tsan/% rule builds tests/unit/NAME.c with
# $(UNIT_LINK_NAME) and $(UNIT_CFLAGS_NAME) the same way).
TSAN_SUITES += check_cuda_map
CUDA_TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer

$(BUILD)/tsan/check_cuda_map: tests/unit/check_cuda_map.c $(UNIT_LINK_check_cuda_map) \
                              $(HEADERS) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 $(CUDA_TSAN_FLAGS) -pthread -I. $(CHECK_CFLAGS) \
	    $(UNIT_CFLAGS_check_cuda_map) $< $(UNIT_LINK_check_cuda_map) -o $@ $(CHECK_LIBS)

.PHONY: cuda-tsan
cuda-tsan: deps $(BUILD)/tsan/check_cuda_map
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" $(BUILD)/tsan/check_cuda_map
