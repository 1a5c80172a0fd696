/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The confinement of root_open and root_open_nolinks: every lookup stays inside the root, whatever
 * "..", absolute or relative links, loops or over-long paths it meets. Each case runs twice: with
 * openat2(2) (RESOLVE_IN_ROOT) and with the component walk that replaces it on kernels before 5.6
 * (forced by LLMTUNE_NO_OPENAT2), and both must answer the same.
 *
 * The tree: TMP/tree is the root; TMP/outside/secret is a file beside it that no lookup may reach.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/root.h"
#include "tmptree.h"
#include "base/util.h"
#include "unit-main.h"

static const char *const mode_name[] = {"openat2", "walk"};

static struct root *open_root(int walk)
{
        if (walk)
                setenv("LLMTUNE_NO_OPENAT2", "1", 1);
        else
                unsetenv("LLMTUNE_NO_OPENAT2");
        _cleanup_free_ char *path = xasprintf("%s/tree", tmptree_path());
        struct root *r = NULL;
        ck_assert_int_eq(root_new(path, &r), 0);
        return r;
}

static void make_tree(void)
{
        tmptree_new("root");
        tmptree_put("tree/etc/marker", "inside\n", 0644);
        tmptree_put("outside/secret", "outside\n", 0644);
        tmptree_mkdir("tree/d/sub");
        tmptree_put("tree/d/x", "d-x\n", 0644);
}

/* What a read of PATH gives: the file's first line, or "-errno" as a number. */
static char *read_in(struct root *r, const char *path, bool no_links)
{
        int fd = no_links ? root_open_nolinks(r, path, O_RDONLY, 0) : root_open(r, path, O_RDONLY, 0);
        if (fd < 0)
                return xasprintf("%d", fd);
        char buf[64] = {0};
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        ck_assert_int_ge(n, 0);
        buf[strcspn(buf, "\n")] = '\0';
        return xstrdup(buf);
}

static void expect(struct root *r, int walk, const char *path, bool no_links, const char *want)
{
        _cleanup_free_ char *got = read_in(r, path, no_links);
        ck_assert_msg(streq(got, want), "%s: %s%s gave \"%s\", want \"%s\"", mode_name[walk],
                      no_links ? "(no links) " : "", path, got, want);
}

static char *errstr(int e)
{
        return xasprintf("%d", -e);
}

