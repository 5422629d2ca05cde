/* roundtrim: the functions a program may call when libroundtrim.so is preloaded.
 *
 * A program needs none of them: a signal (ROUNDTRIM_ROUND_SIGNAL, SIGUSR1 by default), a Python
 * hook (ROUNDTRIM_PY_HOOK) or a timer (ROUNDTRIM_INTERVAL_S) marks rounds without code changes.
 * From Python, a call that does nothing where the library is not preloaded:
 *   getattr(ctypes.CDLL(None), "roundtrim_round_end", lambda: 0)() */
#ifndef ROUNDTRIM_H
#define ROUNDTRIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the end of a round. Returns at once; the round's record, and the cleanup when this round
 * is due one, are done on roundtrim's own worker thread. Safe to call from any thread. */
void roundtrim_round_end(void);

#ifdef __cplusplus
}
#endif

#endif
