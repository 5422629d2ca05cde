# make real-programs: programs nobody here wrote (git, gcc/g++, make -j2, tar/xz/gzip, sort,
# sqlite3, perl, bash/dash traps, coreutils, a pthread_exit program, numpy/torch, pip) run bare
# and under the library with a SIGUSR1 every 50 ms and a cleanup every round; exit status, stdout,
# stderr and the files they write must be the same (tests/realprograms/run.py). Not part of
# make check. REALPROGRAMS_ARGS passes case names or options.
REALPROGRAMS_OUT  ?= /tmp/roundtrim-real
REALPROGRAMS_ARGS ?=
.PHONY: real-programs
real-programs: deps lib
	nice -n 10 $(PYTHON) tests/realprograms/run.py --out $(REALPROGRAMS_OUT) --lib $(BUILD)/libroundtrim.so $(REALPROGRAMS_ARGS)
