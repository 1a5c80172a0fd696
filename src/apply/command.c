/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune's commands as typed data (see command.h). */
#include "apply/command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "base/file-format.h"

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
        return startswith(s, "/dev/") && safe_word(s + 1, "/._-+:", 255) && act_clean_path(s);
}

bool cmd_kernel_arg(const char *arg) { return ff_check(FF_CMDLINE, FF_ITEM, arg) == NULL; }

static bool module_name(const char *s) { return safe_word(s, "_-", 64); }

static bool unit_name(const char *s)
{
        const char *dot = strrchr(s, '.');
        return safe_word(s, ":_.@-\\", 255) && dot && dot != s && dot[1];
}

/*
 * Every command but tune2fs, each written once, for parsing and for building its argv: its fixed
 * words, then (ARG_OK not NULL) one argument, ARG_PREFIX followed by a name ARG_OK accepts.
 */
static const struct {
        enum cmd_tool tool;
        const char *const words[5]; /* NULL-terminated */
        bool (*arg_ok)(const char *name);
        const char *arg_prefix;
} commands[] = {
        {CMD_DAEMON_RELOAD, {"systemctl", "daemon-reload"}, NULL, NULL},
        {CMD_UPDATE_INITRAMFS, {"update-initramfs", "-u", "-k", "all"}, NULL, NULL},
        {CMD_DRACUT, {"dracut", "-f", "--regenerate-all"}, NULL, NULL},
        {CMD_MKINITCPIO, {"mkinitcpio", "-P"}, NULL, NULL},
        {CMD_UPDATE_GRUB, {"update-grub"}, NULL, NULL},
        {CMD_MODPROBE, {"modprobe"}, module_name, ""},
        {CMD_UNIT_START, {"systemctl", "start"}, unit_name, ""},
        {CMD_UNIT_STOP, {"systemctl", "stop"}, unit_name, ""},
        {CMD_GRUBBY_ARGS, {"grubby", "--update-kernel=ALL"}, cmd_kernel_arg, "--args="},
        {CMD_GRUBBY_REMOVE, {"grubby", "--update-kernel=ALL"}, cmd_kernel_arg, "--remove-args="},
        {CMD_KERNELSTUB_ADD, {"kernelstub", "-a"}, cmd_kernel_arg, ""},
        {CMD_KERNELSTUB_DEL, {"kernelstub", "-d"}, cmd_kernel_arg, ""},
};

/* ARGV as command I of the table: its name argument (a pointer into ARGV; "" when it takes none),
 * or NULL when ARGV is not that command. */
static const char *command_match(const struct strv *argv, size_t i)
{
        size_t n = 0;
        while (commands[i].words[n])
                n++;
        if (argv->n != n + (commands[i].arg_ok ? 1 : 0))
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (!streq(argv->v[k], commands[i].words[k]))
                        return NULL;
        if (!commands[i].arg_ok)
                return "";
        const char *name = startswith(argv->v[n], commands[i].arg_prefix) ? argv->v[n] + strlen(commands[i].arg_prefix)
                                                                          : NULL;
        return name && commands[i].arg_ok(name) ? name : NULL;
}

/* tune2fs -E stride=N,stripe_width=M /dev/DEVICE */
static int parse_tune2fs(const struct strv *argv, struct cmd *c)
{
        const char *const *v = (const char *const *)argv->v;
        if (argv->n != 4 || !streq(v[0], "tune2fs") || !streq(v[1], "-E") || !startswith(v[2], "stride="))
                return -EINVAL;
        const char *s = v[2] + strlen("stride=");
        const char *comma = strchr(s, ',');
        if (!comma || !startswith(comma, ",stripe_width=") || !parse_num(s, (size_t)(comma - s), &c->stride) ||
            !parse_num(comma + strlen(",stripe_width="), strlen(comma + strlen(",stripe_width=")), &c->stripe_width) ||
            !device_path(v[3]))
                return -EINVAL;
        c->tool = CMD_TUNE2FS;
        c->device = xstrdup(v[3]);
        return 0;
}

int cmd_parse(const struct strv *argv, struct cmd *c, char **why)
{
        *c = (struct cmd){0};
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
                const char *name = command_match(argv, i);
                if (name) {
                        c->tool = commands[i].tool;
                        c->name = commands[i].arg_ok ? xstrdup(name) : NULL;
                        return 0;
                }
        }
        if (parse_tune2fs(argv, c) == 0)
                return 0;
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
        if (c->tool == CMD_TUNE2FS) {
                strv_add(ret, "tune2fs");
                strv_add(ret, "-E");
                strv_push(ret, xasprintf("stride=%lu,stripe_width=%lu", c->stride, c->stripe_width));
                strv_add(ret, device_arg ? device_arg : c->device);
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
                if (commands[i].tool != c->tool)
                        continue;
                for (const char *const *w = commands[i].words; *w; w++)
                        strv_add(ret, *w);
                if (commands[i].arg_ok)
                        strv_push(ret, xasprintf("%s%s", commands[i].arg_prefix, c->name));
                return;
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
