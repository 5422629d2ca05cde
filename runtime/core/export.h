/* Marks the few symbols the library exports; everything else is hidden (-fvisibility=hidden). */
#ifndef ROUNDTRIM_RUNTIME_CORE_EXPORT_H
#define ROUNDTRIM_RUNTIME_CORE_EXPORT_H
#define ROUNDTRIM_EXPORT __attribute__((visibility("default")))
#endif
