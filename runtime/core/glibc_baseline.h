/* Force-included (-include) into every object of the library, before any other header: binds
 * each reference whose default version on the build machine's glibc is newer than the baseline
 * (glibc 2.17, docs/compatibility.md) to the version that older images have, so that their
 * loader accepts the library.
 *
 * glibc 2.34 moved libpthread's, libdl's and librt's functions into libc under a new version
 * and kept the old one as a compatibility symbol of libc; before 2.34 the old version lives in
 * libpthread.so.0 / libdl.so.2, which the library names as needed (Makefile) so that the old
 * images' loader finds them there. The ABI of each pinned version is the one of the default:
 * only the place moved. Names the library itself defines (dlsym, pthread_create) must not be
 * here: .symver would version the definition. scripts/tools/check-glibc-versions (make check)
 * fails the build where a newer version gets in. */
#ifndef ROUNDTRIM_RUNTIME_CORE_GLIBC_BASELINE_H
#define ROUNDTRIM_RUNTIME_CORE_GLIBC_BASELINE_H

/* The assembly sources take the library's flags too. */
#ifndef __ASSEMBLER__

#if defined(__x86_64__)
/* The x86-64 version a name had when it was added before the baseline. */
#define ROUNDTRIM_PIN(name, x86_64_version) __asm__(".symver " #name "," #name "@" x86_64_version)
#elif defined(__aarch64__)
/* Every aarch64 symbol older than the port carries GLIBC_2.17, the port's first release. */
#define ROUNDTRIM_PIN(name, x86_64_version) __asm__(".symver " #name "," #name "@GLIBC_2.17")
#else
#define ROUNDTRIM_PIN(name, x86_64_version)
#endif

/* libdl, in libc since 2.34. */
ROUNDTRIM_PIN(dladdr, "GLIBC_2.2.5");
ROUNDTRIM_PIN(dladdr1, "GLIBC_2.3.3");
ROUNDTRIM_PIN(dlclose, "GLIBC_2.2.5");
ROUNDTRIM_PIN(dlerror, "GLIBC_2.2.5");
ROUNDTRIM_PIN(dlinfo, "GLIBC_2.3.3");
ROUNDTRIM_PIN(dlopen, "GLIBC_2.2.5");
ROUNDTRIM_PIN(dlvsym, "GLIBC_2.2.5");

/* libpthread, in libc since 2.34 (pthread_sigmask since 2.32). */
ROUNDTRIM_PIN(pthread_attr_setstacksize, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_condattr_setclock, "GLIBC_2.3.3");
ROUNDTRIM_PIN(pthread_detach, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_getspecific, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_join, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_key_create, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_kill, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_mutex_trylock, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_mutexattr_settype, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_once, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_rwlock_rdlock, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_rwlock_timedwrlock, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_rwlock_unlock, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_rwlock_wrlock, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_setname_np, "GLIBC_2.12");
ROUNDTRIM_PIN(pthread_setspecific, "GLIBC_2.2.5");
ROUNDTRIM_PIN(pthread_sigmask, "GLIBC_2.2.5");
ROUNDTRIM_PIN(sem_init, "GLIBC_2.2.5");
ROUNDTRIM_PIN(sem_post, "GLIBC_2.2.5");
ROUNDTRIM_PIN(sem_timedwait, "GLIBC_2.2.5");
ROUNDTRIM_PIN(sem_wait, "GLIBC_2.2.5");

#endif
#endif
