# make tsan: the suites of TSAN_SUITES under ThreadSanitizer: the unit suites of the runtime's
# lock-free structures and a concurrent stress of each, tests/unit/stress_NAME.c (several
# producer threads and a consumer at once, checking the totals and that nothing is torn, or lost
# beyond what the structure counts as dropped); mk/units.mk lists them, any fragment may append.
# A suite NAME is built from tests/unit/NAME.c and $(UNIT_LINK_NAME), with $(UNIT_CFLAGS_NAME). A
# report fails the suite (halt_on_error); tests/unit/tsan.supp lists the races that are by design,
# each with its reason.

# TSan does not model atomic_thread_fence, and GCC makes a fence an error here (-Wtsan with
# -Werror): code under test orders its accesses with acquire and release operations instead.
TSAN_FLAGS       := -fsanitize=thread -fno-omit-frame-pointer
TSAN_RUN_OPTIONS := halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
                    suppressions=$(CURDIR)/tests/unit/tsan.supp

.PHONY: tsan
.SECONDEXPANSION:
$(BUILD)/tsan/%: tests/unit/%.c $$(UNIT_LINK_$$*) $(BUILD)/tsan/%.d
	@mkdir -p $(dir $@)
	@$(call write_deps,$@,-I. $(CHECK_CFLAGS) $(UNIT_CFLAGS_$*),$< $(UNIT_LINK_$*))
	$(CC) $(BASE_CFLAGS) -O1 $(TSAN_FLAGS) -pthread -I. $(CHECK_CFLAGS) $(UNIT_CFLAGS_$*) $< \
	    $(UNIT_LINK_$*) -o $@ $(CHECK_LIBS)

TSAN_BINS = $(TSAN_SUITES:%=$(BUILD)/tsan/%)
tsan: deps $$(TSAN_BINS)
	@set -e; for t in $(TSAN_BINS); do \
	    TSAN_OPTIONS="$(TSAN_RUN_OPTIONS)" $$t; done

# About half a minute on two cores, built from scratch (half of it check_cuda_map's stress).
check: tsan
