/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pieces of apply: unified diffs, atomic file replacement under the root, tree emulation. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/command.h"
#include "apply/diff.h"
#include "facts/readers/dropin-order.h"
#include "engine/remedy.h"
#include "tmptree.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("apply"); }

START_TEST(diffs)
{
        char *d = unified_diff("/etc/fstab", "a\nb\nswap\nc\n", "a\nb\n#off# swap\nc\n");
        ck_assert_str_eq(d, "--- a/etc/fstab\n+++ b/etc/fstab\n@@ -1,4 +1,4 @@\n a\n b\n-swap\n+#off# swap\n c\n");
        free(d);
        d = unified_diff("/etc/x.conf", NULL, "k = 1\n");
        ck_assert_str_eq(d, "--- /dev/null\n+++ b/etc/x.conf\n@@ -0,0 +1,1 @@\n+k = 1\n");
        free(d);
        d = unified_diff("/etc/x.conf", "k = 1\n", NULL);
        ck_assert_str_eq(d, "--- a/etc/x.conf\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-k = 1\n");
        free(d);
        d = unified_diff("/etc/x", "same\n", "same\n");
        ck_assert_str_eq(d, "");
        free(d);
        d = unified_diff("/etc/x", "a", "b");
        ck_assert_ptr_nonnull(strstr(d, "\\ No newline at end of file"));
        free(d);
}
END_TEST
DEFINE_TEST(diffs, .description = "diffs", .root = "tmptree");

START_TEST(atomic_write_keeps_mode_and_refuses_links)
{
        tmptree_put("etc/fstab", "old\n", 0640);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/fstab", "new\n", 4, 0644), 0);
        char *s = tmptree_get("etc/fstab");
        ck_assert_str_eq(s, "new\n");
        free(s);
        struct stat st;
        char *p = xasprintf("%s/etc/fstab", tmptree_path());
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0640);
        free(p);
        /* A link planted at a managed path is refused, never followed (it could point at /etc/shadow). */
        p = xasprintf("%s/etc/sysctl.conf", tmptree_path());
        ck_assert_int_eq(symlink("/etc/shadow", p), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/sysctl.conf", "x\n", 2, 0644), -ELOOP);
        free(p);
        /* A link in a parent directory is refused too (RESOLVE_NO_SYMLINKS), even one that would
         * resolve inside the root: nothing is created through it. */
        p = xasprintf("%s/etc/evil", tmptree_path());
        ck_assert_int_eq(symlink("/", p), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/evil/etc/created-inside", "x\n", 2, 0644), -ELOOP);
        free(p);
        ck_assert_ptr_null(tmptree_get("etc/created-inside"));
        root_free(r);
}
END_TEST
DEFINE_TEST(atomic_write_keeps_mode_and_refuses_links,
            .description = "atomic write keeps mode and refuses links", .root = "tmptree");

START_TEST(tree_values_read_like_the_kernel)
{
        tmptree_put("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n", 0644);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_VALUE, .target = "/sys/kernel/mm/transparent_hugepage/enabled",
                           .before = "always", .after = "madvise"};
        char *err = NULL, *now = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), 0);
        char *s = tmptree_get("sys/kernel/mm/transparent_hugepage/enabled");
        ck_assert_str_eq(s, "always [madvise] never\n");
        free(s);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "madvise");
        free(now);
        struct change bad = c;
        bad.after = "sometimes"; /* not a choice: the kernel says EINVAL */
        ck_assert_int_eq(action_apply(r, &bad, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "transparent_hugepage/enabled"));
        free(err);
        ck_assert_int_eq(action_undo(r, &c, &err), 0);
        s = tmptree_get("sys/kernel/mm/transparent_hugepage/enabled");
        ck_assert_str_eq(s, "[always] madvise never\n");
        free(s);
        root_free(r);
}
END_TEST
DEFINE_TEST(tree_values_read_like_the_kernel, .description = "tree values read like the kernel", .root = "tmptree");

START_TEST(tree_swapoff_and_back)
{
        tmptree_put("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/swap\\040file file 1024 0 -2\n", 0444);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_SWAP, .target = "/swap file", .before = "on", .after = "off",
                           .aux = "/swap\\040file file 1024 0 -2"};
        char *err = NULL, *now = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), 0);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "off");
        free(now);
        ck_assert_int_eq(action_undo(r, &c, &err), 0);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "on");
        free(now);
        char *s = tmptree_get("proc/swaps");
        ck_assert_str_eq(s, "Filename\tType\tSize\tUsed\tPriority\n/swap\\040file file 1024 0 -2\n");
        free(s);
        root_free(r);
}
END_TEST
DEFINE_TEST(tree_swapoff_and_back, .description = "tree swapoff and back", .root = "tmptree");

