/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * md.* and mount.*: md arrays from sysfs (Documentation/admin-guide/md.rst) with /proc/mdstat
 * filling what sysfs lacks, the filesystem each array carries (its superblock's stripe geometry
 * against the one the array implies, mke2fs(8) "stride"/"stripe_width"), the mount options, and
 * the mount table itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "facts/facts.h"
#include "facts/readers/mdstat.h"
#include "facts/readers/mounts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"
#include "facts/readers/superblock.h"

#define BLOCK_DIR "/sys/block"

enum have { HAVE_NONE, HAVE_OK, HAVE_BAD };

/* What the derived facts need, from whichever source answered first. */
struct md {
        char *name;
        enum have level_h, chunk_h, disks_h;
        char *level;
        uint64_t chunk;
        uint64_t raid_disks;
        const struct mdstat_array *stat; /* the /proc/mdstat block, or NULL */
        bool sysfs;
};

/* Data-bearing disks of a stripe: mke2fs(8) "stripe_width" = stride x data disks. */
static int data_disks(const char *level, uint64_t n, uint64_t *ret)
{
        if (streq(level, "raid0") || streq(level, "linear"))
                *ret = n;
        else if (streq(level, "raid4") || streq(level, "raid5"))
                *ret = n >= 1 ? n - 1 : 0;
        else if (streq(level, "raid6"))
                *ret = n >= 2 ? n - 2 : 0;
        else if (streq(level, "raid10"))
                *ret = n / 2; /* the default near=2 layout */
        else if (streq(level, "raid1") || streq(level, "multipath"))
                *ret = n ? 1 : 0;
        else
                return -EINVAL;
        return 0;
}

static bool striped(const char *level)
{
        return streq(level, "raid0") || streq(level, "raid4") || streq(level, "raid5") || streq(level, "raid6") ||
               streq(level, "raid10");
}

/* One integer attribute of md/; records the fact and remembers the value. */
static void md_sysfs_int(struct facts *f, struct md *m, const char *file, const char *fact, enum have *h,
                         uint64_t *v)
{
        _cleanup_free_ char *path = xasprintf(BLOCK_DIR "/%s/md/%s", m->name, file);
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(facts_root(f), path, &line);
        if (rc == -ENOENT)
                return; /* left to /proc/mdstat */
        /* During a reshape md.c prints "NEW (OLD)" for raid_disks and chunk_size. */
        char *paren = rc == 0 ? strchr(line, '(') : NULL;
        uint64_t old = 0;
        if (paren) {
                int end = -1;
                if (sscanf(paren, "(%" SCNu64 ")%n", &old, &end) != 1 || end < 0 || paren[end] || paren[1] == '-')
                        rc = -EINVAL;
                *paren = '\0';
        }
        if (rc == 0)
                rc = parse_u64(line, v);
        if (rc < 0) {
                fact_unreadable(f, path, rc, line, "md.%s.%s", m->name, fact);
                *h = HAVE_BAD;
                return;
        }
        fact_uint(f, path, *v, "md.%s.%s", m->name, fact);
        if (paren)
                fact_uint(f, path, old, "md.%s.reshape_from.%s", m->name, fact);
        *h = HAVE_OK;
}

