/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune's commands as typed data (see command.h). */
#include "apply/command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file-format.h"

static bool argv_is(const struct strv *a, const char *const *want)
{
        size_t n = 0;
        while (want[n])
                n++;
        if (a->n != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a->v[i], want[i]))
                        return false;
        return true;
}

/* A decimal number without sign, spaces or leading zeros (other than "0"), below 2^32. */
static bool parse_num(const char *s, size_t len, unsigned long *ret)
{
        if (len == 0 || len > 10 || (len > 1 && s[0] == '0'))
                return false;
        unsigned long v = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned long)(s[i] - '0');
        }
        if (v > 0xffffffffUL)
                return false;
        *ret = v;
        return true;
}

/* Only letters, digits and the characters of EXTRA; not starting with '-' (never an option). */
static bool safe_word(const char *s, const char *extra, size_t max)
{
        size_t n = strlen(s);
        if (n == 0 || n > max || s[0] == '-')
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      strchr(extra, *s)))
                        return false;
        return true;
}

/* /dev/NAME[/NAME...]: no empty, "." or ".." component, a safe alphabet. */
static bool device_path(const char *s)
{
        if (!startswith(s, "/dev/") || !safe_word(s + 1, "/._-+:", 255))
                return false;
        for (const char *p = s + 1;;) {
                const char *e = strchrnul(p, '/');
                size_t n = (size_t)(e - p);
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!*e)
                        return true;
                p = e + 1;
        }
}

bool cmd_kernel_arg(const char *arg) { return ff_check(FF_CMDLINE, FF_ITEM, arg) == NULL; }

/* "--args=ARG" / "--remove-args=ARG" of grubby, "-a ARG" / "-d ARG" of kernelstub. */
static int parse_boot_tool(const struct strv *argv, struct cmd *c)
{
        const char *const *v = (const char *const *)argv->v;
        if (argv->n == 3 && streq(v[0], "grubby") && streq(v[1], "--update-kernel=ALL")) {
                const char *a = startswith(v[2], "--args=")          ? v[2] + strlen("--args=")
                                : startswith(v[2], "--remove-args=") ? v[2] + strlen("--remove-args=")
                                                                     : NULL;
                if (!a || !cmd_kernel_arg(a))
                        return -EINVAL;
                c->tool = startswith(v[2], "--args=") ? CMD_GRUBBY_ARGS : CMD_GRUBBY_REMOVE;
                c->name = xstrdup(a);
                return 0;
        }
        if (argv->n == 3 && streq(v[0], "kernelstub") && (streq(v[1], "-a") || streq(v[1], "-d")) &&
            cmd_kernel_arg(v[2])) {
                c->tool = streq(v[1], "-a") ? CMD_KERNELSTUB_ADD : CMD_KERNELSTUB_DEL;
                c->name = xstrdup(v[2]);
                return 0;
        }
        return -EINVAL;
}

static bool unit_name(const char *s)
{
        const char *dot = strrchr(s, '.');
        return safe_word(s, ":_.@-\\", 255) && dot && dot != s && dot[1];
}