START_TEST(commands_never_run_on_this_machine_under_a_root)
{
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_COMMAND, .target = "touch"};
        char *marker = xasprintf("%s-marker", tmptree_path());
        strv_add(&c.argv, "touch");
        strv_add(&c.argv, marker);
        char *err = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), -EPERM); /* not one of llmtune's commands */
        ck_assert_ptr_nonnull(strstr(err, "not a command llmtune runs"));
        free(err);
        ck_assert_int_ne(access(marker, F_OK), 0);
        strv_done(&c.argv);
        /* One of llmtune's own commands that would act on this machine: skipped under a root. */
        struct change d = {.type = CHANGE_COMMAND, .target = "systemctl daemon-reload"};
        strv_add(&d.argv, "systemctl");
        strv_add(&d.argv, "daemon-reload");
        err = NULL;
        ck_assert_int_eq(action_apply(r, &d, &err), 1);
        strv_done(&d.argv);
        free(marker);
        root_free(r);
}
END_TEST
DEFINE_TEST(commands_never_run_on_this_machine_under_a_root,
            .description = "commands never run on this machine under a root", .root = "tmptree");


static struct strv words(const char *s)
{
        struct strv v = {0};
        char *copy = xstrdup(s), *save = NULL;
        for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
                strv_add(&v, t);
        free(copy);
        return v;
}

static int parse(const char *s)
{
        struct strv v = words(s);
        struct cmd c;
        char *why = NULL;
        int rc = cmd_parse(&v, &c, &why);
        cmd_done(&c);
        free(why);
        strv_done(&v);
        return rc;
}

static int undo_ok(const char *fwd, const char *undo)
{
        struct strv f = words(fwd), u = words(undo);
        char *why = NULL;
        int rc = cmd_check_undo(&f, &u, &why);
        free(why);
        strv_done(&f);
        strv_done(&u);
        return rc;
}