static void md_sysfs(struct facts *f, struct md *m)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *lp = xasprintf(BLOCK_DIR "/%s/md/level", m->name);
        _cleanup_free_ char *level = NULL;
        int rc = root_read_line(r, lp, &level);
        if (rc == 0) {
                fact_str(f, lp, level, "md.%s.level", m->name);
                m->level = xstrdup(level);
                m->level_h = HAVE_OK;
        } else if (rc == -ENODATA) {
                fact_absent(f, lp, "array has no level (inactive or not yet assembled)", "md.%s.level", m->name);
                m->level_h = HAVE_BAD;
        } else if (rc != -ENOENT) {
                fact_unreadable(f, lp, rc, NULL, "md.%s.level", m->name);
                m->level_h = HAVE_BAD;
        }
        md_sysfs_int(f, m, "chunk_size", "chunk_size", &m->chunk_h, &m->chunk);
        md_sysfs_int(f, m, "raid_disks", "raid_disks", &m->disks_h, &m->raid_disks);
        _cleanup_free_ char *sp = xasprintf(BLOCK_DIR "/%s/md/array_state", m->name);
        if (!root_gone(root_stat(r, sp, &(struct stat){0}, true))) /* there: read it, or say it is unreadable */
                fact_file_str(f, sp, NULL, "md.%s.state", m->name);
        _cleanup_free_ char *dp = xasprintf(BLOCK_DIR "/%s/md/degraded", m->name);
        if (!root_gone(root_stat(r, dp, &(struct stat){0}, true))) /* there: read it, or say it is unreadable */
                fact_file_int(f, dp, NULL, "md.%s.degraded", m->name);
        _cleanup_free_ char *ap = xasprintf(BLOCK_DIR "/%s/md/sync_action", m->name);
        if (!root_gone(root_stat(r, ap, &(struct stat){0}, true))) /* there: read it, or say it is unreadable */
                fact_file_str(f, ap, NULL, "md.%s.sync_action", m->name);

        /* Members: md/dev-NAME per component (spares included), else the holder links in slaves/. */
        _cleanup_free_ char *mdp = xasprintf(BLOCK_DIR "/%s/md", m->name);
        struct strv ents = {0}, members = {0};
        const char *src = mdp;
        int rc2 = root_list(r, mdp, &ents);
        for (size_t i = 0; i < ents.n; i++)
                if (startswith(ents.v[i], "dev-") && ents.v[i][4])
                        strv_add(&members, ents.v[i] + 4);
        strv_done(&ents);
        _cleanup_free_ char *slp = xasprintf(BLOCK_DIR "/%s/slaves", m->name);
        if (rc2 < 0 && !root_gone(rc2))
                /* md/ is there but cannot be listed: its members are unknown, slaves/ is no substitute */
                fact_unreadable(f, mdp, rc2, NULL, "md.%s.members", m->name);
        else if (members.n == 0 && (rc2 = root_list(r, slp, &ents)) == 0) {
                for (size_t i = 0; i < ents.n; i++)
                        strv_add(&members, ents.v[i]);
                src = slp;
                strv_done(&ents);
        } else if (members.n == 0 && !root_gone(rc2))
                fact_unreadable(f, slp, rc2, NULL, "md.%s.members", m->name);
        if (members.n) {
                _cleanup_free_ char *s = strv_join(&members, " ");
                fact_str(f, src, s, "md.%s.members", m->name);
        }
        strv_done(&members);
}

/* Facts sysfs did not give, from the array's /proc/mdstat block (first writer wins). */
static void md_mdstat(struct facts *f, struct md *m)
{
        const struct mdstat_array *a = m->stat;
        const char *src = "/proc/mdstat";
        if (!a)
                return;
        if (a->bad) {
                if (!m->sysfs) {
                        fact_unreadable(f, src, -EBADMSG, a->bad, "md.%s.level", m->name);
                        fact_unreadable(f, src, -EBADMSG, a->bad, "md.%s.state", m->name);
                }
                return;
        }
        if (a->state)
                fact_str(f, src, a->state, "md.%s.state", m->name);
        if (a->level) {
                fact_str(f, src, a->level, "md.%s.level", m->name);
                if (m->level_h == HAVE_NONE) {
                        m->level = xstrdup(a->level);
                        m->level_h = HAVE_OK;
                }
        } else
                fact_absent(f, src, "array shows no level (inactive or external metadata container)", "md.%s.level",
                            m->name);
        if (a->level && m->chunk_h == HAVE_NONE) {
                /* mdstat prints no chunk for raid1/linear: that is chunk 0, as sysfs says. */
                fact_uint(f, src, a->chunk, "md.%s.chunk_size", m->name);
                m->chunk = a->chunk;
                m->chunk_h = HAVE_OK;
        }
        if (m->disks_h == HAVE_NONE) {
                fact_uint(f, src, a->raid_disks, "md.%s.raid_disks", m->name);
                m->raid_disks = a->raid_disks;
                m->disks_h = HAVE_OK;
        }
        if (a->working >= 0 && (unsigned)a->working <= a->raid_disks)
                fact_uint(f, src, a->raid_disks - (unsigned)a->working, "md.%s.degraded", m->name);
        fact_str(f, src, a->members, "md.%s.members", m->name);
        if (a->metadata)
                fact_str(f, src, a->metadata, "md.%s.metadata", m->name);
        /* The progress line in sysfs's sync_action words (md.rst): "recovery" is "recover",
         * "resync=DELAYED"/"=PENDING" wait to resync; no line on a redundant array is "idle". */
        if (a->sync) {
                _cleanup_free_ char *word = xstrndup(a->sync, strcspn(a->sync, "="));
                fact_str(f, src, streq(word, "recovery") ? "recover" : word, "md.%s.sync_action", m->name);
        } else if (m->level && streq(a->state, "active") && !streq(m->level, "raid0") && !streq(m->level, "linear"))
                fact_str(f, src, "idle", "md.%s.sync_action", m->name);
}

