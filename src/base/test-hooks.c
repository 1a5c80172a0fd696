/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test hooks (see test-hooks.h). Compiled twice (src/meson.build): with LLMTUNE_TEST_HOOKS_ON for
 * the test programs, where nothing runs unless an LLMTUNE_TEST_* variable is set; without it for
 * the installed llmtune, where every function is a no-op and no variable is ever read. */
#include "base/test-hooks.h"

#ifndef LLMTUNE_TEST_HOOKS_ON

int test_fault(const char *target)
{
        (void)target;
        return 0;
}
void test_point(const char *what, const char *target)
{
        (void)what;
        (void)target;
}
void test_points_in_action(int on) { (void)on; }
int test_points_active(void) { return 0; }
const char *test_confinement(void) { return (const char *)0; }

#else

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "base/util.h"

static const struct {
        const char *name;
        int err;
} errnos[] = {
        {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EACCES", EACCES}, {"EIO", EIO},     {"EPERM", EPERM},
        {"EDQUOT", EDQUOT}, {"EBUSY", EBUSY}, {"EINVAL", EINVAL}, {"ENOMEM", ENOMEM}, {"EXDEV", EXDEV},
};

static int errno_by_name(const char *s, size_t n)
{
        for (size_t i = 0; i < ARRAY_SIZE(errnos); i++)
                if (strlen(errnos[i].name) == n && strncmp(errnos[i].name, s, n) == 0)
                        return errnos[i].err;
        return EIO; /* an unknown name still fails, as an I/O error */
}

int test_fault(const char *target)
{
        if (!target)
                return 0;
        const char *old = getenv("LLMTUNE_TEST_FAIL_WRITE");
        if (old && streq(old, target))
                return -ENOSPC;
        const char *spec = getenv("LLMTUNE_TEST_FAULT");
        if (!spec)
                return 0;
        size_t tlen = strlen(target);
        for (const char *p = spec; *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *colon = memrchr(p, ':', len);
                if (colon && (size_t)(colon - p) == tlen && strncmp(p, target, tlen) == 0)
                        return -errno_by_name(colon + 1, len - (size_t)(colon + 1 - p));
                p += len + (end ? 1 : 0);
        }
        return 0;
}

static int in_action;

const char *test_confinement(void) { return getenv("LLMTUNE_TEST_CONFINEMENT"); }

void test_points_in_action(int on) { in_action = on; }
int test_points_active(void) { return in_action; }

static long env_long(const char *name)
{
        const char *s = getenv(name);
        if (!s || !*s)
                return 0;
        char *end;
        long v = strtol(s, &end, 10);
        return *end ? 0 : v;
}

void test_point(const char *what, const char *target)
{
        static long count;
        long kill_at = env_long("LLMTUNE_TEST_KILL_AT"), stop_at = env_long("LLMTUNE_TEST_STOP_AT");
        const char *trace = getenv("LLMTUNE_TEST_POINTS");
        if (!kill_at && !stop_at && !trace)
                return;
        count++;
        if (trace) {
                _cleanup_close_ int fd = open(trace, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (fd >= 0)
                        dprintf(fd, "%ld %s %s\n", count, what, target ? target : "-");
        }
        if (count == kill_at)
                raise(SIGKILL);
        if (count == stop_at)
                raise(SIGSTOP);
}

#endif