START_TEST(dotdot_is_clamped_at_the_root)
{
        make_tree();
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *enoent = errstr(ENOENT);
                expect(r, walk, "../../../etc/marker", false, "inside");
                expect(r, walk, "/d/sub/../../../../etc/marker", false, "inside");
                expect(r, walk, "../outside/secret", false, enoent);
                expect(r, walk, "d/sub/../x", false, "d-x");
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(dotdot_is_clamped_at_the_root, .description = "dotdot is clamped at the root", .root = "tmptree");

/* root_read_first: the first path that is there wins; one there but unreadable ends the search. */
START_TEST(read_first_of_fallbacks)
{
        make_tree();
        struct root *r = open_root(0);
        const char *data = NULL;
        size_t i = 99;
        static const char *const some[] = {"/nope", "/etc/marker/x", "/d/x", "/etc/marker"};
        ck_assert_int_eq(root_read_first(r, some, ARRAY_SIZE(some), &i, &data), 0);
        ck_assert_uint_eq(i, 2);
        ck_assert_str_eq(data, "d-x\n");
        static const char *const none[] = {"/nope", "/etc/marker/x"};
        ck_assert_int_eq(root_read_first(r, none, ARRAY_SIZE(none), &i, &data), -ENOENT);
        static const char *const dir[] = {"/nope", "/d", "/d/x"};
        ck_assert_int_lt(root_read_first(r, dir, ARRAY_SIZE(dir), &i, &data), 0);
        ck_assert_uint_eq(i, 1);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(read_first_of_fallbacks, .description = "root_read_first: the first path there, or why not",
            .root = "tmptree");

START_TEST(absolute_links_resolve_inside)
{
        make_tree();
        _cleanup_free_ char *secret = xasprintf("%s/outside/secret", tmptree_path());
        tmptree_link("tree/abs", "/etc/marker");
        tmptree_link("tree/escape", secret);
        tmptree_link("tree/d/sub/up", "/d/x");
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *enoent = errstr(ENOENT);
                expect(r, walk, "abs", false, "inside");
                expect(r, walk, "escape", false, enoent);
                expect(r, walk, "d/sub/up", false, "d-x");
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(absolute_links_resolve_inside, .description = "absolute links resolve inside", .root = "tmptree");

START_TEST(relative_links_cannot_climb_out)
{
        make_tree();
        tmptree_link("tree/rel", "../outside/secret");
        tmptree_link("tree/d/deep", "../../../../../../etc/marker");
        /* ".." after a link is the parent of where the link led (d/sub -> d), as in the kernel. */
        tmptree_link("tree/dl", "d/sub");
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *enoent = errstr(ENOENT);
                expect(r, walk, "rel", false, enoent);
                expect(r, walk, "d/deep", false, "inside");
                expect(r, walk, "dl/../x", false, "d-x");
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(relative_links_cannot_climb_out, .description = "relative links cannot climb out", .root = "tmptree");

START_TEST(link_loops_end_in_eloop)
{
        make_tree();
        tmptree_link("tree/self", "self");
        tmptree_link("tree/l1", "l2");
        tmptree_link("tree/l2", "/l1");
        tmptree_link("tree/d/back", "../d/back/x");
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *eloop = errstr(ELOOP);
                expect(r, walk, "self", false, eloop);
                expect(r, walk, "l1", false, eloop);
                expect(r, walk, "d/back", false, eloop);
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(link_loops_end_in_eloop, .description = "link loops end in eloop", .root = "tmptree");

START_TEST(long_and_deep_paths)
{
        make_tree();
        /* 300 nested directories: deeper than any fixed stack, well inside PATH_MAX. */
        char deep[700] = "tree";
        for (int i = 0; i < 300; i++)
                strcat(deep, "/a");
        tmptree_mkdir(deep);
        _cleanup_free_ char *deepfile = xasprintf("%s/f", deep);
        tmptree_put(deepfile, "deep\n", 0644);
        /* Over PATH_MAX in all, and one component over NAME_MAX. */
        char *toolong = xmalloc(PATH_MAX + 16);
        memset(toolong, 'a', PATH_MAX + 8);
        for (size_t i = 1; i < PATH_MAX + 8; i += 2)
                toolong[i] = '/';
        toolong[PATH_MAX + 8] = '\0';
        char longname[NAME_MAX + 10];
        memset(longname, 'n', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *enametoolong = errstr(ENAMETOOLONG);
                expect(r, walk, deepfile + strlen("tree/"), false, "deep");
                expect(r, walk, toolong, false, enametoolong);
                expect(r, walk, longname, false, enametoolong);
                root_free(r);
        }
        free(toolong);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(long_and_deep_paths, .description = "long and deep paths", .root = "tmptree");

START_TEST(nolinks_refuses_any_link_on_the_way)
{
        make_tree();
        tmptree_link("tree/dirlink", "d");
        tmptree_link("tree/d/filelink", "x");
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                _cleanup_free_ char *eloop = errstr(ELOOP);
                expect(r, walk, "d/x", true, "d-x");
                expect(r, walk, "dirlink/x", true, eloop);
                expect(r, walk, "d/filelink", true, eloop);
                /* ".." is not a link: still clamped, still allowed. */
                expect(r, walk, "../d/x", true, "d-x");
                expect(r, walk, "dirlink/x", false, "d-x");
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(nolinks_refuses_any_link_on_the_way,
            .description = "nolinks refuses any link on the way", .root = "tmptree");

START_TEST(create_through_a_dangling_link_stays_inside)
{
        make_tree();
        _cleanup_free_ char *target = xasprintf("%s/outside/new", tmptree_path());
        tmptree_link("tree/dangling", target);
        for (int walk = 0; walk < 2; walk++) {
                struct root *r = open_root(walk);
                int fd = root_open(r, "dangling", O_WRONLY | O_CREAT, 0600);
                /* Either refused, or created inside the tree: never outside. */
                if (fd >= 0)
                        close(fd);
                _cleanup_free_ char *outside = tmptree_get("outside/new");
                ck_assert_msg(!outside, "%s: a create through a link wrote outside the root", mode_name[walk]);
                root_free(r);
        }
        tmptree_drop();
}
END_TEST
DEFINE_TEST(create_through_a_dangling_link_stays_inside,
            .description = "create through a dangling link stays inside", .root = "tmptree");

/* root_write_file replaces a file atomically, keeping its mode, and refuses a link at the path. */
START_TEST(write_file_replaces_and_refuses_links)
{
        make_tree();
        tmptree_put("tree/etc/conf", "old\n", 0640);
        tmptree_link("tree/etc/planted", "/etc/marker");
        struct root *r = open_root(0);
        ck_assert_int_eq(root_write_file(r, "/etc/conf", "new\n", 4, 0600), 0);
        _cleanup_free_ char *got = tmptree_get("tree/etc/conf");
        ck_assert_str_eq(got, "new\n");
        _cleanup_free_ char *p = xasprintf("%s/tree/etc/conf", tmptree_path());
        struct stat st;
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0640);
        ck_assert_int_eq(root_write_file(r, "/etc/planted", "x", 1, 0644), -ELOOP);
        _cleanup_free_ char *marker = tmptree_get("tree/etc/marker");
        ck_assert_str_eq(marker, "inside\n");
        ck_assert_int_eq(root_write_file(r, "/etc/", "x", 1, 0644), -EINVAL);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(write_file_replaces_and_refuses_links,
            .description = "write file replaces and refuses links", .root = "tmptree");

/* The temporary-file sweep removes exactly PREFIX followed by digits: not the prefix alone, not a
 * name with more after the digits, not another file's temporaries. */
START_TEST(sweep_removes_only_pid_temporaries)
{
        make_tree();
        tmptree_put("tree/etc/.conf.llmtune-123", "t", 0600);
        tmptree_put("tree/etc/.conf.llmtune-", "keep", 0600);
        tmptree_put("tree/etc/.conf.llmtune-12x", "keep", 0600);
        tmptree_put("tree/etc/.other.llmtune-7", "keep", 0600);
        struct root *r = open_root(0);
        int dfd = root_open_nolinks(r, "/etc", O_RDONLY | O_DIRECTORY, 0);
        ck_assert_int_ge(dfd, 0);
        ck_assert_int_eq(dir_remove_matching(dfd, name_is_prefix_pid, ".conf.llmtune-"), 1);
        close(dfd);
        _cleanup_free_ char *gone = tmptree_get("tree/etc/.conf.llmtune-123"),
                            *a = tmptree_get("tree/etc/.conf.llmtune-"), *b = tmptree_get("tree/etc/.conf.llmtune-12x"),
                            *c = tmptree_get("tree/etc/.other.llmtune-7");
        ck_assert_ptr_null(gone);
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        ck_assert_ptr_nonnull(c);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(sweep_removes_only_pid_temporaries, .description = "sweep removes only pid temporaries", .root = "tmptree");

/* Links and entries of one directory read in a row look the directory up once (a 384-CPU audit
 * looked up /sys/bus/pci/devices 100 times, once per PCI function's link); a directory replaced
 * and forgotten (root_forget, as every write through the handle does) is looked up again, and
 * its new entries are what is read. Both lookup modes. */
START_TEST(entries_of_one_directory_resolve_it_once)
{
        make_tree();
        tmptree_link("tree/d/l1", "../etc/marker");
        tmptree_link("tree/d/l2", "sub");
        tmptree_link("tree/etc/l3", "marker");
        struct root *r = open_root(_i);
        _cleanup_free_ char *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL, *t5 = NULL;
        struct stat st;
        ck_assert_int_eq(root_readlink(r, "/d/l1", &t1), 0);
        ck_assert_int_eq(root_readlink(r, "d/l2", &t2), 0);
        ck_assert_int_eq(root_stat(r, "/d/x", &st, false), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_str_eq(t1, "../etc/marker");
        ck_assert_str_eq(t2, "sub");
        ck_assert_uint_eq(root_dirs_resolved(r), 1);
        ck_assert_int_eq(root_readlink(r, "/etc/l3", &t3), 0); /* another directory, then back */
        ck_assert_str_eq(t3, "marker");
        ck_assert_int_eq(root_readlink(r, "/d/x", &t4), -EINVAL);
        ck_assert_uint_eq(root_dirs_resolved(r), 2);
        /* One directory used between many others (an InfiniBand device's, then its PCI
         * function's) stays: the least recently used is the one replaced. */
        static const char *const others[] = {"/o1/l", "/o2/l", "/o3/l", "/o4/l", "/o5/l"};
        for (size_t k = 0; k < ARRAY_SIZE(others); k++) {
                _cleanup_free_ char *rel = xasprintf("tree%s", others[k]);
                tmptree_link(rel, "x");
                _cleanup_free_ char *o = NULL, *again = NULL;
                ck_assert_int_eq(root_readlink(r, others[k], &o), 0);
                ck_assert_int_eq(root_readlink(r, "/d/l2", &again), 0);
                ck_assert_str_eq(again, "sub");
        }
        ck_assert_uint_eq(root_dirs_resolved(r), 2 + ARRAY_SIZE(others));
        _cleanup_free_ char *d = xasprintf("%s/tree/d", tmptree_path()), *old = xasprintf("%s/tree/d-old", tmptree_path());
        ck_assert_int_eq(rename(d, old), 0);
        tmptree_link("tree/d/l1", "elsewhere");
        root_forget(r, "/d/l1");
        ck_assert_int_eq(root_readlink(r, "/d/l1", &t5), 0);
        ck_assert_str_eq(t5, "elsewhere");
        ck_assert_int_eq(root_stat(r, "/d/x", &st, false), -ENOENT);
        ck_assert_uint_eq(root_dirs_resolved(r), 3 + ARRAY_SIZE(others));
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(entries_of_one_directory_resolve_it_once,
            .description = "entries of one directory resolve it once", .root = "tmptree", .loop_end = 2);

/* root_readf_*: the path formatted printf-style, then read as root_read_* reads it (the same
 * cache: a file read by both is opened once). */
START_TEST(readf_formats_the_path)
{
        make_tree();
        tmptree_put("tree/sys/cpu7/online", "1\n", 0644);
        tmptree_put("tree/sys/node-1/distance", "-12 \n", 0644);
        tmptree_put("tree/sys/dev/0000:3b:00.0/class", "0x030200\n", 0644);
        tmptree_put("tree/sys/empty", "\n", 0644);
        struct root *r = open_root(_i);
        uint64_t u = 0;
        int64_t i = 0;
        _cleanup_free_ char *line = NULL;
        const char *str = NULL;
        ck_assert_int_eq(root_readf_u64(r, &u, "/sys/cpu%u/online", 7u), 0);
        ck_assert_uint_eq(u, 1);
        ck_assert_int_eq(root_readf_i64(r, &i, "/sys/node-%d/%s", 1, "distance"), 0);
        ck_assert_int_eq(i, -12);
        ck_assert_int_eq(root_readf_u64(r, &u, "/sys/dev/%04x:%02x:%02x.%u/class", 0u, 0x3bu, 0u, 0u), 0);
        ck_assert_uint_eq(u, 0x030200);
        ck_assert_int_eq(root_readf_line(r, &line, "/sys/dev/%s/class", "0000:3b:00.0"), 0);
        ck_assert_str_eq(line, "0x030200");
        ck_assert_int_eq(root_readf_str(r, &str, "/sys/node-%d/distance", 1), 0);
        ck_assert_str_eq(str, "-12 \n");
        unsigned opened = root_files_opened(r);
        ck_assert_int_eq(root_readf_i64(r, &i, "/sys/node-%d/distance", 1), 0);
        ck_assert_uint_eq(root_files_opened(r), opened); /* cached as root_read caches */
        /* the errors of root_read_*: absent, empty, not a number */
        ck_assert_int_eq(root_readf_u64(r, &u, "/sys/cpu%u/online", 8u), -ENOENT);
        ck_assert_int_eq(root_readf_line(r, &line, "/sys/%s", "empty"), -ENODATA);
        ck_assert_int_eq(root_readf_u64(r, &u, "/etc/%s", "marker"), -EINVAL);
        ck_assert_int_eq(root_readf_u64(r, &u, "/sys/node-%d/distance", 1), -ERANGE);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(readf_formats_the_path, .description = "readf formats the path", .root = "tmptree", .loop_end = 2);

UNIT_MAIN(.name = "root")