static void md_data_disks(struct facts *f, struct md *m, uint64_t *ret, bool *ok)
{
        *ok = false;
        if (m->level_h != HAVE_OK || m->disks_h != HAVE_OK) {
                const char *why = m->level_h == HAVE_NONE || m->disks_h == HAVE_NONE
                                          ? "level or raid_disks unknown"
                                          : "level or raid_disks unreadable";
                if (m->level_h == HAVE_BAD || m->disks_h == HAVE_BAD)
                        fact_unreadable(f, BLOCK_DIR, 0, why, "md.%s.data_disks", m->name);
                else
                        fact_absent(f, BLOCK_DIR, why, "md.%s.data_disks", m->name);
                return;
        }
        if (data_disks(m->level, m->raid_disks, ret) < 0) {
                fact_absent(f, BLOCK_DIR, "not a data-striping or mirroring level", "md.%s.data_disks", m->name);
                return;
        }
        fact_uint(f, "level + raid_disks", *ret, "md.%s.data_disks", m->name);
        *ok = true;
}

static const char *msrc(struct facts *f) { return mounts_source(facts_root(f)); }

/* The first mount of the array (a bind mount of it comes later in /proc/mounts). */
static const struct mount_entry *md_mount(struct root *r, const char *name, const struct mount_entry *mt, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const char *s = mt[i].source;
                if (!startswith(s, "/dev/"))
                        continue;
                if (streq(s + 5, name))
                        return &mt[i];
                /* mdadm's named arrays: /dev/md/NAME -> ../md127 */
                if (startswith(s, "/dev/md/")) {
                        _cleanup_free_ char *target = NULL;
                        if (root_readlink(r, s, &target) == 0) {
                                const char *base = strrchr(target, '/');
                                if (streq(base ? base + 1 : target, name))
                                        return &mt[i];
                        } else if (startswith(name, "md") && streq(s + 8, name + 2))
                                return &mt[i]; /* /dev/md/0 is md0 when the link is not in the tree */
                }
        }
        return NULL;
}

static void md_mount_facts(struct facts *f, const char *name, const struct mount_entry *me, int mrc)
{
        if (!me) {
                if (mrc < 0 && mrc != -ENOENT)
                        fact_unreadable(f, msrc(f), mrc, NULL, "md.%s.mount.point", name);
                else
                        fact_absent(f, msrc(f), mrc < 0 ? "no /proc/mounts" : "array not mounted",
                                    "md.%s.mount.point", name);
                return;
        }
        fact_str(f, msrc(f), me->target, "md.%s.mount.point", name);
        fact_str(f, msrc(f), me->fstype, "md.%s.mount.fstype", name);
        fact_str(f, msrc(f), me->options, "md.%s.mount.options", name);
        /* relatime is not noatime; noatime implies nodiratime (mount(8)). */
        _cleanup_free_ char *noatime = mount_option(me->options, "noatime");
        fact_bool(f, msrc(f), noatime != NULL, "md.%s.mount.noatime", name);
        _cleanup_free_ char *nob = mount_option(me->options, "nobarrier");
        _cleanup_free_ char *bar = mount_option(me->options, "barrier");
        fact_bool(f, msrc(f), nob != NULL || streq(bar, "0"), "md.%s.mount.nobarrier", name);
        /* ext4's stripe= (filesystem blocks): the kernel shows the stripe the mount uses, whether
         * it came from a stripe= option or from the superblock (fs/ext4/super.c, show_options). */
        _cleanup_free_ char *stripe = mount_option(me->options, "stripe");
        uint64_t sw;
        if (stripe && parse_u64(stripe, &sw) == 0)
                fact_uint(f, msrc(f), sw, "md.%s.mount.stripe", name);
        else if (stripe)
                fact_unreadable(f, msrc(f), -EINVAL, stripe, "md.%s.mount.stripe", name);
        else
                fact_absent(f, msrc(f), "no stripe= in the mount's options", "md.%s.mount.stripe", name);
}