/* A command is one of the planner's forms with typed fields, never an argv as a log spells it. */
START_TEST(commands_are_typed)
{
        ck_assert_int_eq(parse("tune2fs -E stride=128,stripe_width=512 /dev/md0"), 0);
        ck_assert_int_eq(parse("systemctl daemon-reload"), 0);
        ck_assert_int_eq(parse("update-initramfs -u -k all"), 0);
        ck_assert_int_eq(parse("dracut -f --regenerate-all"), 0);
        ck_assert_int_eq(parse("mkinitcpio -P"), 0);
        ck_assert_int_eq(parse("mkinitcpio -P -k /boot/x"), -EINVAL);
        ck_assert_int_eq(parse("modprobe nvidia_peermem"), 0);
        ck_assert_int_eq(parse("systemctl start nvidia-persistenced.service"), 0);
        ck_assert_int_eq(parse("sh -c id /dev/md0"), -EINVAL);
        ck_assert_int_eq(parse("tune2fs -E stride=1,stripe_width=2,mount_opts=x /dev/md0"), -EINVAL);
        ck_assert_int_eq(parse("tune2fs -E stride=-1,stripe_width=2 /dev/md0"), -EINVAL);
        ck_assert_int_eq(parse("tune2fs -E stride=1,stripe_width=2 /etc/shadow"), -EINVAL);
        ck_assert_int_eq(parse("tune2fs -E stride=1,stripe_width=2 /dev/../etc/shadow"), -EINVAL);
        ck_assert_int_eq(parse("modprobe -r"), -EINVAL);
        ck_assert_int_eq(parse("modprobe a;b"), -EINVAL);
        ck_assert_int_eq(parse("systemctl start --now"), -EINVAL);
        ck_assert_int_eq(parse("systemctl daemon-reload extra"), -EINVAL);
        /* the argv that runs is built from the fields */
        struct strv v = words("tune2fs -E stride=16,stripe_width=64 /dev/md0"), out = {0};
        struct cmd c;
        char *why = NULL;
        ck_assert_int_eq(cmd_parse(&v, &c, &why), 0);
        cmd_argv(&c, "/proc/self/fd/9", &out);
        char *joined = strv_join(&out, " ");
        ck_assert_str_eq(joined, "tune2fs -E stride=16,stripe_width=64 /proc/self/fd/9");
        free(joined);
        cmd_done(&c);
        strv_done(&v);
        strv_done(&out);
        /* every other form runs as it was written: built from the same table it was parsed by */
        static const char *const forms[] = {
                "systemctl daemon-reload", "update-initramfs -u -k all", "dracut -f --regenerate-all", "mkinitcpio -P",
                "update-grub", "modprobe nvidia_peermem", "systemctl start a.service", "systemctl stop a.service",
                "grubby --update-kernel=ALL --args=iommu=pt", "grubby --update-kernel=ALL --remove-args=iommu=pt",
                "kernelstub -a iommu=pt", "kernelstub -d iommu=pt", "tune2fs -E stride=16,stripe_width=64 /dev/md0",
        };
        for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
                struct strv fv = words(forms[i]), built = {0};
                ck_assert_int_eq(cmd_parse(&fv, &c, &why), 0);
                cmd_argv(&c, NULL, &built);
                char *b = strv_join(&built, " ");
                ck_assert_str_eq(b, forms[i]);
                free(b);
                cmd_done(&c);
                strv_done(&fv);
                strv_done(&built);
        }
        /* an undo is the inverse llmtune plans, nothing else */
        ck_assert_int_eq(undo_ok("tune2fs -E stride=128,stripe_width=512 /dev/md0", "tune2fs -E stride=16,stripe_width=64 /dev/md0"), 0);
        ck_assert_int_eq(undo_ok("tune2fs -E stride=128,stripe_width=512 /dev/md0", "tune2fs -E stride=16,stripe_width=64 /dev/md1"), -EINVAL);
        ck_assert_int_eq(undo_ok("tune2fs -E stride=128,stripe_width=512 /dev/md0", "sh -c id /dev/md0"), -EINVAL);
        ck_assert_int_eq(undo_ok("systemctl start a.service", "systemctl stop a.service"), 0);
        ck_assert_int_eq(undo_ok("systemctl start a.service", "systemctl stop b.service"), -EINVAL);
        ck_assert_int_eq(undo_ok("modprobe nvidia_peermem", "modprobe nouveau"), -EINVAL);
        ck_assert_int_eq(undo_ok("systemctl daemon-reload", "systemctl daemon-reload"), 0);
        /* the kernel command line, through the distribution's tool (issue 29 item 9) */
        ck_assert_int_eq(parse("update-grub"), 0);
        ck_assert_int_eq(parse("update-grub -o /boot/grub/grub.cfg"), -EINVAL);
        ck_assert_int_eq(parse("grubby --update-kernel=ALL --args=iommu=pt"), 0);
        ck_assert_int_eq(parse("grubby --update-kernel=ALL --remove-args=iommu=pt"), 0);
        ck_assert_int_eq(parse("grubby --update-kernel=ALL --args=init=/bin/sh"), -EINVAL);
        ck_assert_int_eq(parse("grubby --update-kernel=ALL --args=a;reboot"), -EINVAL);
        ck_assert_int_eq(parse("grubby --update-kernel=/boot/vmlinuz --args=iommu=pt"), -EINVAL);
        ck_assert_int_eq(parse("kernelstub -a iommu=pt"), 0);
        ck_assert_int_eq(parse("kernelstub -a -k"), -EINVAL);
        ck_assert_int_eq(undo_ok("update-grub", "update-grub"), 0);
        ck_assert_int_eq(undo_ok("grubby --update-kernel=ALL --args=iommu=pt", "grubby --update-kernel=ALL --remove-args=iommu=pt"), 0);
        ck_assert_int_eq(undo_ok("grubby --update-kernel=ALL --args=iommu=pt", "grubby --update-kernel=ALL --args=iommu=nopt"), 0);
        ck_assert_int_eq(undo_ok("grubby --update-kernel=ALL --args=iommu=pt", "grubby --update-kernel=ALL --args=quiet"), -EINVAL);
        ck_assert_int_eq(undo_ok("grubby --update-kernel=ALL --args=iommu=pt", "grubby --update-kernel=ALL --remove-args=quiet"), -EINVAL);
        ck_assert_int_eq(undo_ok("kernelstub -a iommu=pt", "kernelstub -d iommu=pt"), 0);
        ck_assert_int_eq(undo_ok("kernelstub -a iommu=pt", "kernelstub -d quiet"), -EINVAL);
}
END_TEST
DEFINE_TEST(commands_are_typed, .description = "commands are typed", .root = "tmptree");

