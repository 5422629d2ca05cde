# What the reader's Python API lookups need from the runtime's core (the loader tables).
PY_FRAMES_CORE := runtime/core/loader_tables.c runtime/core/env_scan.c runtime/core/loaded_object.c \
                  runtime/core/real_dlsym.c

# The Python frame reader in a library the tests load into each interpreter through ctypes,
# with UBSan watching its reads; and the same reader inside malloc, preloaded into Python (no
# sanitizer there: it replaces malloc).
PY_FRAMES_PROBE := $(BUILD)/tests/libpy_frames_probe.so
PY_FRAMES_MALLOC := $(BUILD)/tests/libpy_frames_malloc.so
CHECK_DEPS += $(PY_FRAMES_PROBE) $(PY_FRAMES_MALLOC)
$(PY_FRAMES_PROBE): PY_FRAMES_FLAGS := -fsanitize=undefined -fno-sanitize-recover=all
$(PY_FRAMES_PROBE) $(PY_FRAMES_MALLOC): $(BUILD)/tests/lib%.so: tests/programs/lib%.c \
        runtime/python/frames.c runtime/python/api.c runtime/python/arenas.c policy/parse.c \
        policy/skip_reason.c \
        runtime/python/code_origin.c policy/code_origin.c $(PY_FRAMES_CORE) \
        runtime/python/frames.h runtime/python/code_origin.h policy/code_origin.h \
        runtime/python/api.h policy/skip_reason.h policy/skip_reasons.def
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -fPIC -shared -pthread -I. $(PY_FRAMES_FLAGS) $(filter %.c,$^) \
	    -o $@ -ldl -Wl,--no-undefined
