/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's log buffer through /dev/kmsg (kernel Documentation/ABI/testing/dev-kmsg): each read()
 * returns one record, "PRI,SEQ,USEC,FLAGS;text\n" and continuation lines " KEY=value"; a descriptor
 * opened O_NONBLOCK reads from the oldest record kept to the end of the buffer, where read() fails
 * with EAGAIN. The one reader of it, for the Xid probe and for gather's capture.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Calls EACH with each record's first line (NUL-terminated, its newline gone) and its length, until
 * EACH returns non-zero, MAX records were read or the buffer ends. EINTR, and EPIPE (records
 * overwritten while reading: the next read resumes at the oldest kept), are read past. Returns 0,
 * or -errno when a read fails otherwise. */
int kmsg_read_records(int fd, unsigned max, int (*each)(char *line, size_t len, void *userdata), void *userdata);

/* The header of a record's first line, "PRI,SEQ,USEC,FLAGS;": its time in microseconds since boot
 * into *USEC and where its text starts (after the ';') into *TEXT. False for a line that is not a
 * record (a dmesg or syslog line). */
bool kmsg_record_parse(const char *line, unsigned long long *usec, const char **text);
