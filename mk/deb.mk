# make deb: the Debian package (debian/), built out of tree with debhelper. The sources (under
# git: what git does not ignore) are copied to $(DEB_DIR)/roundtrim-VERSION/, and
# dpkg-buildpackage leaves roundtrim_VERSION_ARCH.deb (and its -dbgsym, .buildinfo, .changes) in
# $(DEB_DIR)/. No network and no CUDA toolkit needed; DEB_BUILD_OPTIONS applies as usual
# (parallel=2, nocheck).

DEB_DIR := $(BUILD)/deb
DEB_SRC := $(DEB_DIR)/roundtrim-$(ROUNDTRIM_VERSION)

# The source files, NUL-separated: git's list (tracked, or new and not ignored, and present),
# or, outside a git checkout (a Docker build context), the tree less build outputs.
deb_source_tar = \
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
        git ls-files -z --cached --others --exclude-standard \
            | xargs -0 sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' sh \
            | tar -c --null --no-recursion -T -; \
    else \
        tar -c --exclude=./build --exclude=./$(BUILD) --exclude=./.git --exclude=__pycache__ \
            --exclude='*.pyc' .; \
    fi

DEB_UNSET_COMMAND_LINE = $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),-u $(v)))

.PHONY: deb
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || { \
	    echo "make deb: needs dpkg-buildpackage and debhelper (apt-get install dpkg-dev debhelper)" >&2; \
	    exit 1; }
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_SRC)
	$(deb_source_tar) | tar -x -C $(DEB_SRC)
	@# The package's own make must not inherit this one's variables: make exports those given on
	@# its command line (BUILD=..., and its clean would remove this very folder).
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD $(DEB_UNSET_COMMAND_LINE) \
	    dpkg-buildpackage --build=binary --no-sign
	@ls $(DEB_DIR)/*.deb
