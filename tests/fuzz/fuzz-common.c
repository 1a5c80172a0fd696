/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "base/util.h"

static char dir[64];

static void cleanup(void)
{
        if (!dir[0])
                return;
        char *cmd = xasprintf("rm -rf '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "fuzz: could not remove %s\n", dir);
        free(cmd);
}

const char *fuzz_tmpdir(void)
{
        if (!dir[0]) {
                /* tmpfs when there is one: every input is written there, and on a disk each
                 * O_TRUNC rewrite costs a journal transaction. */
                const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
                snprintf(dir, sizeof(dir), "%s/llmtune-fuzz-XXXXXX", base);
                if (!mkdtemp(dir))
                        abort();
                atexit(cleanup);
        }
        return dir;
}

void fuzz_put(const char *rel, const uint8_t *data, size_t size)
{
        char *p = xasprintf("%s/%s", fuzz_tmpdir(), rel);
        for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        abort();
                *s = '/';
        }
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                abort();
        while (size > 0) {
                ssize_t n = write(fd, data, size);
                if (n <= 0)
                        abort();
                data += n;
                size -= (size_t)n;
        }
        close(fd);
        free(p);
}

char *fuzz_string(const uint8_t *data, size_t size)
{
        char *s = xmalloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}