int cmd_parse(const struct strv *argv, struct cmd *c, char **why)
{
        static const char *const reload[] = {"systemctl", "daemon-reload", NULL};
        static const char *const deb[] = {"update-initramfs", "-u", "-k", "all", NULL};
        static const char *const rh[] = {"dracut", "-f", "--regenerate-all", NULL};
        static const char *const arch[] = {"mkinitcpio", "-P", NULL};
        static const char *const grub[] = {"update-grub", NULL};
        *c = (struct cmd){0};
        if (argv_is(argv, grub)) {
                c->tool = CMD_UPDATE_GRUB;
                return 0;
        }
        if (parse_boot_tool(argv, c) == 0)
                return 0;
        if (argv_is(argv, reload)) {
                c->tool = CMD_DAEMON_RELOAD;
                return 0;
        }
        if (argv_is(argv, deb)) {
                c->tool = CMD_UPDATE_INITRAMFS;
                return 0;
        }
        if (argv_is(argv, rh)) {
                c->tool = CMD_DRACUT;
                return 0;
        }
        if (argv_is(argv, arch)) {
                c->tool = CMD_MKINITCPIO;
                return 0;
        }
        const char *const *v = (const char *const *)argv->v;
        if (argv->n == 4 && streq(v[0], "tune2fs") && streq(v[1], "-E") && startswith(v[2], "stride=")) {
                const char *s = v[2] + strlen("stride=");
                const char *comma = strchr(s, ',');
                if (comma && startswith(comma, ",stripe_width=") &&
                    parse_num(s, (size_t)(comma - s), &c->stride) &&
                    parse_num(comma + strlen(",stripe_width="), strlen(comma + strlen(",stripe_width=")),
                              &c->stripe_width) &&
                    device_path(v[3])) {
                        c->tool = CMD_TUNE2FS;
                        c->device = xstrdup(v[3]);
                        return 0;
                }
        }
        if (argv->n == 2 && streq(v[0], "modprobe") && safe_word(v[1], "_-", 64)) {
                c->tool = CMD_MODPROBE;
                c->name = xstrdup(v[1]);
                return 0;
        }
        if (argv->n == 3 && streq(v[0], "systemctl") && (streq(v[1], "start") || streq(v[1], "stop")) &&
            unit_name(v[2])) {
                c->tool = streq(v[1], "start") ? CMD_UNIT_START : CMD_UNIT_STOP;
                c->name = xstrdup(v[2]);
                return 0;
        }
        _cleanup_free_ char *s = strv_join(argv, " ");
        *why = xasprintf("'%.200s' is not a command llmtune runs (allowed: systemctl daemon-reload|start|stop UNIT, "
                         "update-initramfs -u -k all, dracut -f --regenerate-all, mkinitcpio -P, tune2fs -E "
                         "stride=N,stripe_width=M /dev/DEVICE, modprobe MODULE, update-grub, grubby "
                         "--update-kernel=ALL --args=|--remove-args=ARG, kernelstub -a|-d ARG)",
                         s);
        return -EINVAL;
}

void cmd_done(struct cmd *c)
{
        free(c->device);
        free(c->name);
        *c = (struct cmd){0};
}

void cmd_argv(const struct cmd *c, const char *device_arg, struct strv *ret)
{
        switch (c->tool) {
        case CMD_DAEMON_RELOAD:
                strv_add(ret, "systemctl");
                strv_add(ret, "daemon-reload");
                break;
        case CMD_UPDATE_INITRAMFS:
                strv_add(ret, "update-initramfs");
                strv_add(ret, "-u");
                strv_add(ret, "-k");
                strv_add(ret, "all");
                break;
        case CMD_DRACUT:
                strv_add(ret, "dracut");
                strv_add(ret, "-f");
                strv_add(ret, "--regenerate-all");
                break;
        case CMD_MKINITCPIO:
                strv_add(ret, "mkinitcpio");
                strv_add(ret, "-P");
                break;
        case CMD_TUNE2FS:
                strv_add(ret, "tune2fs");
                strv_add(ret, "-E");
                strv_push(ret, xasprintf("stride=%lu,stripe_width=%lu", c->stride, c->stripe_width));
                strv_add(ret, device_arg ? device_arg : c->device);
                break;
        case CMD_MODPROBE:
                strv_add(ret, "modprobe");
                strv_add(ret, c->name);
                break;
        case CMD_UNIT_START:
        case CMD_UNIT_STOP:
                strv_add(ret, "systemctl");
                strv_add(ret, c->tool == CMD_UNIT_START ? "start" : "stop");
                strv_add(ret, c->name);
                break;
        case CMD_UPDATE_GRUB:
                strv_add(ret, "update-grub");
                break;
        case CMD_GRUBBY_ARGS:
        case CMD_GRUBBY_REMOVE:
                strv_add(ret, "grubby");
                strv_add(ret, "--update-kernel=ALL");
                strv_push(ret, xasprintf("%s%s", c->tool == CMD_GRUBBY_ARGS ? "--args=" : "--remove-args=", c->name));
                break;
        case CMD_KERNELSTUB_ADD:
        case CMD_KERNELSTUB_DEL:
                strv_add(ret, "kernelstub");
                strv_add(ret, c->tool == CMD_KERNELSTUB_ADD ? "-a" : "-d");
                strv_add(ret, c->name);
                break;
        }
}