/* Whether fstab SOURCE (UUID=, LABEL=, /dev/disk/by-*) names array NAME through the tree's udev links. */
static bool names_array(struct root *r, const char *source, const char *name)
{
        _cleanup_free_ char *path = NULL;
        if (startswith(source, "UUID="))
                path = xasprintf("/dev/disk/by-uuid/%s", source + 5);
        else if (startswith(source, "LABEL="))
                path = xasprintf("/dev/disk/by-label/%s", source + 6);
        else if (startswith(source, "/dev/disk/"))
                path = xstrdup(source);
        _cleanup_free_ char *target = NULL;
        if (!path || root_readlink(r, path, &target) < 0)
                return false;
        const char *base = strrchr(target, '/');
        return streq(base ? base + 1 : target, name);
}

/* The /etc/fstab line of array NAME: one whose source names it (/dev/mdN, /dev/md/NAME, a UUID= or
 * LABEL= the tree's /dev/disk links resolve to it), else the line for the point it is mounted on. */
static const struct mount_entry *md_fstab(struct root *r, const char *name, const struct mount_entry *me,
                                          const struct mount_entry *ft, size_t fn)
{
        const struct mount_entry *fe = md_mount(r, name, ft, fn);
        for (size_t i = 0; !fe && i < fn; i++)
                if (names_array(r, ft[i].source, name))
                        fe = &ft[i];
        for (size_t i = 0; !fe && me && i < fn; i++)
                if (streq(ft[i].target, me->target))
                        fe = &ft[i];
        return fe;
}

/* Where the stripe of the array's ext4 comes from, now and at the next mount. have: 1 a value,
 * 0 none given, <0 -errno (cannot tell). */
struct stripe_src {
        int have;
        uint64_t v;
        char *src;
};

/* md.NAME.fstab.point and md.NAME.fstab.stripe: the stripe= the next mount is given (fstab(5)). */
static void md_fstab_facts(struct facts *f, const char *name, const struct mount_entry *fe, int frc,
                           struct stripe_src *ret)
{
        *ret = (struct stripe_src){0};
        if (frc < 0 && frc != -ENOENT) {
                fact_unreadable(f, "/etc/fstab", frc, NULL, "md.%s.fstab.point", name);
                fact_unreadable(f, "/etc/fstab", frc, NULL, "md.%s.fstab.stripe", name);
                ret->have = frc;
                return;
        }
        if (frc == -ENOENT || !fe) {
                const char *why = frc == -ENOENT ? "no /etc/fstab" : "no /etc/fstab line for the array";
                fact_absent(f, "/etc/fstab", why, "md.%s.fstab.point", name);
                fact_absent(f, "/etc/fstab", why, "md.%s.fstab.stripe", name);
                return;
        }
        ret->src = xasprintf("/etc/fstab:%u", fe->line);
        fact_str(f, ret->src, fe->target, "md.%s.fstab.point", name);
        _cleanup_free_ char *s = mount_option(fe->options, "stripe");
        if (!s) {
                fact_absent(f, ret->src, "no stripe= in the line's options", "md.%s.fstab.stripe", name);
                return;
        }
        if (parse_u64(s, &ret->v) < 0) {
                fact_unreadable(f, ret->src, -EINVAL, s, "md.%s.fstab.stripe", name);
                ret->have = -EINVAL;
                return;
        }
        fact_uint(f, ret->src, ret->v, "md.%s.fstab.stripe", name);
        ret->have = 1;
}

/* The stripe of a mount given no stripe= (or stripe=0): the superblock's stripe width, else its
 * stride; 0 and 1 mean none (fs/ext4/super.c, ext4_get_stripe_size). */
static uint64_t sb_stripe(const struct fs_superblock *sb)
{
        uint64_t v = sb->stripe_width ? sb->stripe_width : sb->stride;
        return v <= 1 ? 0 : v;
}

