# Generated documentation pages. A page made from the code's own tables is declared with
# `DOC_PAGES += docs/PATH.md` and a rule that writes $(BUILD)/docs/PATH.md; the top-level Makefile's
# `make docs` copies each over the committed page and `make docs-check` (part of make check)
# fails with a diff when one differs. The pages here keep their prose by hand and have generated
# parts between markers, filled by scripts/tools/doc-fill.

DOC_FILL := $(PYTHON) scripts/tools/doc-fill

# The variable table, from the option table the library parses.
DOC_PAGES += docs/reference/configuration.md
$(BUILD)/docs/reference/configuration.md: docs/reference/configuration.md $(BUILD)/roundtrim-options \
    scripts/tools/doc-fill
	@mkdir -p $(dir $@)
	@$(BUILD)/roundtrim-options --format markdown > $@.options
	@$(DOC_FILL) $< options $@.options > $@.tmp && mv $@.tmp $@

# The command's help texts, at a fixed width (the option columns do not depend on the terminal).
DOC_HELP_COMMANDS := top run round env cdi report
$(BUILD)/docs/reference/command.md: docs/reference/command.md scripts/roundtrim \
    $(wildcard scripts/roundtrim_report/*.py) scripts/tools/doc-fill
	@mkdir -p $(dir $@)
	@set -e; for c in $(DOC_HELP_COMMANDS); do \
	    if [ $$c = top ]; then a=--help; else a="$$c --help"; fi; \
	    { echo '```text'; COLUMNS=80 scripts/roundtrim $$a; echo '```'; } > $@.help-$$c; \
	done
	@$(DOC_FILL) $< $(foreach c,$(DOC_HELP_COMMANDS),help-$(c) $@.help-$(c)) > $@.tmp && mv $@.tmp $@
DOC_PAGES += docs/reference/command.md
