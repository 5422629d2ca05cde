# Test artifacts of the core beyond plain programs.
CHECK_DEPS += $(BUILD)/tests/libearly_handler.so $(BUILD)/tests/libearly_exec.so

$(BUILD)/tests/libearly_handler.so $(BUILD)/tests/libearly_exec.so: $(BUILD)/tests/%.so: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@

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

# The layers: policy/ is pure; runtime/ never reaches up into shim/, which uses both.
.PHONY: layers
layers:
	@! grep -n '#include "\(shim\|runtime\)/' policy/*.[ch] || { echo "policy/ includes another layer" >&2; exit 1; }
	@! grep -n '#include "shim/' runtime/*.[ch] || { echo "runtime/ includes shim/" >&2; exit 1; }
check: layers