/* An image for a command under --root: reached without links, a regular file, one link, and a
 * FIFO in its place does not hang the open. */
START_TEST(images_through_the_root_handle)
{
        tmptree_put("dev/md0", "image", 0660);
        tmptree_put("elsewhere/md1", "image", 0660);
        tmptree_link("dev/md1", "/elsewhere/md1");
        char *a = xasprintf("%s/elsewhere/md1", tmptree_path()), *b = xasprintf("%s/dev/md2", tmptree_path()),
             *fifo = xasprintf("%s/dev/md3", tmptree_path());
        ck_assert_int_eq(link(a, b), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        char *why = NULL;
        int fd = cmd_open_image(r, "/dev/md0", &why);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(cmd_open_image(r, "/dev/md1", &why), -ELOOP);
        free(why);
        why = NULL;
        ck_assert_int_eq(cmd_open_image(r, "/dev/md2", &why), -EMLINK);
        ck_assert_ptr_nonnull(strstr(why, "hard links"));
        free(why);
        why = NULL;
        ck_assert_int_eq(cmd_open_image(r, "/dev/md3", &why), -EPERM);
        free(why);
        /* the planner turns what cannot be opened so into a step for the live system */
        struct strv v = words("tune2fs -E stride=1,stripe_width=2 /dev/md2");
        ck_assert(!cmd_runs_here(r, &v));
        strv_done(&v);
        v = words("tune2fs -E stride=1,stripe_width=2 /dev/md0");
        ck_assert(cmd_runs_here(r, &v));
        strv_done(&v);
        free(a);
        free(b);
        free(fifo);
        root_free(r);
}
END_TEST
DEFINE_TEST(images_through_the_root_handle, .description = "images through the root handle", .root = "tmptree");

/* A change log record is checked as llmtune would have made the change. */
START_TEST(records_are_checked)
{
        char *why = NULL;
        struct change f = {.type = CHANGE_FILE, .target = "/etc/shadow"};
        ck_assert_int_eq(action_check(&f, &why), -EPERM);
        free(why);
        f.target = "/etc/cron.d/llmtune-x";
        ck_assert_int_eq(action_check(&f, &why), -EPERM);
        free(why);
        f.target = "/etc/sysctl.d/90-llmtune-x.conf";
        ck_assert_int_eq(action_check(&f, &why), 0);
        strv_add(&f.mkdirs, "/var/spool");
        ck_assert_int_eq(action_check(&f, &why), -EPERM);
        free(why);
        strv_done(&f.mkdirs);
        struct change v = {.type = CHANGE_VALUE, .target = "/proc/sys/kernel/core_pattern", .after = "|/bin/sh"};
        ck_assert_int_eq(action_check(&v, &why), -EPERM);
        free(why);
        v.target = "/proc/sys/vm/swappiness";
        v.after = "1\nkernel.x = 1";
        ck_assert_int_eq(action_check(&v, &why), -EPERM);
        free(why);
        v.after = "4096\t131072\t6291456";
        ck_assert_int_eq(action_check(&v, &why), 0);
        struct change m = {.type = CHANGE_MOUNTOPT, .target = "/raid", .before = "rw,relatime", .after = "rw noexec"};
        ck_assert_int_eq(action_check(&m, &why), -EPERM);
        free(why);
}
END_TEST
DEFINE_TEST(records_are_checked, .description = "records are checked", .root = "tmptree");

/* A file of the source tree (LLMTUNE_SOURCE_ROOT, set by tests/meson.build), open for reading. */
static FILE *source_file(const char *rel)
{
        const char *src = getenv("LLMTUNE_SOURCE_ROOT");
        ck_assert_msg(src != NULL, "LLMTUNE_SOURCE_ROOT is not set (tests/meson.build sets it)");
        _cleanup_free_ char *path = xasprintf("%s/%s", src, rel);
        FILE *f = fopen(path, "re");
        ck_assert_msg(f != NULL, "cannot open %s", path);
        return f;
}

/* The remedy kinds: remedy.c's table, the plan functions apply/plan.c registers under its names,
 * and the lists in llmtune.rule(5) and README.md name the same kinds. */
START_TEST(remedy_kinds_agree)
{
        FILE *f = source_file("packaging/man/llmtune.rule.5");
        /* The man page's list: ".TP" then ".B kind" in the Remedies section, "\-" for "-". */
        struct strv man = {0};
        char line[512];
        bool in = false, tp = false;
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (startswith(line, ".SS ") || startswith(line, ".SH "))
                        in = streq(line, ".SS Remedies");
                if (in && tp && startswith(line, ".B ")) {
                        struct sbuf b = {0};
                        for (const char *p = line + 3; *p; p++)
                                if (!(p[0] == '\\' && p[1] == '-'))
                                        sbuf_addn(&b, p, 1);
                        strv_push(&man, sbuf_steal(&b));
                }
                tp = in && streq(line, ".TP");
        }
        fclose(f);
        /* README's: the backquoted kinds of the paragraph "Remedy kinds: ..." */
        f = source_file("README.md");
        struct strv readme = {0};
        in = false;
        while (fgets(line, sizeof(line), f)) {
                in = startswith(line, "Remedy kinds:") || (in && line[0] != '\n');
                for (char *p = line, *q; in && (p = strchr(p, '`')) && (q = strchr(p + 1, '`')); p = q + 1) {
                        *q = '\0';
                        if (p[1] && strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(p + 1))
                                strv_add(&readme, p + 1);
                }
        }
        fclose(f);
        /* remedy.c's table is the one list of kinds: each has the plan function apply/plan.c
         * registered under its name, and no plan was registered under a name the table lacks. */
        size_t n = 0;
        for (const struct remedy_kind *k; (k = remedy_kind_at(n)); n++) {
                ck_assert_msg(remedy_kind_plan(k->name) != NULL, "remedy.c knows '%s', which no plan function plans",
                              k->name);
                ck_assert_msg(strv_contains(&man, k->name), "llmtune.rule(5) does not describe the remedy '%s'",
                              k->name);
                ck_assert_msg(strv_contains(&readme, k->name), "README.md does not list the remedy '%s'", k->name);
        }
        ck_assert_msg(remedy_plan_stray(0) == NULL, "a plan function registers '%s', which remedy.c does not know",
                      remedy_plan_stray(0));
        ck_assert_uint_eq(man.n, n); /* and the manual lists no kind the table lacks */
        ck_assert_uint_eq(readme.n, n);
        strv_done(&man);
        strv_done(&readme);
}
END_TEST
DEFINE_TEST(remedy_kinds_agree, .description = "remedy kinds agree", .root = "tmptree");

