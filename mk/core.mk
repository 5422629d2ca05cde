# ---- the layer rule (checked by make check) ---------------------------------------------------

# The layers, lowest first: a file may include its own folder's headers and those of the folders
# before it, nothing above (scripts/tools/check-layers). policy/ is pure; the runtime's folders go from
# the settings and primitives up to the round pipeline; runtime/lifecycle.c starts them all; the
# hooks in shim/ sit on top.
LAYERS := policy runtime/core runtime/alloc runtime/threads runtime/cuda runtime/boundary \
          runtime/python runtime/sites runtime/output runtime/rounds runtime shim
.PHONY: layers print-layers
print-layers:
	@echo $(LAYERS)
layers:
	@$(PYTHON) scripts/tools/check-layers $(LAYERS)
check: layers

# ---- test artifacts of the core beyond plain programs -----------------------------------------

CHECK_DEPS += $(BUILD)/tests/libearly_handler.so $(BUILD)/tests/libearly_exec.so

$(BUILD)/tests/libearly_handler.so $(BUILD)/tests/libearly_exec.so: $(BUILD)/tests/%.so: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@

# Dear page-release calls, emulated (tests/programs/libslow_release.c): the trim tests and the
# benchmark preload it beside the library.
CHECK_DEPS += $(BUILD)/tests/libslow_release.so
$(BUILD)/tests/libslow_release.so: tests/programs/libslow_release.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@ -ldl

# roundtrim's Python helper held at the start of PyGILState_Ensure
# (tests/programs/libslow_py_helper.c): the tests of programs that exit right after a round.
CHECK_DEPS += $(BUILD)/tests/libslow_py_helper.so
$(BUILD)/tests/libslow_py_helper.so: tests/programs/libslow_py_helper.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@ -ldl

# A tool that puts its own allocator past roundtrim's object-allocator wrapper
# (tests/integration/test_sites_objects.py).
CHECK_DEPS += $(BUILD)/tests/libobject_allocator_tool.so
$(BUILD)/tests/libobject_allocator_tool.so: tests/programs/libobject_allocator_tool.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@ -ldl

# C++ operator new/delete under the shim (the library itself stays pure C).
CXX ?= g++
CHECK_DEPS += $(BUILD)/tests/cxx_counts
$(BUILD)/tests/cxx_counts: tests/programs/cxx_counts.cpp tests/programs/round_sync.h
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fno-builtin -Iinclude $< -o $@ -ldl

# The next operator new may throw std::bad_alloc through the forwarding frame.
$(BUILD)/obj/shim/cxx_hooks.o: LIB_CFLAGS += -fexceptions

CHECK_DEPS += $(BUILD)/tests/own_allocator
$(BUILD)/tests/own_allocator: tests/programs/own_allocator.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fno-builtin $< -o $@

# A C++ library and the C program that opens it late (dlopen) or is linked with it: the operator
# new and delete forms keep C++ semantics whoever loads libstdc++, and whenever.
# (build/tests/cxx_semantics, the plain test program, is the one that opens it.)
CHECK_DEPS += $(BUILD)/tests/libcxx_semantics.so $(BUILD)/tests/cxx_semantics_linked
$(BUILD)/tests/libcxx_semantics.so: tests/programs/libcxx_semantics.cpp tests/programs/round_sync.h
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fno-builtin -fPIC -shared $< -o $@ -ldl
$(BUILD)/tests/cxx_semantics_linked: tests/programs/cxx_semantics.c $(BUILD)/tests/libcxx_semantics.so
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -DLINKED $< -o $@ -L$(BUILD)/tests -lcxx_semantics -Wl,-rpath,'$$ORIGIN' -ldl

# The same checks in a library built on libc++ (whose operator new, new handler and exceptions
# live in libc++abi.so.1): compiled against the ABI declarations of <new>, which both runtimes
# share, and linked with libc++'s run-time libraries alone (libc++-dev, the headers, conflicts
# with libunwind-dev). Built where libc++1 and libc++abi1 are installed; the tests skip elsewhere.
LIBCXX_SO    := $(shell $(CXX) -print-file-name=libc++.so.1)
LIBCXXABI_SO := $(shell $(CXX) -print-file-name=libc++abi.so.1)
ifneq ($(findstring /,$(LIBCXX_SO)),)
ifneq ($(findstring /,$(LIBCXXABI_SO)),)
CHECK_DEPS += $(BUILD)/tests/libcxx_semantics_libcxx.so
endif
endif
$(BUILD)/tests/libcxx_semantics_libcxx.so: tests/programs/libcxx_semantics.cpp tests/programs/round_sync.h
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fno-builtin -fPIC -c $< -o $@.o
	$(CC) -shared $@.o -o $@ -l:libc++.so.1 -l:libc++abi.so.1 -ldl
	@rm -f $@.o

# An allocator opened RTLD_GLOBAL that supplies operator new, and a plugin using it: built on
# libstdc++, and with no C++ runtime (linked by the C driver, so nothing but libc comes with it).
CHECK_DEPS += $(BUILD)/tests/libcxx_pool_new.so $(BUILD)/tests/libcxx_plugin_new.so \
              $(BUILD)/tests/libcxx_plugin_new_bare.so
$(BUILD)/tests/libcxx_pool_new.so: tests/programs/libcxx_pool_new.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@
$(BUILD)/tests/libcxx_plugin_new.so: tests/programs/libcxx_plugin_new.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@
$(BUILD)/tests/libcxx_plugin_new_bare.so: tests/programs/libcxx_plugin_new.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O1 -g -Wall -Wextra -Werror -fPIC -c $< -o $@.o
	$(CC) -shared $@.o -o $@
	@rm -f $@.o
