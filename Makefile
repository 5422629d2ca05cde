# roundtrim: make (library), make check (all tests), make demo, make bench, make install,
# make deb (the Debian package, mk/deb.mk), make docs (the generated pages of docs/).

CC        ?= cc
PYTHON    ?= /usr/bin/python3
PREFIX    ?= /usr/local
DESTDIR   ?=
BUILD     ?= build
# Where `make install` puts the library (Debian: $(PREFIX)/lib/<multiarch triplet>); the installed
# roundtrim command is told this folder (mk/scripts.mk).
LIBDIR    ?= $(PREFIX)/lib
# Flags a distribution adds to what it ships (debian/rules passes dpkg-buildflags' hardening
# flags): the library and roundtrim-options take them, the test programs do not.
DIST_CPPFLAGS ?=
DIST_CFLAGS   ?=
DIST_LDFLAGS  ?=
# The version, written once: in the roundtrim command (debian/changelog must agree).
ROUNDTRIM_VERSION := $(shell sed -n 's/^ROUNDTRIM_VERSION=//p' scripts/roundtrim)

WARN      := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -g
LIB_CFLAGS  := $(BASE_CFLAGS) -O2 -fPIC -fvisibility=hidden -ftls-model=initial-exec \
               -fno-semantic-interposition -I. -Iinclude $(DIST_CPPFLAGS) $(DIST_CFLAGS)
# The version script gives musl's loader its reason to decline the library (shim/musl_guard.c).
# The link-time stand-ins of libpthread and libdl come before libc (shim/link_stubs/): the
# references to the functions glibc 2.34 moved into libc get no version, and bind at run time to
# the oldest version of whichever of the image's libc, libpthread and libdl has them.
LIB_STUBS   := $(BUILD)/stubs/libpthread.so.0 $(BUILD)/stubs/libdl.so.2
LIB_LIBS    := -Wl,--version-script=shim/musl_guard.map \
               -Wl,--push-state,--no-as-needed $(LIB_STUBS) -Wl,--pop-state
