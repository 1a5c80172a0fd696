/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "facts/readers/kmsg.h"

int kmsg_read_records(int fd, unsigned max, int (*each)(char *line, size_t len, void *userdata), void *userdata)
{
        /* The kernel refuses (EINVAL) a buffer shorter than the record; its records are at most
         * 1 KiB of text plus the dictionary, well inside this. */
        char rec[8192 + 1];
        for (unsigned records = 0; records < max;) {
                ssize_t n = read(fd, rec, sizeof(rec) - 1);
                if (n < 0 && (errno == EINTR || errno == EPIPE))
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                rec[n] = '\0';
                size_t len = strcspn(rec, "\n");
                rec[len] = '\0';
                records++;
                if (each(rec, len, userdata))
                        return 0;
        }
        return 0;
}

bool kmsg_record_parse(const char *line, unsigned long long *usec, const char **text)
{
        unsigned prio;
        unsigned long long seq;
        int n = 0;
        const char *semi = strchr(line, ';');
        if (!semi || sscanf(line, "%u,%llu,%llu,%n", &prio, &seq, usec, &n) != 3 || n == 0 || line + n > semi)
                return false;
        *text = semi + 1;
        return true;
}
