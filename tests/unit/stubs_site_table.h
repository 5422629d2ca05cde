/* Test-owned stand-in for what runtime/sites/site_table.c calls (tests/unit/stubs_site_table.c):
 * the names of a Python code object, here made up from its address: file_<hex>.py and
 * func_<hex>. */
#ifndef ROUNDTRIM_TEST_STUBS_SITE_TABLE_H
#define ROUNDTRIM_TEST_STUBS_SITE_TABLE_H

/* The code object whose names cannot be read (NULL: every one can). */
extern const void *stub_unreadable_code;

/* Above 0: the code objects are others, created at the addresses of those before; their
 * function names end in _<generation>. */
extern unsigned stub_code_generation;

#endif
