/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A command (the initramfs rebuilt, tune2fs, modprobe, systemctl): argv and the argv that undoes
 * it, both in the typed forms of command.h. It has no state to read back: verify cannot check it.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"
#include "apply/command.h"
#include "base/test-hooks.h"

/*
 * Run one of llmtune's commands (command.h): ARGV is parsed into typed fields and the argv that
 * runs is built from them, never taken as it stands (it may come from the change log). Under a
 * foreign root only tune2fs on an image inside the tree runs, handed the image as /proc/self/fd/N
 * of a file opened through the root handle; anything else would act on this machine and is
 * skipped. 1 = skipped.
 */
static int run_command(struct root *r, const struct strv *argv, char **err)
{
        if (argv->n == 0)
                return 1;
        struct cmd c;
        int rc = cmd_parse(argv, &c, err);
        if (rc < 0)
                return -EPERM;
        int fault = test_fault(argv->v[0]);
        if (fault < 0) {
                *err = xasprintf("%s: %s (an injected fault: test build)", argv->v[0], strerror(-fault));
                cmd_done(&c);
                return fault;
        }
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *devarg = NULL;
        rc = 0;
        if (!root_is_live(r)) {
                if (c.tool != CMD_TUNE2FS)
                        rc = 1;
                else if ((fd = cmd_open_image(r, c.device, err)) < 0)
                        rc = fd;
                else
                        devarg = xasprintf("/proc/self/fd/%d", fd);
        } else if (c.tool == CMD_TUNE2FS) {
                struct stat st;
                if (stat(c.device, &st) < 0 || !S_ISBLK(st.st_mode)) {
                        *err = xasprintf("tune2fs: %s is not a block device", c.device);
                        rc = -EPERM;
                }
        }
        if (rc == 0) {
                _cleanup_strv_ struct strv v = {0};
                cmd_argv(&c, devarg, &v);
                rc = act_run_argv(v.v, fd, err);
        }
        cmd_done(&c);
        return rc;
}

static int command_check(const struct change *c, char **why)
{
        return cmd_check_undo(&c->argv, &c->undo, why) < 0 ? -EPERM : 0;
}

/* 1: skipped under a foreign root */
static int command_apply(struct root *r, const struct change *c, char **err) { return run_command(r, &c->argv, err); }

static int command_undo(struct root *r, const struct change *c, char **err)
{
        /* action_check: the undo is the inverse llmtune plans for the command */
        if (c->undo.n == 0)
                return 1; /* nothing llmtune can run to reverse it */
        return run_command(r, &c->undo, err);
}

static bool any_target(const char *t) { return true; }

static bool command_undoable(const struct change *c) { return c->undo.n > 0; }

static char *command_line(const struct change *c) { return strv_join(&c->argv, " "); }

/* Under a foreign root only an image file in the tree is worked on (plan_command_runs). */
static const char *command_status(struct root *r, const struct change *c)
{
        return plan_command_runs(r, &c->argv) ? NULL : "skipped";
}

static void command_json(const struct change *c, struct json_object *o)
{
        _cleanup_free_ char *cmd = strv_join(&c->argv, " ");
        json_object_object_add(o, "command", json_object_new_string(cmd));
}

const struct change_kind change_kind_command = {
        .name = "command",
        .allowed = any_target,
        .area = "anything",
        .check = command_check,
        .apply = command_apply,
        .undo = command_undo,
        .undoable = command_undoable,
        .sections = {"Commands"},
        .line = command_line,
        .label = command_line,
        .status = command_status,
        .json = command_json,
};
