# Test artifacts of the core beyond plain programs.
CHECK_DEPS += $(BUILD)/tests/libearly_handler.so

$(BUILD)/tests/libearly_handler.so: tests/programs/libearly_handler.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared $< -o $@