/*
 * The stripe ext4 allocates by (Documentation/admin-guide/ext4.rst "stripe=n"): a stripe= mount option
 * overrides the superblock's. The mounted filesystem keeps the stripe it was mounted with (a remount
 * without stripe= leaves it, and tune2fs writes only the superblock), so what is in effect now is the
 * mount's stripe= (/proc/mounts) and what the next mount gets is /etc/fstab's stripe= if the line has
 * one, else the superblock's. *now and *next: 1 known (value in ->v, source in ->src), 0 not mounted,
 * <0 unreadable.
 */
static void ext4_stripe_facts(struct facts *f, const char *name, const struct fs_superblock *sb, const char *source,
                              const struct mount_entry *me, const struct stripe_src *fstab, struct stripe_src *now,
                              struct stripe_src *next)
{
        *now = (struct stripe_src){0};
        *next = (struct stripe_src){0};
        if (fstab->have < 0) {
                fact_unreadable(f, fstab->src ? fstab->src : "/etc/fstab", fstab->have,
                                "the stripe= the next mount is given", "md.%s.fs.stripe_next_mount", name);
                next->have = fstab->have;
        } else {
                bool opt = fstab->have > 0 && fstab->v > 0; /* stripe=0: the superblock's */
                next->have = 1;
                next->v = opt ? fstab->v : sb_stripe(sb);
                next->src = xstrdup(opt ? fstab->src : source);
                fact_uint(f, next->src, next->v, "md.%s.fs.stripe_next_mount", name);
        }
        if (!me) {
                fact_absent(f, msrc(f), "array not mounted", "md.%s.fs.stripe_in_effect", name);
                return;
        }
        _cleanup_free_ char *s = mount_option(me->options, "stripe");
        uint64_t v = 0;
        if (s && parse_u64(s, &v) < 0) {
                fact_unreadable(f, msrc(f), -EINVAL, s, "md.%s.fs.stripe_in_effect", name);
                now->have = -EINVAL;
                return;
        }
        now->have = 1;
        now->v = s && v ? v : sb_stripe(sb);
        now->src = xstrdup(s && v ? msrc(f) : source);
        fact_uint(f, now->src, now->v, "md.%s.fs.stripe_in_effect", name);
}

/* md.NAME.mount.stripe_aligned (now) and md.NAME.fstab.stripe_aligned (a stripe= in /etc/fstab;
 * absent without one: then the superblock decides, which md.NAME.fs.aligned judges). NO: why the
 * array's stripe is not known (BAD: because something could not be read). */
static void ext4_stripe_aligned(struct facts *f, const char *name, const struct stripe_src *now,
                                const struct stripe_src *fstab, uint64_t width, const char *no, bool bad)
{
        if (no) {
                if (bad) {
                        fact_unreadable(f, BLOCK_DIR, 0, no, "md.%s.mount.stripe_aligned", name);
                        fact_unreadable(f, BLOCK_DIR, 0, no, "md.%s.fstab.stripe_aligned", name);
                } else {
                        fact_absent(f, BLOCK_DIR, no, "md.%s.mount.stripe_aligned", name);
                        fact_absent(f, BLOCK_DIR, no, "md.%s.fstab.stripe_aligned", name);
                }
                return;
        }
        if (now->have > 0)
                fact_bool(f, now->src, now->v == width, "md.%s.mount.stripe_aligned", name);
        else if (now->have < 0)
                fact_unreadable(f, msrc(f), now->have, "stripe= of the mount", "md.%s.mount.stripe_aligned", name);
        else
                fact_absent(f, msrc(f), "array not mounted", "md.%s.mount.stripe_aligned", name);
        if (fstab->have > 0 && fstab->v > 0)
                fact_bool(f, fstab->src, fstab->v == width, "md.%s.fstab.stripe_aligned", name);
        else if (fstab->have < 0)
                fact_unreadable(f, fstab->src ? fstab->src : "/etc/fstab", fstab->have, "stripe= of the fstab line",
                                "md.%s.fstab.stripe_aligned", name);
        else
                fact_absent(f, fstab->src ? fstab->src : "/etc/fstab",
                            "no stripe= in /etc/fstab: the superblock's stripe width applies at the next mount",
                            "md.%s.fstab.stripe_aligned", name);
}

