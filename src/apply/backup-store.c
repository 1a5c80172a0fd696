/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The change log's backup store (backup-store.h). */
#include "apply/backup-store.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/change-kind.h"
#include "apply/changelog-internal.h"
#include "base/digest.h"

/* Is NAME a temporary file of backup_store (".<sha256>.llmtune-<pid>")? */
bool backup_is_temp_name(const char *name, const void *unused _unused_)
{
        if (name[0] != '.' || strlen(name) <= 1 + 64 + strlen(".llmtune-"))
                return false;
        _cleanup_free_ char *hex = xstrndup(name + 1, 64);
        return sha256_hex_valid(hex) && name_is_prefix_pid(name + 1 + 64, ".llmtune-");
}

/* Store CONTENT as backups/<sha256> unless it is there already; *ref = "backups/<sha256>". MODE:
 * 0644, or 0600 for the content of a file others may not read (a 0600 fstab with a password). */
static int backup_store(struct root *r, const char *content, mode_t mode, char sha[65], char **ref, char **why)
{
        size_t len = strlen(content);
        sha256_hex(content, len, sha);
        _cleanup_free_ char *path = xasprintf("%s/%s", BACKUP_DIR, sha);
        /* A backup is often the only copy of the original: one already there is reused only when
         * its content hashes to its name (a damaged or planted file of the right size is not the
         * original), else it is written again. */
        root_forget(r, path);
        const char *data;
        size_t have;
        char actual[65] = "";
        if (root_read(r, path, &data, &have) == 0)
                sha256_hex(data, have, actual);
        root_forget(r, path);
        if (!streq(actual, sha)) {
                int rc = root_write_file(r, path, content, len, mode);
                if (rc < 0)
                        return rc;
        }
        /* What backup_load will ask of it, asked now, before a record names it: a store the trust
         * policy refuses (a sticky log directory where another user planted this name) fails the
         * change before it is made, not its rollback. And a content written before as readable
         * (or replaced keeping the mode it had) is made private when this one must be. */
        _cleanup_close_ int fd = log_open_trusted(r, path, O_RDONLY, 0, true, why);
        if (fd < 0)
                return fd;
        struct stat st;
        int rc = mode == 0600 && fstat(fd, &st) == 0 && (st.st_mode & 0077) && fchmod(fd, 0600) < 0 ? -errno : 0;
        if (rc < 0)
                return rc;
        *ref = xasprintf("backups/%s", sha);
        return 0;
}

/* C's before and after states that go to the backup store rather than inline: a file's content
 * always (as private as the file: the target's mode now, else the mode apply gives a new one), a
 * value over CHANGELOG_VALUE_INLINE (0600: nobody else needs it). BK names each stored one
 * ("backups/<sha256>", NULL when inline) and SHA its hash. Returns 0 or -errno. */
int backup_store_change(struct root *r, const struct change *c, char sha[2][65], char *bk[2], char **why)
{
        const char *state[2] = {c->before, c->after};
        mode_t bmode = 0600;
        bool content = change_kind_of(c)->content;
        if (content) {
                struct stat st;
                mode_t m = c->target && root_stat(r, c->target, &st, false) == 0 && S_ISREG(st.st_mode)
                                   ? st.st_mode
                                   : (c->mode ? c->mode : 0644);
                bmode = (m & 0004) ? 0644 : 0600;
        }
        for (int k = 0; k < 2; k++) {
                bool store = state[k] && (content || strlen(state[k]) > CHANGELOG_VALUE_INLINE);
                int rc = store ? backup_store(r, state[k], bmode, sha[k], &bk[k], why) : 0;
                if (rc < 0)
                        return rc;
        }
        return 0;
}

/* The record of C as one line (with its newline, *RET_LEN bytes), chained to L's last record; its
 * hash into HASH. SHA and BK: what store_change_backups stored. Caller frees. */

/* Load a file content named by "backup_KEY" and check it against "KEY_sha256". */
int backup_load(struct root *r, json_object *o, const char *which, char **ret, char **why)
{
        _cleanup_free_ char *bkey = xasprintf("backup_%s", which), *skey = xasprintf("%s_sha256", which);
        const char *ref = json_doc_str(o, bkey), *sha = json_doc_str(o, skey);
        *ret = NULL;
        if (!ref && !sha)
                return 0; /* absent */
        if (!ref || !sha || !startswith(ref, "backups/") || !sha256_hex_valid(ref + strlen("backups/")) ||
            !streq(ref + strlen("backups/"), sha)) {
                *why = xasprintf("its %s backup reference is malformed", which);
                return -EINVAL;
        }
        _cleanup_free_ char *path = xasprintf("%s/%s", CHANGELOG_DIR, ref);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        _cleanup_free_ char *refused = NULL;
        _cleanup_close_ int fd = log_open_trusted(r, path, O_RDONLY, 0, true, &refused);
        int rc = fd < 0 ? fd : log_read_whole(fd, &data, &len);
        if (rc < 0) {
                *why = xasprintf("backup %s of its %s content: %s", path, which,
                                 refused ? refused : changelog_strerror(rc));
                return rc;
        }
        char actual[65];
        sha256_hex(data, len, actual);
        if (!streq(actual, sha) || memchr(data, '\0', len)) {
                *why = xasprintf("backup %s of its %s content was altered", path, which);
                return -EBADMSG;
        }
        *ret = xstrndup(data, len);
        return 0;
}

