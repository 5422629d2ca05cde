# make help: the targets a person runs, in one screen.
.PHONY: help
help:
	@echo 'make              the library (build/libroundtrim.so), the command and its tools'
	@echo 'make demo         a planted leak, run with and without roundtrim, and its report'
	@echo 'make check        every test: unit suites, the corpus, the integration tests'
	@echo 'make unit         the unit suites (Check), under AddressSanitizer and UBSan'
	@echo 'make integration  the integration tests (pytest, Debian'"'"'s python3)'
	@echo 'make corpus       the diagnosis corpus and its confusion table'
	@echo 'make tsan         the lock-free structures'"'"' suites under ThreadSanitizer'
	@echo 'make debug        the library with the fast path'"'"'s rules checked, under the tests of its modes'
	@echo 'make layers       the include layers (policy below runtime below shim)'
	@echo 'make glibc-versions  no glibc symbol version above the baseline (2.17)'
	@echo 'make bench        the benchmarks (docs/performance.md)'
	@echo 'make docs         regenerate the pages printed from the tables; docs-check compares'
	@echo 'make install      under PREFIX (/usr/local) and DESTDIR; make uninstall; make deb'
	@echo 'make deps         the Debian packages the build and the tests need (install-deps)'
	@echo 'make format       clang-format every C file'
	@echo 'make clean        remove build/'