static void md_fs(struct facts *f, struct md *m, const struct mount_entry *me, const struct stripe_src *fstab,
                  uint64_t ddisks, bool have_dd)
{
        _cleanup_free_ char *dev = xasprintf("/dev/%s", m->name);
        struct fs_superblock sb;
        const char *why = NULL;
        int rc = superblock_read(facts_root(f), dev, &sb, &why);
        const char *fs_names[] = {"type", "block_size", "stride", "stripe_width"};
        if (rc < 0) {
                /* Nothing on the array, or no image in a fixture, is not an error unless it is
                 * mounted as a filesystem whose superblock we know how to read. */
                bool known = me && (startswith(me->fstype, "ext") || streq(me->fstype, "xfs"));
                for (size_t i = 0; i < ARRAY_SIZE(fs_names); i++) {
                        if ((rc == -ENOENT && !known) || rc == -EXDEV)
                                fact_absent(f, dev, why, "md.%s.fs.%s", m->name, fs_names[i]);
                        else
                                fact_unreadable(f, dev, rc, why, "md.%s.fs.%s", m->name, fs_names[i]);
                }
                fact_absent(f, dev, "no filesystem geometry", "md.%s.fs.aligned", m->name);
                return;
        }
        const char *src = streq(sb.type, "xfs") ? "XFS superblock (sb_unit/sb_width)"
                                                 : "ext superblock (s_raid_stride/s_raid_stripe_width)";
        _cleanup_free_ char *source = xasprintf("%s: %s", dev, src);
        fact_str(f, source, sb.type, "md.%s.fs.type", m->name);
        fact_uint(f, source, sb.block_size, "md.%s.fs.block_size", m->name);
        fact_uint(f, source, sb.stride, "md.%s.fs.stride", m->name);
        fact_uint(f, source, sb.stripe_width, "md.%s.fs.stripe_width", m->name);
        if (streq(sb.type, "xfs"))
                fact_uint(f, source, sb.agblocks, "md.%s.fs.agblocks", m->name);
        bool ext = !streq(sb.type, "xfs");
        struct stripe_src now = {0}, next = {0};
        if (ext)
                ext4_stripe_facts(f, m->name, &sb, source, me, fstab, &now, &next);

        const char *derived[] = {"expected_stride", "expected_stripe_width", "aligned"};
        const char *no = NULL;
        bool bad = false;
        if (m->level_h != HAVE_OK || m->chunk_h != HAVE_OK || !have_dd) {
                no = "array geometry (level, chunk_size, raid_disks) unknown";
                bad = m->level_h == HAVE_BAD || m->chunk_h == HAVE_BAD || m->disks_h == HAVE_BAD;
        } else if (!striped(m->level) || m->chunk == 0)
                no = "array does not stripe (no chunk size)";
        else if (m->chunk % sb.block_size)
                no = "chunk size is not a multiple of the filesystem block size";
        if (no) {
                for (size_t i = 0; i < ARRAY_SIZE(derived); i++)
                        if (bad)
                                fact_unreadable(f, dev, 0, no, "md.%s.fs.%s", m->name, derived[i]);
                        else
                                fact_absent(f, dev, no, "md.%s.fs.%s", m->name, derived[i]);
                if (ext)
                        ext4_stripe_aligned(f, m->name, &now, fstab, 0, no, bad);
                goto out;
        }
        uint64_t stride = m->chunk / sb.block_size, width = stride * ddisks;
        fact_uint(f, "chunk_size / block_size", stride, "md.%s.fs.expected_stride", m->name);
        fact_uint(f, "expected_stride x data_disks", width, "md.%s.fs.expected_stripe_width", m->name);
        fact_bool(f, source, sb.stride == stride && sb.stripe_width == width, "md.%s.fs.aligned", m->name);
        if (ext)
                ext4_stripe_aligned(f, m->name, &now, fstab, width, NULL, false);
out:
        free(now.src);
        free(next.src);
}

static struct md *md_find(struct md *v, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(v[i].name, name))
                        return &v[i];
        return NULL;
}

