/* An empty preloaded library: what any LD_PRELOAD costs a process at start (the loader opens,
 * maps and relocates one more object), measured by make bench beside roundtrim's start-up. */
int roundtrim_bench_empty_preload;
