/* One empty function per name: only the name matters (the stand-ins are linked against, never
 * loaded; shim/link_stubs/README.md). */
#ifndef ROUNDTRIM_SHIM_LINK_STUBS_STAND_IN_H
#define ROUNDTRIM_SHIM_LINK_STUBS_STAND_IN_H
#define STAND_IN(name)                                                                             \
    void name(void);                                                                               \
    void name(void) {}
#endif