/* docs/TUNING.md "Which file wins" has a row for every family dropin-order.c models, naming its
 * manual page, and the NCCL row gives NCCL's order: the user's file before /etc/nccl.conf, the
 * first definition winning (NCCL src/misc/param.cc, initEnvFunc). */
START_TEST(dropin_families_documented)
{
        FILE *f = source_file("docs/TUNING.md");
        struct strv rows = {0};
        char line[4096];
        bool in = false;
        while (fgets(line, sizeof(line), f)) {
                if (startswith(line, "## "))
                        in = startswith(line, "## Which file wins");
                if (in && startswith(line, "| "))
                        strv_add(&rows, line);
        }
        fclose(f);
        for (size_t i = 0; dropin_families[i]; i++) {
                const struct dropin_family *fam = dropin_families[i];
                _cleanup_free_ char *key = xasprintf("| `%s` |", fam->name);
                const char *row = NULL;
                for (size_t k = 0; k < rows.n && !row; k++)
                        if (startswith(rows.v[k], key))
                                row = rows.v[k];
                ck_assert_msg(row != NULL, "docs/TUNING.md has no row for the family %s", fam->name);
                ck_assert_msg(strstr(row, fam->manual) != NULL, "the %s row does not cite %s", fam->name, fam->manual);
        }
        const char *nccl = NULL;
        for (size_t k = 0; k < rows.n && !nccl; k++)
                if (startswith(rows.v[k], "| NCCL files |"))
                        nccl = rows.v[k];
        ck_assert_msg(nccl != NULL, "docs/TUNING.md has no row for NCCL's files");
        const char *user = strstr(nccl, "~/.nccl.conf"), *etc = strstr(nccl, "/etc/nccl.conf");
        ck_assert_msg(user && etc && user < etc, "the NCCL row must read ~/.nccl.conf before /etc/nccl.conf");
        ck_assert_msg(strstr(nccl, "the first definition") != NULL, "the NCCL row must say the first definition wins");
        strv_done(&rows);
}
END_TEST
DEFINE_TEST(dropin_families_documented, .description = "every drop-in family's precedence is documented",
            .root = "none");

UNIT_MAIN(.name = "apply", .setup = setup, .teardown = tmptree_drop)
