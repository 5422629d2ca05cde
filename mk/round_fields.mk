# The round record's contract: its keys (policy/round_fields.def) and the skip reasons
# (policy/skip_reasons.def) printed by roundtrim-round-fields as the files that repeat them,
# committed and checked against the tables:
#   docs/reference/round-log.md            the reference page
#   scripts/roundtrim_report/fields.py     the report's field checks and skip legend
#   deploy/prometheus/roundtrim.rules.yml  its list of skip reasons that are no failure
# `make round-fields-check` (part of make check) regenerates them under $(BUILD) and fails with
# the difference; `make round-fields` copies the regenerated files over the committed ones.

$(BUILD)/roundtrim-round-fields: scripts/roundtrim-round-fields.c policy/round_fields.def \
                                 policy/skip_reasons.def
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

.PHONY: round-fields round-fields-check
round-fields: $(ROUND_FIELDS_FILES:%=$(BUILD)/%)
	@for f in $(ROUND_FIELDS_FILES); do \
	    cmp -s $(BUILD)/$$f $$f || { mkdir -p $$(dirname $$f) && cp $(BUILD)/$$f $$f; }; done

round-fields-check: $(ROUND_FIELDS_FILES:%=$(BUILD)/%)
	@rc=0; for f in $(ROUND_FIELDS_FILES); do \
	    diff -u $$f $(BUILD)/$$f || { rc=1; \
	        echo "round-fields-check: $$f differs from policy/round_fields.def or" \
	             "policy/skip_reasons.def: run make round-fields"; }; \
	done; exit $$rc

check: round-fields-check

# The report's field module, installed beside the report (its package's folder).
.PHONY: install-round-fields
install-round-fields:
	install -d $(DESTDIR)$(PREFIX)/libexec/roundtrim/roundtrim_report
	install -m 0644 scripts/roundtrim_report/fields.py $(DESTDIR)$(PREFIX)/libexec/roundtrim/roundtrim_report/

INSTALL_HOOKS += install-round-fields
