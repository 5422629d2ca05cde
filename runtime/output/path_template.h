/* The file of a path template (ROUNDTRIM_LOG, ROUNDTRIM_PROM_FILE) for this process: %p its pid,
 * %h its host name (in a container, the container's: podman and docker name it after the
 * container, Kubernetes after the pod), so that containers sharing one mounted folder, each with
 * its program as PID 1, write files of their own. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_PATH_TEMPLATE_H
#define ROUNDTRIM_RUNTIME_OUTPUT_PATH_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

/* False when the expanded path does not fit in cap bytes. */
bool roundtrim_output_path(const char *tmpl, char *out, size_t cap);

/* The host name as %h writes it (cap: at least 65 bytes for all of it). */
void roundtrim_output_host(char *out, size_t cap);

#endif
