/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Run a program and capture what it writes: see subprocess.h. */
#include "base/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

static long now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* The pipes' read ends in P[0] (stdout) and P[1] (stderr, or -1), their write ends in W. */
static int start(const struct spawn_opts *o, struct pollfd p[2], int w[2], pid_t *pid)
{
        int pfd[2][2] = {{-1, -1}, {-1, -1}};
        for (int i = 0; i < 2; i++) {
                w[i] = -1;
                p[i] = (struct pollfd){.fd = -1};
        }
        int nstreams = o->err == SPAWN_STDERR_CAPTURE ? 2 : 1;
        for (int i = 0; i < nstreams; i++)
                if (pipe2(pfd[i], O_CLOEXEC) < 0) {
                        int e = errno;
                        for (int k = 0; k < i; k++) {
                                close(pfd[k][0]);
                                close(pfd[k][1]);
                        }
                        return -e;
                }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, pfd[0][1], STDOUT_FILENO);
        if (o->err == SPAWN_STDERR_CAPTURE)
                posix_spawn_file_actions_adddup2(&fa, pfd[1][1], STDERR_FILENO);
        else if (o->err == SPAWN_STDERR_NULL)
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        int rc = o->path ? posix_spawn(pid, o->path, &fa, NULL, o->argv, environ)
                         : posix_spawnp(pid, o->argv[0], &fa, NULL, o->argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        for (int i = 0; i < 2; i++) {
                w[i] = pfd[i][1];
                p[i] = (struct pollfd){.fd = pfd[i][0], .events = POLLIN};
        }
        return -rc;
}

/* One read from P into B; false at the end of the stream (P closed). *BIG when past the cap. */
static bool drain(const struct spawn_opts *o, struct pollfd *p, struct sbuf *b, bool *big)
{
        char buf[65536];
        ssize_t n = read(p->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
                return true;
        if (n <= 0) {
                close(p->fd);
                p->fd = -1;
                return false;
        }
        size_t room = o->cap && b->len < o->cap ? o->cap - b->len : o->cap ? 0 : (size_t)n;
        if ((size_t)n > room)
                *big = true;
        sbuf_addn(b, buf, (size_t)n < room ? (size_t)n : room);
        return true;
}

/* Read both streams to their end, the deadline or (with cap_kills) the cap. -ETIMEDOUT, -EFBIG or 0. */
static int collect(const struct spawn_opts *o, struct pollfd p[2], struct sbuf b[2])
{
        long end = o->timeout_ms ? now_ms() + o->timeout_ms : 0;
        bool big = false;
        while (p[0].fd >= 0 || p[1].fd >= 0) {
                long left = end ? end - now_ms() : -1;
                if (end && left <= 0)
                        return -ETIMEDOUT;
                int k = poll(p, 2, end ? (int)left : -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ETIMEDOUT;
                for (int i = 0; i < 2; i++)
                        if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                drain(o, &p[i], &b[i], &big);
                if (big && o->cap_kills)
                        return -EFBIG;
        }
        return 0;
}

int spawn_capture(const struct spawn_opts *o, struct spawn_result *ret)
{
        *ret = (struct spawn_result){0};
        struct pollfd p[2];
        int w[2];
        pid_t pid;
        int rc = start(o, p, w, &pid);
        for (int i = 0; i < 2; i++)
                if (w[i] >= 0)
                        close(w[i]);
        if (rc < 0) {
                for (int i = 0; i < 2; i++)
                        if (p[i].fd >= 0)
                                close(p[i].fd);
                return rc;
        }
        struct sbuf b[2] = {{0}, {0}};
        rc = collect(o, p, b);
        for (int i = 0; i < 2; i++)
                if (p[i].fd >= 0)
                        close(p[i].fd);
        if (rc < 0)
                kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (rc < 0) {
                free(sbuf_steal(&b[0]));
                free(sbuf_steal(&b[1]));
                return rc;
        }
        ret->status = status;
        ret->out_len = b[0].len;
        ret->out = b[0].s ? sbuf_steal(&b[0]) : xstrdup("");
        if (o->err == SPAWN_STDERR_CAPTURE) {
                ret->err_len = b[1].len;
                ret->err = b[1].s ? sbuf_steal(&b[1]) : xstrdup("");
        }
        return 0;
}

void spawn_result_done(struct spawn_result *r)
{
        free(r->out);
        free(r->err);
        *r = (struct spawn_result){0};
}
