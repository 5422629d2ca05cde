# Unit suites of the runtime's lock-free structures, and their concurrent stresses: each links the
# runtime files under test and test-owned stubs of what they call (tests/unit/stubs_*.c) instead
# of the policy sources, by UNIT_LINK_<suite> (the Makefile's unit rule, mk/tsan.mk's);
# UNIT_CFLAGS_<suite> adds flags. `make unit` runs the check_ suites under AddressSanitizer and
# UBSan with the policy suites; `make tsan` runs them all under ThreadSanitizer (TSAN_SUITES).

# The boundary queue and boundary.c. The stress builds the queue with 4 cells, so that producers
# find it full all the time; the queue's suites open its test windows (queue.c's WINDOW).
UNIT_LINK_check_boundary          := runtime/boundary/boundary.c runtime/boundary/queue.c \
                                     tests/unit/stubs_boundary.c
UNIT_LINK_check_boundary_queue    := runtime/boundary/queue.c
UNIT_CFLAGS_check_boundary_queue  := -DROUNDTRIM_BOUNDARY_QUEUE_TEST
UNIT_LINK_stress_boundary_queue   := runtime/boundary/queue.c
UNIT_CFLAGS_stress_boundary_queue := -DROUNDTRIM_BOUNDARY_QUEUE_CELLS=4u \
                                     -DROUNDTRIM_BOUNDARY_QUEUE_TEST
TSAN_SUITES += check_boundary check_boundary_queue stress_boundary_queue

# The sample table. Its unit suite opens the scan's test window; the stress builds a table of
# 1024 slots, quicker to scan.
UNIT_LINK_check_sample_table    := runtime/sites/sample_table.c runtime/core/pages.c
UNIT_CFLAGS_check_sample_table  := -DROUNDTRIM_SAMPLE_TABLE_TEST
UNIT_LINK_stress_sample_table   := $(UNIT_LINK_check_sample_table)
UNIT_CFLAGS_stress_sample_table := -DROUNDTRIM_SAMPLE_TABLE_BITS=10
TSAN_SUITES += check_sample_table stress_sample_table

# The site table and its code names.
UNIT_LINK_check_site_table  := runtime/sites/site_table.c runtime/core/pages.c \
                               tests/unit/stubs_site_table.c
UNIT_LINK_stress_site_table := $(UNIT_LINK_check_site_table)
TSAN_SUITES += check_site_table stress_site_table

# The per-thread counter blocks.
UNIT_LINK_check_thread_counters  := runtime/alloc/thread_counters.c runtime/core/pages.c \
                                    tests/unit/stubs_thread_counters.c
UNIT_LINK_stress_thread_counters := $(UNIT_LINK_check_thread_counters)
TSAN_SUITES += check_thread_counters stress_thread_counters

# The start's one pass over the environment (runtime/core/env_scan.c), alone.
UNIT_LINK_check_env_scan := runtime/core/env_scan.c

# The stand-ins for glibc functions newer than the baseline, with a lookup that finds none.
UNIT_LINK_check_libc_later := runtime/core/libc_later.c
