# Start-up cost: the check of the loader's tables (runtime/core/loader_tables.c) against dlsym,
# a preloaded library built from the same sources as the library's (tests/integration/
# test_startup.py runs it in several programs).
LOADER_TABLES_CHECK := $(BUILD)/tests/libloader_tables_check.so
LOADER_TABLES_SRCS  := tests/programs/libloader_tables_check.c runtime/core/loader_tables.c \
                       runtime/core/env_scan.c runtime/core/loaded_object.c
$(LOADER_TABLES_CHECK): $(LOADER_TABLES_SRCS) runtime/core/loader_tables.h runtime/core/loaded_object.h \
                        runtime/core/env_scan.h
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -fPIC -shared -fvisibility=hidden -I. $(LOADER_TABLES_SRCS) -o $@ -ldl

CHECK_DEPS += $(LOADER_TABLES_CHECK)
