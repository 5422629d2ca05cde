# The manual pages, generated, never written by hand: roundtrim(1) from the command's own help
# texts (scripts/tools/roundtrim-man), roundtrim-variables(7) from the option table
# (roundtrim-options --format man). `make man` writes them to $(BUILD)/man/ to read
# (man -l build/man/roundtrim.1); `make install` generates them again into $(MANDIR), since
# roundtrim(1) names the folders of that installation.

MANDIR ?= $(PREFIX)/share/man

# man_roundtrim_1 OUT: roundtrim(1) for this installation's folders.
man_roundtrim_1 = scripts/tools/roundtrim-man scripts/roundtrim $(ROUNDTRIM_VERSION) $(LIBDIR) \
    $(PREFIX)/libexec/roundtrim $(EXAMPLESDIR) > $(1).tmp && mv $(1).tmp $(1)
man_roundtrim_variables_7 = $(BUILD)/roundtrim-options --format man \
    --source "roundtrim $(ROUNDTRIM_VERSION)" > $(1).tmp && mv $(1).tmp $(1)

.PHONY: man install-man
man: $(BUILD)/roundtrim-options
	@mkdir -p $(BUILD)/man
	$(call man_roundtrim_1,$(BUILD)/man/roundtrim.1)
	$(call man_roundtrim_variables_7,$(BUILD)/man/roundtrim-variables.7)

install-man: $(BUILD)/roundtrim-options
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	$(call man_roundtrim_1,$(DESTDIR)$(MANDIR)/man1/roundtrim.1)
	$(call man_roundtrim_variables_7,$(DESTDIR)$(MANDIR)/man7/roundtrim-variables.7)
	chmod 0644 $(DESTDIR)$(MANDIR)/man1/roundtrim.1 $(DESTDIR)$(MANDIR)/man7/roundtrim-variables.7

INSTALL_HOOKS += install-man

.PHONY: uninstall-man
uninstall-man:
	rm -f $(DESTDIR)$(MANDIR)/man1/roundtrim.1 $(DESTDIR)$(MANDIR)/man7/roundtrim-variables.7
UNINSTALL_HOOKS += uninstall-man