int cmd_check_undo(const struct strv *forward, const struct strv *undo, char **why)
{
        struct cmd f, u;
        int rc = cmd_parse(forward, &f, why);
        if (rc < 0)
                return rc;
        if (undo->n == 0) {
                cmd_done(&f);
                return 0;
        }
        rc = cmd_parse(undo, &u, why);
        if (rc < 0) {
                cmd_done(&f);
                return rc;
        }
        bool ok;
        switch (f.tool) {
        case CMD_DAEMON_RELOAD:
        case CMD_UPDATE_INITRAMFS:
        case CMD_DRACUT:
        case CMD_MKINITCPIO:
        case CMD_UPDATE_GRUB:
                ok = u.tool == f.tool; /* regenerating again after the files are restored */
                break;
        case CMD_GRUBBY_ARGS:
                /* the argument removed, or the key given back the value it had */
                ok = (u.tool == CMD_GRUBBY_REMOVE && streq(u.name, f.name)) ||
                     (u.tool == CMD_GRUBBY_ARGS && strcspn(u.name, "=") == strcspn(f.name, "=") &&
                      strncmp(u.name, f.name, strcspn(f.name, "=")) == 0);
                break;
        case CMD_KERNELSTUB_ADD:
                ok = u.tool == CMD_KERNELSTUB_DEL && streq(u.name, f.name);
                break;
        case CMD_TUNE2FS:
                ok = u.tool == CMD_TUNE2FS && streq(u.device, f.device);
                break;
        case CMD_UNIT_START:
                ok = u.tool == CMD_UNIT_STOP && streq(u.name, f.name);
                break;
        default:
                ok = false; /* modprobe and stop have no undo llmtune runs */
                break;
        }
        if (!ok) {
                _cleanup_free_ char *a = strv_join(forward, " "), *b = strv_join(undo, " ");
                *why = xasprintf("'%.200s' is not how llmtune undoes '%.200s'", b, a);
                rc = -EINVAL;
        }
        cmd_done(&f);
        cmd_done(&u);
        return rc;
}

int cmd_open_image(struct root *r, const char *device, char **why)
{
        /* O_NONBLOCK: a FIFO planted at the image path must not hang the open. */
        _cleanup_close_ int fd = root_open_nolinks(r, device, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0);
        if (fd < 0) {
                *why = xasprintf("cannot open the image %s in the tree: %s%s", device, strerror(-fd),
                                 fd == -ELOOP ? " (a symbolic link is on the way)" : "");
                return fd;
        }
        struct stat st;
        int rc = 0;
        if (fstat(fd, &st) < 0)
                rc = -errno;
        else if (!S_ISREG(st.st_mode))
                rc = -EPERM;
        else if (st.st_nlink != 1)
                rc = -EMLINK;
        if (rc < 0) {
                *why = rc == -EPERM    ? xasprintf("the image %s in the tree is not a regular file", device)
                       : rc == -EMLINK ? xasprintf("the image %s in the tree has %lu hard links (it may be a file "
                                                   "outside the tree)",
                                                   device, (unsigned long)st.st_nlink)
                                       : xasprintf("cannot stat the image %s: %s", device, strerror(-rc));
                return rc;
        }
        /* Blocking again for the tool (a regular file: no effect on reads, but no surprise either). */
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        return TAKE_FD(fd);
}

bool cmd_runs_here(struct root *r, const struct strv *argv)
{
        struct cmd c;
        char *why = NULL;
        if (cmd_parse(argv, &c, &why) < 0) {
                free(why);
                return false;
        }
        bool runs = root_is_live(r);
        if (!runs && c.tool == CMD_TUNE2FS) {
                _cleanup_close_ int fd = cmd_open_image(r, c.device, &why);
                runs = fd >= 0;
                free(why);
        }
        cmd_done(&c);
        return runs;
}
