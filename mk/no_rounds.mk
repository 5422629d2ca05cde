# The library with its no-rounds note due after 2 s instead of minutes
# (runtime/output/no_rounds.h), for the integration tests of that note: the same objects, that
# one compiled again with the shorter wait.
NO_ROUNDS_QUICK     := $(BUILD)/tests/libroundtrim_quick_note.so
NO_ROUNDS_QUICK_OBJ := $(BUILD)/tests/obj/no_rounds_quick.o

$(NO_ROUNDS_QUICK_OBJ): runtime/output/no_rounds.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -DROUNDTRIM_NO_ROUNDS_AFTER_S=2 $(DEP_FLAGS) -c $< -o $@

$(NO_ROUNDS_QUICK): $(filter-out $(BUILD)/obj/runtime/output/no_rounds.o,$(LIB_OBJS)) $(NO_ROUNDS_QUICK_OBJ) \
                    | $(LIB_STUBS) shim/musl_guard.map
	$(CC) -shared -Wl,-soname,libroundtrim.so -Wl,-z,nodelete -Wl,--no-undefined -o $@ $^ $(LIB_LIBS)

-include $(wildcard $(NO_ROUNDS_QUICK_OBJ:.o=.d))
CHECK_DEPS += $(NO_ROUNDS_QUICK)
