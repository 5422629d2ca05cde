/* The round log: opened at the first record (a process that never ends a round writes nothing),
 * one write(2) per record so that processes appending to one file never interleave. Only a
 * regular file is used, and only while the descriptor still refers to it
 * (runtime/core/safe_file.h). */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_LOG_WRITER_H
#define ROUNDTRIM_RUNTIME_OUTPUT_LOG_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/json_writer.h"

/* Formats a record into buf (at most cap bytes); returns its length, 0 when it does not fit. */
typedef size_t (*roundtrim_record_format_fn)(char *buf, size_t cap);

/* The record every log starts with (the start record), formatted when the log is opened: the
 * writer only writes what it is given. */
void roundtrim_log_set_first_record(roundtrim_record_format_fn format);

/* Writes one complete record (ending in '\n'). Opens the log first if needed, writing the start
 * record before anything else. Returns false when there is no usable log. */
bool roundtrim_log_write(const char *line, size_t len);

/* A record other than the round record: begun as {"event":event,"pid":<this process>,"ts":ts,
 * its keys put by the writer, then ended and written whole (nothing when it did not fit in its
 * buffer). */
void roundtrim_log_record_begin(struct roundtrim_json *j, char *buf, size_t cap, const char *event,
                                double ts);
void roundtrim_log_record_write(struct roundtrim_json *j);

/* Opens the log now, writing its start record, if it is not open yet. Returns false when there is
 * no usable log. */
bool roundtrim_log_open(void);

/* Whether this process has written anything to its log. */
bool roundtrim_log_started(void);

void roundtrim_log_fork_child(void);

#endif