static void probe_md(struct facts *f, const struct mount_entry *mt, size_t mn, int mrc)
{
        struct root *r = facts_root(f);
        struct md *v = NULL;
        size_t n = 0;
        struct strv blocks = {0};
        int brc = root_list(r, BLOCK_DIR, &blocks);
        bool have_sysfs = brc == 0;
        for (size_t i = 0; i < blocks.n; i++) {
                _cleanup_free_ char *p = xasprintf(BLOCK_DIR "/%s/md", blocks.v[i]);
                struct stat st;
                if (!startswith(blocks.v[i], "md"))
                        continue;
                /* an md/ that is there but cannot be looked at is an array whose facts are unreadable */
                int src = root_stat(r, p, &st, true);
                if (root_gone(src) || (src == 0 && !S_ISDIR(st.st_mode)))
                        continue;
                v = xrealloc(v, (n + 1) * sizeof(*v));
                v[n++] = (struct md){.name = xstrdup(blocks.v[i]), .sysfs = true};
        }
        strv_done(&blocks);

        const char *data;
        struct mdstat_array *st = NULL;
        size_t sn = 0;
        struct mount_entry *ft = NULL;
        size_t fn = 0;
        int frc = fstab_read(r, &ft, &fn);
        if (frc < 0)
                fn = 0;
        int rc = root_read(r, "/proc/mdstat", &data, NULL);
        if (rc == 0 && mdstat_parse(data, &st, &sn) < 0) {
                fact_unreadable(f, "/proc/mdstat", -EBADMSG, "no \"Personalities\" header", "md.mdstat");
                rc = -EBADMSG;
        }
        for (size_t i = 0; i < sn; i++) {
                struct md *m = md_find(v, n, st[i].name);
                if (!m) {
                        v = xrealloc(v, (n + 1) * sizeof(*v));
                        m = &v[n++];
                        *m = (struct md){.name = xstrdup(st[i].name)};
                }
                m->stat = &st[i];
        }

        if (n == 0 && !have_sysfs && rc == -ENOENT && !root_gone(brc))
                /* /proc/mdstat is the second source; without it an unlistable /sys/block leaves it unknown */
                fact_unreadable(f, BLOCK_DIR, brc, "and no /proc/mdstat", "md.count");
        else if (n == 0 && !have_sysfs && rc == -ENOENT)
                fact_absent(f, "/proc/mdstat", "no /sys/block and no /proc/mdstat", "md.count");
        else if (!have_sysfs && rc < 0)
                fact_unreadable(f, "/proc/mdstat", rc, "and no /sys/block", "md.count");
        else
                fact_uint(f, have_sysfs ? BLOCK_DIR : "/proc/mdstat", n, "md.count");
        for (size_t i = 0; i < n; i++) {
                struct md *m = &v[i];
                if (m->sysfs)
                        md_sysfs(f, m);
                md_mdstat(f, m);
                uint64_t dd = 0;
                bool have_dd;
                md_data_disks(f, m, &dd, &have_dd);
                const struct mount_entry *me = md_mount(r, m->name, mt, mn);
                md_mount_facts(f, m->name, me, mrc);
                struct stripe_src fstab;
                md_fstab_facts(f, m->name, md_fstab(r, m->name, me, ft, fn), frc, &fstab);
                md_fs(f, m, me, &fstab, dd, have_dd);
                free(fstab.src);
        }
        mounts_free(ft, fn);
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].level);
        }
        free(v);
        mdstat_free(st, sn);
}

static void probe_mounts(struct facts *f, const struct mount_entry *mt, size_t n, int rc)
{
        if (rc == -ENOENT) {
                fact_absent(f, msrc(f), "no /proc/mounts", "mount.count");
                return;
        }
        if (rc < 0) {
                fact_unreadable(f, msrc(f), rc, NULL, "mount.count");
                return;
        }
        const char *src = msrc(f);
        fact_uint(f, src, n, "mount.count");
        for (size_t i = 0; i < n; i++) {
                fact_str(f, src, mt[i].source, "mount.%zu.source", i);
                fact_str(f, src, mt[i].target, "mount.%zu.target", i);
                fact_str(f, src, mt[i].fstype, "mount.%zu.fstype", i);
                fact_str(f, src, mt[i].options, "mount.%zu.options", i);
        }
}

static int storage_run(struct facts *f)
{
        struct mount_entry *mt = NULL;
        size_t n = 0;
        int rc = mounts_read(facts_root(f), &mt, &n);
        if (rc < 0)
                n = 0;
        probe_mounts(f, mt, n, rc);
        probe_md(f, mt, n, rc);
        mounts_free(mt, n);
        return 0;
}

const struct probe probe_storage = {
        .name = "storage",
        .prefixes = {"md.", "mount."},
        .run = storage_run,
};
