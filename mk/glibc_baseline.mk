# make glibc-versions, part of make check: the library asks the loader for no glibc symbol
# version newer than the baseline (docs/compatibility.md), so that an image with that glibc or
# newer loads it (docs/compatibility.md, "Images with another libc", says how the references are
# kept there).
GLIBC_BASELINE := 2.17
.PHONY: glibc-versions
glibc-versions: lib
	@scripts/tools/check-glibc-versions --baseline $(GLIBC_BASELINE) $(BUILD)/libroundtrim.so
check: glibc-versions
