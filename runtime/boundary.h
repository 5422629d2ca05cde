/* Round boundaries: where they come from and how they reach the worker thread. */
#ifndef ROUNDTRIM_RUNTIME_BOUNDARY_H
#define ROUNDTRIM_RUNTIME_BOUNDARY_H

enum roundtrim_source {
    ROUNDTRIM_SRC_SIGNAL,
    ROUNDTRIM_SRC_CALL,
    ROUNDTRIM_SRC_PYTHON,
    ROUNDTRIM_SRC_TIMER,
    ROUNDTRIM_SRC_PRESSURE,
    ROUNDTRIM_SRC_COUNT
};

const char *roundtrim_source_name(enum roundtrim_source src);

/* A boundary seen in normal (non-signal) context, on any thread. Starts the worker if needed. */
void roundtrim_boundary(enum roundtrim_source src);

/* A boundary seen in a signal handler: async-signal-safe, never allocates or locks. */
void roundtrim_boundary_from_signal(void);

#endif