PROG_CFLAGS := $(BASE_CFLAGS) -O1 -fno-builtin -pthread -Iinclude
SAN_FLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Sources left out of the library (for building parts in isolation).
EXCLUDE   ?=
LIB_SRCS  := $(filter-out $(EXCLUDE),$(sort $(wildcard shim/*.c runtime/*.c runtime/*/*.c policy/*.c))) $(EXTRA_LIB_SRCS)
LIB_ASM   := $(filter-out $(EXCLUDE),$(sort $(wildcard shim/*.S)))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_ASM:%.S=$(BUILD)/obj/%.o)
POLICY_SRCS := $(sort $(wildcard policy/*.c))
# Header dependencies come from the compiler: each object's .d file names the headers it
# included (-MMD, -MP: a deleted header is no error), so a header edit rebuilds what uses it.
# Rules that compile several sources into one program write theirs first with write_deps. A
# target without its .d file yet (built before this rule) is built again once.
DEP_FLAGS := -MMD -MP
# write_deps TARGET,FLAGS,SOURCES: one rule per .c source of TARGET, into TARGET.d.
write_deps = $(CC) -MM -MP -MT $(1) $(2) $(filter %.c,$(3)) > $(1).d.tmp && mv $(1).d.tmp $(1).d

UNIT_SRCS := $(sort $(wildcard tests/unit/check_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

# Test programs: every tests/programs/NAME.c becomes build/tests/NAME; fragments may add more.
TEST_PROGRAMS := $(patsubst tests/programs/%.c,%,$(filter-out tests/programs/lib%,\
                   $(sort $(wildcard tests/programs/*.c))))
CHECK_DEPS    :=
DOC_PAGES     :=
EXTRA_TARGETS :=
INSTALL_HOOKS :=
UNINSTALL_HOOKS :=

.PHONY: all lib check unit integration demo bench install uninstall deps format clean
all: lib

include $(sort $(wildcard mk/*.mk))

# The generated documentation pages, after every fragment has declared its own in DOC_PAGES (a
# rule's prerequisites are expanded where it is read). `make docs` writes each over the committed
# page; `make docs-check`, part of make check, fails with a diff when one differs from the code.
.PHONY: docs docs-check
docs: $(DOC_PAGES:%=$(BUILD)/%)
	@for p in $(DOC_PAGES); do \
	    cmp -s $(BUILD)/$$p $$p || { cp $(BUILD)/$$p $$p && echo "docs: wrote $$p"; }; done
docs-check: $(DOC_PAGES:%=$(BUILD)/%)
	@rc=0; for p in $(DOC_PAGES); do diff -u $$p $(BUILD)/$$p || rc=1; done; \
	    [ $$rc = 0 ] || echo "docs-check: these pages differ from the code; run 'make docs'" >&2; \
	    exit $$rc
check: docs-check

all: $(EXTRA_TARGETS)

lib: $(BUILD)/libroundtrim.so

$(BUILD)/obj/%.o: %.c $(BUILD)/obj/%.d
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) $(DEP_FLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

# -z nodelete: the library is never unloaded, whatever dlclose is called on it.
$(BUILD)/libroundtrim.so: $(LIB_OBJS) shim/musl_guard.map $(LIB_STUBS)
	$(CC) -shared -Wl,-soname,libroundtrim.so -Wl,-z,nodelete -Wl,--no-undefined $(DIST_LDFLAGS) \
	    -o $@ $(LIB_OBJS) $(LIB_LIBS)

$(BUILD)/stubs/libpthread.so.0: shim/link_stubs/libpthread.c shim/link_stubs/stand_in.h
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -nostdlib -Wl,-soname,libpthread.so.0 -o $@ $<

$(BUILD)/stubs/libdl.so.2: shim/link_stubs/libdl.c shim/link_stubs/stand_in.h
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -nostdlib -Wl,-soname,libdl.so.2 -o $@ $<

$(BUILD)/tests/%: tests/programs/%.c include/roundtrim.h $(wildcard tests/programs/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $< -o $@ -ldl -lm

# Unit suites run under AddressSanitizer and UBSan. A suite links the pure policy code or, where
# UNIT_LINK_<suite> names them (mk/units.mk), the runtime files under test and test-owned stubs
# of what they call; UNIT_CFLAGS_<suite> adds flags. Both are read when the rule is used
# (secondary expansion): any fragment may set them.
unit_link = $(or $(UNIT_LINK_$(1)),$(POLICY_SRCS))
.SECONDEXPANSION:
$(BUILD)/unit/%: tests/unit/%.c $$(call unit_link,$$*) $(BUILD)/unit/%.d
	@mkdir -p $(dir $@)
	@$(call write_deps,$@,-I. $(CHECK_CFLAGS) $(UNIT_CFLAGS_$*),$< $(call unit_link,$*))
	$(CC) $(BASE_CFLAGS) -O1 $(SAN_FLAGS) -pthread -I. $(CHECK_CFLAGS) $(UNIT_CFLAGS_$*) $< \
	    $(call unit_link,$*) -o $@ $(CHECK_LIBS)

deps:
	@scripts/tools/install-deps

# Each suite's output is also kept in $(BUILD)/unit-results.txt, for the totals that end make check.
unit: deps $(UNIT_BINS)
	@set -e; : > $(BUILD)/unit-results.txt; for t in $(UNIT_BINS); do \
	    rc=0; $$t > $(BUILD)/unit-last.txt 2>&1 || rc=$$?; cat $(BUILD)/unit-last.txt; \
	    cat $(BUILD)/unit-last.txt >> $(BUILD)/unit-results.txt; [ $$rc = 0 ] || exit $$rc; done

# -rs: the skipped tests with their reasons; the JUnit report feeds the totals of make check.
integration: deps lib $(TEST_PROGRAMS:%=$(BUILD)/tests/%) $(CHECK_DEPS)
	$(PYTHON) -m pytest -q -rs -p no:cacheprovider --junitxml=$(BUILD)/integration.xml \
	    tests/integration

# The integration tests run last, alone: timing-sensitive tests must not share the two cores with
# the sanitizer suites (fragments add those and `make layers` as prerequisites of check). It
# ends with the totals of the unit suites and the integration tests, and the skipped tests.
check: unit
	@rm -f $(BUILD)/integration.xml; rc=0; \
	    $(MAKE) --no-print-directory integration || rc=$$?; \
	    $(PYTHON) scripts/tools/test-totals $(BUILD); exit $$rc

demo: deps lib $(BUILD)/tests/fl_workload $(EXTRA_TARGETS)
	@scripts/tools/demo

bench: deps lib $(TEST_PROGRAMS:%=$(BUILD)/tests/%) $(CHECK_DEPS)
	@bench/bench.py

install: lib $(EXTRA_TARGETS) $(INSTALL_HOOKS)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/libroundtrim.so $(DESTDIR)$(LIBDIR)/libroundtrim.so
	install -m 0644 include/roundtrim.h $(DESTDIR)$(PREFIX)/include/roundtrim.h

# With the PREFIX, LIBDIR and DESTDIR of the install: removes every file it put there.
uninstall: $(UNINSTALL_HOOKS)
	rm -f $(DESTDIR)$(LIBDIR)/libroundtrim.so $(DESTDIR)$(PREFIX)/include/roundtrim.h

# The .d files as targets of their own without a recipe: one not there yet makes its target
# build again.
DEP_FILES := $(LIB_SRCS:%.c=$(BUILD)/obj/%.d) $(UNIT_BINS:=.d) $(TSAN_BINS:=.d)
$(DEP_FILES):
-include $(wildcard $(DEP_FILES) $(BUILD)/*.d)

format:
	clang-format -i $(wildcard shim/*.[ch] runtime/*.[ch] runtime/*/*.[ch] policy/*.[ch] include/*.h \
	    tests/unit/*.c tests/programs/*.c scripts/tools/*.c tests/cuda/*.c)

clean:
	rm -rf $(BUILD)
