/* Files whose path someone else chose (the environment is attacker-written, and roundtrim runs in
 * every process): never follow a final symlink, never block on a FIFO or a device, keep only a
 * regular file, and never write into a descriptor that no longer refers to the file opened. */
#ifndef ROUNDTRIM_RUNTIME_CORE_SAFE_FILE_H
#define ROUNDTRIM_RUNTIME_CORE_SAFE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What a descriptor referred to when it was opened. */
struct roundtrim_file_id {
    dev_t dev;
    ino_t ino;
};

/* Opens path for appending, creating it with mode 0644 less the umask. The descriptor is
 * close-on-exec and numbered 200 or above where possible, away from the program's own. Returns
 * -1 when the path cannot be opened, is not a regular file or is another user's file that may
 * have been planted (roundtrim_file_foreign); *why then says why ("is a FIFO", strerror). */
int roundtrim_open_append(const char *path, struct roundtrim_file_id *id, const char **why);

/* A close-on-exec copy of fd, numbered 200 or above where the descriptor limit allows (3 or
 * above otherwise); -1 when fd is not open. */
int roundtrim_dup_high(int fd);

/* Opens path for reading: only a regular file, without following a final symlink or blocking.
 * Returns -1 (errno set; EINVAL for a file that is not regular) on failure. The descriptor is
 * held inside the fork guard (fd_guard.h): close it with roundtrim_fd_guard_close, soon. */
int roundtrim_open_read(const char *path);

/* Creates a new, empty regular file beside path, named ".<name>.<random>.tmp" in path's
 * directory (O_EXCL: never an existing file or a symlink), mode 0644 less the umask. Its name is
 * written to tmp. Returns the descriptor, held inside the fork guard as roundtrim_open_read's,
 * or -1 with errno set. */
int roundtrim_create_beside(const char *path, char *tmp, size_t cap);

/* Notes what fd refers to now (false when it is not open). */
bool roundtrim_fd_id(int fd, struct roundtrim_file_id *id);

/* Whether fd still refers to the file it was opened on (the program may have closed it and
 * reused the number for a file of its own). */
bool roundtrim_fd_is(int fd, const struct roundtrim_file_id *id);

/* Why the existing file at path, whose lstat or fstat is st, must not be written by us, or
 * NULL: it sits in a sticky directory others may write into (world- or group-writable, /tmp)
 * and belongs neither to our effective uid nor to the directory's owner, so anyone could have
 * left it there for us to fill (what the kernel refuses with fs.protected_regular=2, whatever
 * that setting is here). */
const char *roundtrim_file_foreign(const char *path, const struct stat *st);

/* "a symbolic link", "a FIFO", "a directory", ... for a warning about a file of the wrong kind. */
const char *roundtrim_file_kind(mode_t mode);

/* Writes iov entries with one writev(2) per attempt, continuing after a short write while it
 * makes progress. SIGPIPE and SIGXFSZ raised by these writes are kept from the process (a full
 * disk or a file size limit must not kill the host). Returns the bytes written; errno is set
 * when that is less than the total. */
size_t roundtrim_write_quiet(int fd, const char *const *bufs, const size_t *lens, int count);

#endif
