/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The temporary machine roots of the unit tests: see tmptree.h. */
#include "tmptree.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static char *tree;

void tmptree_new(const char *tag)
{
        char *tmpl = xasprintf("/tmp/llmtune-%s-XXXXXX", tag);
        ck_assert_ptr_nonnull(mkdtemp(tmpl));
        tree = tmpl;
}

void tmptree_drop(void)
{
        char *cmd = xasprintf("rm -rf '%s'", tree);
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
        free(tree);
        tree = NULL;
}

const char *tmptree_path(void)
{
        return tree;
}

/* Every directory above PATH; errors are left to the open() or symlink() that follows, which
 * reports the one that matters. */
static void mkparents(const char *path)
{
        char *p = xstrdup(path);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                mkdir(p, 0755);
                *s = '/';
        }
        free(p);
}

void tmptree_write(const char *rel, const void *data, size_t len)
{
        char *path = xasprintf("%s/%s", tree, rel);
        mkparents(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
        close(fd);
        free(path);
}

void tmptree_put(const char *rel, const char *text, mode_t mode)
{
        tmptree_write(rel, text, strlen(text));
        char *path = xasprintf("%s/%s", tree, rel);
        ck_assert_int_eq(chmod(path, mode), 0);
        free(path);
}

char *tmptree_get(const char *rel)
{
        char *path = xasprintf("%s/%s", tree, rel);
        FILE *fp = fopen(path, "r");
        free(path);
        if (!fp)
                return NULL;
        char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        return xstrdup(buf);
}

void tmptree_link(const char *rel, const char *target)
{
        char *path = xasprintf("%s/%s", tree, rel);
        mkparents(path);
        ck_assert_int_eq(symlink(target, path), 0);
        free(path);
}

void tmptree_mkdir(const char *rel)
{
        /* The trailing slash makes the last component a parent too. */
        char *path = xasprintf("%s/%s/", tree, rel);
        mkparents(path);
        free(path);
}
