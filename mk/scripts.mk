# The roundtrim command's helpers: the option-table printer behind `roundtrim env`, the variable
# table of docs/reference/configuration.md and roundtrim-variables(7), and the installation of
# the command, its helpers and the examples:
#   $(PREFIX)/bin/roundtrim (told where $(LIBDIR) is, relative to bin/ when under $(PREFIX))
#   $(PREFIX)/libexec/roundtrim/roundtrim-options, roundtrim-diagnose
#   $(PREFIX)/libexec/roundtrim/roundtrim_report/ (the report's Python package, which the command
#   runs as a module from that folder)
#   $(EXAMPLESDIR) (default $(PREFIX)/share/roundtrim/examples; Debian: the package's doc folder)

EXAMPLESDIR ?= $(PREFIX)/share/roundtrim/examples
ROUNDTRIM_LIBDIR_FROM_BIN = $(if $(filter $(PREFIX)/%,$(LIBDIR)),../$(patsubst $(PREFIX)/%,%,$(LIBDIR)),$(LIBDIR))

# The report's package: every module in it.
REPORT_MODULES = $(sort $(wildcard scripts/roundtrim_report/*.py))

ROUNDTRIM_OPTIONS_SRCS := scripts/tools/roundtrim-options.c $(POLICY_SRCS)

$(BUILD)/roundtrim-options: $(ROUNDTRIM_OPTIONS_SRCS)
	@mkdir -p $(dir $@)
	@$(call write_deps,$@,-I. -Iinclude $(DIST_CPPFLAGS),$(ROUNDTRIM_OPTIONS_SRCS))
	$(CC) $(BASE_CFLAGS) -O2 -I. -Iinclude $(DIST_CPPFLAGS) $(DIST_CFLAGS) $(ROUNDTRIM_OPTIONS_SRCS) \
	    $(DIST_LDFLAGS) -o $@

EXTRA_TARGETS += $(BUILD)/roundtrim-options
CHECK_DEPS += $(BUILD)/roundtrim-options

# The examples installed: files to read, and scripts to run.
EXAMPLE_FILES   := sub_start.sh Dockerfile pod.yaml
EXAMPLE_SCRIPTS := entrypoint.sh nvflare-simulator.sh flower.sh appfl.sh

.PHONY: install-scripts
install-scripts: $(BUILD)/roundtrim-options $(BUILD)/roundtrim-diagnose
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/roundtrim/roundtrim_report \
	    $(DESTDIR)$(EXAMPLESDIR)
	sed 's|^INSTALLED_LIBDIR=.*|INSTALLED_LIBDIR=$(ROUNDTRIM_LIBDIR_FROM_BIN)|' scripts/roundtrim \
	    > $(DESTDIR)$(PREFIX)/bin/roundtrim
	chmod 0755 $(DESTDIR)$(PREFIX)/bin/roundtrim
	install -m 0755 $(BUILD)/roundtrim-options $(BUILD)/roundtrim-diagnose \
	    $(DESTDIR)$(PREFIX)/libexec/roundtrim/
	install -m 0644 $(REPORT_MODULES) $(DESTDIR)$(PREFIX)/libexec/roundtrim/roundtrim_report/
	install -m 0644 $(EXAMPLE_FILES:%=scripts/examples/%) $(DESTDIR)$(EXAMPLESDIR)/
	install -m 0755 $(EXAMPLE_SCRIPTS:%=scripts/examples/%) $(DESTDIR)$(EXAMPLESDIR)/

INSTALL_HOOKS += install-scripts

.PHONY: uninstall-scripts
uninstall-scripts:
	rm -f $(DESTDIR)$(PREFIX)/bin/roundtrim
	rm -rf $(DESTDIR)$(PREFIX)/libexec/roundtrim
	rm -f $(addprefix $(DESTDIR)$(EXAMPLESDIR)/,$(EXAMPLE_FILES) $(EXAMPLE_SCRIPTS))
	-rmdir $(DESTDIR)$(EXAMPLESDIR) $(dir $(DESTDIR)$(EXAMPLESDIR)) 2>/dev/null
UNINSTALL_HOOKS += uninstall-scripts

# The option table's defaults, parsed at build time for the library (policy/options.c), so that
# a start reads values instead of parsing the same text in every process.
$(BUILD)/option-defaults: scripts/tools/option-defaults.c $(POLICY_SRCS)
	@mkdir -p $(dir $@)
	@$(call write_deps,$@,-I.,scripts/tools/option-defaults.c $(POLICY_SRCS))
	$(CC) $(BASE_CFLAGS) -O1 -I. scripts/tools/option-defaults.c $(POLICY_SRCS) -o $@

$(BUILD)/gen/option_defaults.h: $(BUILD)/option-defaults
	@mkdir -p $(dir $@)
	$< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/policy/options.o: $(BUILD)/gen/option_defaults.h
$(BUILD)/obj/policy/options.o: LIB_CFLAGS += -I$(BUILD)/gen \
    -DROUNDTRIM_DEFAULTS_HEADER='"option_defaults.h"'

$(BUILD)/unit/check_option_defaults: $(BUILD)/gen/option_defaults.h
UNIT_CFLAGS_check_option_defaults := -I$(BUILD)/gen

# The diagnosis over round figures, for `roundtrim report` (a process that wrote no diagnosis
# record): the library's policy/diagnosis.c itself.
ROUNDTRIM_DIAGNOSE_SRCS := scripts/tools/roundtrim-diagnose.c $(POLICY_SRCS)

$(BUILD)/roundtrim-diagnose: $(ROUNDTRIM_DIAGNOSE_SRCS) $(wildcard policy/*.h policy/*.def)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O2 -I. -Iinclude $(DIST_CPPFLAGS) $(DIST_CFLAGS) $(ROUNDTRIM_DIAGNOSE_SRCS) \
	    $(DIST_LDFLAGS) -o $@

EXTRA_TARGETS += $(BUILD)/roundtrim-diagnose
CHECK_DEPS += $(BUILD)/roundtrim-diagnose

# Python source the library runs inside the observed interpreter (the holder search), as a C
# string.
$(BUILD)/embed-text: scripts/tools/embed-text.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 $< -o $@

$(BUILD)/gen/holder_search_py.h: runtime/python/holder_search.py $(BUILD)/embed-text
	@mkdir -p $(dir $@)
	$(BUILD)/embed-text roundtrim_holder_search_source < $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/runtime/python/holders.o: $(BUILD)/gen/holder_search_py.h
$(BUILD)/obj/runtime/python/holders.o: LIB_CFLAGS += -I$(BUILD)/gen
