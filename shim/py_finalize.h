/* An embedder's Py_FinalizeEx and Py_Finalize (shim/py_finalize.c). */
#ifndef ROUNDTRIM_SHIM_PY_FINALIZE_H
#define ROUNDTRIM_SHIM_PY_FINALIZE_H

/* For dlsym(handle, "Py_FinalizeEx" or "Py_Finalize") with a real handle (an embedder that opened
 * libpython with dlopen): roundtrim's wrapper when the lookup lands on the definition the wrapper
 * forwards to, else NULL (forwarded untouched). */
void *roundtrim_py_finalize_dlsym_substitute(void *handle, const char *name);

#endif
