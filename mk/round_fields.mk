# The round record's contract: its keys (policy/round_fields.def), the skip reasons
# (policy/skip_reasons.def) and the diagnosis's input and words (policy/diag_input.def,
# policy/diag_causes.def) and the options' defaults (policy/options.def), printed by
# roundtrim-round-fields as the files that repeat them, committed and checked against the tables:
#   docs/reference/round-log.md            the reference page
#   scripts/roundtrim_report/fields.py     the report's field checks and skip legend
#   deploy/prometheus/roundtrim.rules.yml  its list of skip reasons that are no failure
# They are generated pages (DOC_PAGES): `make docs-check` (part of make check) regenerates them
# under $(BUILD) and fails with the difference; `make docs` copies them over the committed ones.

$(BUILD)/roundtrim-round-fields: scripts/tools/roundtrim-round-fields.c policy/round_fields.def \
                                 policy/mem_parts.def policy/skip_reasons.def \
                                 policy/diag_input.def policy/diag_causes.def \
                                 policy/diagnosis.h policy/diagnosis_fields.def \
                                 policy/options.def policy/options.h policy/event_kinds.def \
                                 policy/pressure.h \
                                 runtime/sites/native_frame_fields.def runtime/output/sites_record.h \
                                 $(wildcard runtime/output/*_fields.def)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -I. $< -o $@

ROUND_FIELDS_FILES := docs/reference/round-log.md scripts/roundtrim_report/fields.py \
                      deploy/prometheus/roundtrim.rules.yml
DOC_PAGES += $(ROUND_FIELDS_FILES)

$(BUILD)/docs/reference/round-log.md: $(BUILD)/roundtrim-round-fields
	@mkdir -p $(dir $@)
	$< --markdown > $@.tmp && mv $@.tmp $@

$(BUILD)/scripts/roundtrim_report/fields.py: $(BUILD)/roundtrim-round-fields
	@mkdir -p $(dir $@)
	$< --python > $@.tmp && mv $@.tmp $@

# The rules keep their own text; each reason!~"..." takes the list of reasons that are no
# failure.
$(BUILD)/deploy/prometheus/roundtrim.rules.yml: $(BUILD)/roundtrim-round-fields \
                                                deploy/prometheus/roundtrim.rules.yml
	@mkdir -p $(dir $@)
	reasons=$$($< --prom-expected) && \
	    sed "s/reason!~\"[^\"]*\"/reason!~\"$$reasons\"/g" deploy/prometheus/roundtrim.rules.yml \
	    > $@.tmp && mv $@.tmp $@

# The other records' keys (runtime/output's *_fields.def tables), in the log file's page between
# its markers: start-keys, setting-keys, exit-keys, pressure-keys, holders-keys, holder-keys.
EVENT_KEYS := start setting exit pressure holders holder
DOC_PAGES += docs/reference/log-file.md
$(BUILD)/docs/reference/log-file.md: docs/reference/log-file.md $(BUILD)/roundtrim-round-fields \
                                     scripts/tools/doc-fill
	@mkdir -p $(dir $@)
	@set -e; for r in $(EVENT_KEYS); do $(BUILD)/roundtrim-round-fields --event-keys $$r \
	    > $@.$$r-keys; done
	@$(DOC_FILL) $< $(foreach r,$(EVENT_KEYS),$(r)-keys $@.$(r)-keys) > $@.tmp && mv $@.tmp $@

# The diagnosis and sites records' keys (policy/diagnosis_fields.def,
# runtime/output/sites_fields.def) in the diagnosis page.
DIAG_KEYS := diagnosis diagnosis-reasons forecast advice-sites sites site py-frame native-frame
DOC_PAGES += docs/diagnosis.md
$(BUILD)/docs/diagnosis.md: docs/diagnosis.md $(BUILD)/roundtrim-round-fields scripts/tools/doc-fill
	@mkdir -p $(dir $@)
	@set -e; for r in $(DIAG_KEYS); do $(BUILD)/roundtrim-round-fields --event-keys $$r \
	    > $@.$$r-keys; done
	@$(DOC_FILL) $< $(foreach r,$(DIAG_KEYS),$(r)-keys $@.$(r)-keys) > $@.tmp && mv $@.tmp $@
