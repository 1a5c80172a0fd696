/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "apply/plan.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "facts/readers/affinity.h"
#include "apply/change-kind.h"
#include "apply/command.h"
#include "engine/remedy.h"
#include "facts/readers/dropin-order.h"
#include "base/file-format.h"
#include "facts/readers/mounts.h"
#include "nccl/nccl-gen.h"
#include "base/parse.h"
#include "facts/probes/probes.h"
#include "facts/readers/swaps.h"

#define DISABLED_MARK "#llmtune-disabled# "

void change_done(struct change *c)
{
        free(c->rule);
        free(c->target);
        free(c->before);
        free(c->after);
        free(c->aux);
        strv_done(&c->mkdirs);
        strv_done(&c->argv);
        strv_done(&c->undo);
        *c = (struct change){0};
}

void plan_done(struct plan *p)
{
        for (size_t i = 0; i < p->n; i++)
                change_done(&p->v[i]);
        free(p->v);
        *p = (struct plan){0};
}

size_t plan_changes(const struct plan *p)
{
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++)
                n += !change_kind_of(&p->v[i])->reported_only;
        return n;
}

bool plan_command_runs(struct root *r, const struct strv *argv) { return cmd_runs_here(r, argv); }

/* --- the planner ------------------------------------------------------------------------------ */

/* Files the plan already changes: a second change of the same file starts from the first's result. */
struct pending {
        char *path, *content; /* content NULL: the plan deletes it */
};

struct planner {
        struct plan *p;
        struct facts *f;
        struct root *r;
        const struct resolved *profile;
        const struct result *res;
        const char *rule; /* what the changes added now are for: the result's rule, or a setup label */
        struct pending *pend;
        size_t n_pend;
        struct strv unreadable; /* files that are there but could not be read: left alone, noted once */
};

static struct change *add(struct planner *pl, enum change_type t, const char *target)
{
        pl->p->v = xrealloc(pl->p->v, (pl->p->n + 1) * sizeof(*pl->p->v));
        struct change *c = &pl->p->v[pl->p->n++];
        *c = (struct change){.rule = xstrdup(pl->rule), .type = t, .target = xstrdup(target)};
        return c;
}

static void note(struct planner *pl, bool reboot, const char *fmt, ...) _printf_(3, 4);
static void note(struct planner *pl, bool reboot, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *text = xvasprintf(fmt, ap);
        va_end(ap);
        struct change *c = add(pl, CHANGE_NOTE, reboot ? "reboot" : "manual");
        c->aux = text;
        c->reboot = reboot;
}

static const char *param(const struct result *res, const char *key)
{
        for (size_t i = 0; i < res->remedy_keys.n; i++)
                if (streq(res->remedy_keys.v[i], key))
                        return res->remedy_vals.v[i];
        return NULL;
}

/* How a remedy kind is carried out. remedy.c's table names every kind; each plan function below
 * registers itself under its kind's name (REMEDY_PLAN, before main runs), so the name is written
 * once beside the code, and the unit test remedy_kinds_agree fails when a kind has no plan or a
 * plan names a kind the table lacks. */
struct remedy_plan {
        void (*plan)(struct planner *pl);
        char *(*once)(const struct result *res); /* results with one key share one plan; NULL: each its own */
};

#define REMEDY_PLAN(id, kind, fn, once_fn)                                                                   \
        static const struct remedy_plan remedy_plan_##id = {fn, once_fn};                                   \
        __attribute__((constructor)) static void register_remedy_##id(void)                                  \
        {                                                                                                    \
                remedy_kind_set_plan(kind, &remedy_plan_##id);                                               \
        }

static const struct fact *fact_ok(struct facts *f, const char *fmt, ...) _printf_(2, 3);
static const struct fact *fact_ok(struct facts *f, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *name = xvasprintf(fmt, ap);
        va_end(ap);
        const struct fact *fc = facts_get(f, name);
        free(name);
        return fc && fc->status == FACT_OK ? fc : NULL;
}

/* PATH is there but could not be read: what it holds is unknown, so no change of it is planned
 * (planning it as a new file would replace what it holds, and rollback would then remove it). */
static bool unreadable_file(struct planner *pl, const char *path) { return strv_contains(&pl->unreadable, path); }

/* Current content of PATH as the plan leaves it so far; *exists false when absent, or when it
 * cannot be read (noted, and unreadable_file() says so from then on). */
static char *file_view(struct planner *pl, const char *path, bool *exists)
{
        for (size_t i = pl->n_pend; i-- > 0;)
                if (streq(pl->pend[i].path, path)) {
                        *exists = pl->pend[i].content != NULL;
                        return pl->pend[i].content ? xstrdup(pl->pend[i].content) : NULL;
                }
        const char *data;
        size_t len;
        int rc = root_read(pl->r, path, &data, &len);
        if (rc < 0 && !root_gone(rc) && !unreadable_file(pl, path)) {
                strv_add(&pl->unreadable, path);
                note(pl, false, "%s cannot be read, %s: llmtune leaves it alone; make the change in it by hand", path,
                     errno_name(rc));
        }
        if (rc < 0) {
                *exists = false;
                return NULL;
        }
        *exists = true;
        return xstrndup(data, len);
}

/* Parent directories of PATH that do not exist yet, outermost first. */
static void missing_parents(struct planner *pl, const char *path, struct strv *ret)
{
        _cleanup_free_ char *dir = xstrdup(path);
        _cleanup_strv_ struct strv rev = {0};
        for (char *slash = strrchr(dir, '/'); slash && slash != dir; slash = strrchr(dir, '/')) {
                *slash = '\0';
                struct stat st;
                if (root_stat(pl->r, dir, &st, true) == 0)
                        break;
                strv_add(&rev, dir);
        }
        for (size_t i = rev.n; i-- > 0;)
                strv_add(ret, rev.v[i]);
}

/* A file the remedy wants to hold CONTENT (NULL: removed). No change when it already does. */
static void want_file(struct planner *pl, const char *path, const char *content, mode_t mode)
{
        bool exists;
        _cleanup_free_ char *cur = file_view(pl, path, &exists);
        if ((!exists && !content) || (exists && content && streq(cur, content)) || unreadable_file(pl, path))
                return;
        struct change *c = add(pl, CHANGE_FILE, path);
        c->before = exists ? xstrdup(cur) : NULL;
        c->after = content ? xstrdup(content) : NULL;
        c->mode = mode;
        if (content && !exists) {
                missing_parents(pl, path, &c->mkdirs);
                /* a directory an earlier change of this plan creates is not missing twice */
                for (size_t i = 0; i + 1 < pl->p->n; i++)
                        for (size_t k = 0; k < pl->p->v[i].mkdirs.n; k++)
                                for (size_t j = 0; j < c->mkdirs.n; j++)
                                        if (streq(c->mkdirs.v[j], pl->p->v[i].mkdirs.v[k])) {
                                                free(c->mkdirs.v[j]);
                                                memmove(&c->mkdirs.v[j], &c->mkdirs.v[j + 1],
                                                        (c->mkdirs.n - j) * sizeof(char *));
                                                c->mkdirs.n--;
                                                j--;
                                        }
        }
        pl->pend = xrealloc(pl->pend, (pl->n_pend + 1) * sizeof(*pl->pend));
        pl->pend[pl->n_pend++] = (struct pending){xstrdup(path), content ? xstrdup(content) : NULL};
}

static void want_symlink(struct planner *pl, const char *path, const char *target)
{
        _cleanup_free_ char *cur = NULL;
        if (root_readlink(pl->r, path, &cur) == 0 && streq(cur, target))
                return;
        struct stat st;
        if (root_stat(pl->r, path, &st, false) == 0 && !S_ISLNK(st.st_mode)) {
                /* a real file is in the way: keep it (as a backup) and replace it by the link */
                want_file(pl, path, NULL, 0);
                free(cur);
                cur = NULL;
        }
        struct change *c = add(pl, CHANGE_SYMLINK, path);
        c->before = cur ? xstrdup(cur) : NULL;
        c->after = xstrdup(target);
        missing_parents(pl, path, &c->mkdirs);
}

static void command(struct planner *pl, const char *label, const char *const *argv, const char *const *undo)
{
        struct strv v = {0};
        for (size_t i = 0; argv[i]; i++)
                strv_add(&v, argv[i]);
        /* Under --root a command that would act on this machine is never run: it is a step for the
         * live system, reported, not a change (so a second apply does not plan it again). */
        if (!plan_command_runs(pl->r, &v)) {
                _cleanup_free_ char *cmd = strv_join(&v, " ");
                note(pl, false, "on the live system run: %s", cmd);
                strv_done(&v);
                return;
        }
        struct change *c = add(pl, CHANGE_COMMAND, label);
        c->argv = v;
        for (size_t i = 0; undo && undo[i]; i++)
                strv_add(&c->undo, undo[i]);
}

/* The first line of a file llmtune writes, after the comment sign COMMENT: one line whatever the
 * rule's and the profile's names hold (ff_comment). */
static char *header(struct planner *pl, const char *comment)
{
        _cleanup_free_ char *text = xasprintf("Written by llmtune for rule %s (profile %s). `llmtune rollback` restores "
                                              "the previous state.",
                                              pl->res->rule->id, pl->profile->name);
        _cleanup_free_ char *line = ff_comment(FF__COUNT, text);
        return xasprintf("%s %s\n", comment, line);
}

/* --- remedies ----------------------------------------------------------------------------------- */

/* --- services that set a knob again at boot (probe-tuner.c) -------------------------------------- */

struct tuner_knob {
        const char *knob;    /* the tuner.T.KNOB fact */
        const char *what;    /* for the reader */
        const char *tuned;   /* tuned.conf(5) section and key */
        const char *sysfs;   /* a part of the sysfs path that identifies the knob */
};

static const struct tuner_knob tuner_knobs[] = {
        {"governor", "the CPU governor", "[cpu] governor", "cpufreq/policy"},
        {"thp", "transparent_hugepage/enabled", "[vm] transparent_hugepages", "transparent_hugepage/enabled"},
        {"thp_defrag", "transparent_hugepage/defrag", "[vm] transparent_hugepage.defrag", "transparent_hugepage/defrag"},
};

static const struct tuner_knob *tuner_knob_find(const char *knob)
{
        for (size_t i = 0; i < ARRAY_SIZE(tuner_knobs); i++)
                if (streq(tuner_knobs[i].knob, knob))
                        return &tuner_knobs[i];
        return NULL;
}

/* What to do about tuner T setting K to HAVE (NULL: unknown) when the profile wants WANT. */
static char *tuner_advice(struct planner *pl, const char *t, const struct tuner_knob *k, const char *have,
                          const char *src, const char *want)
{
        _cleanup_free_ char *sets = have ? xasprintf("sets %s to %s (%s)", k->what, have, src)
                                         : xasprintf("may set %s: %s", k->what, src);
        if (streq(t, "tuned")) {
                const struct fact *p = fact_ok(pl->f, "tuner.tuned.profile");
                const char *prof = p ? p->str : "its profile";
                return xasprintf("tuned.service is enabled and its profile %s %s whenever tuned starts: make a profile "
                                 "/etc/tuned/llmtune/tuned.conf with \"[main] include=%s\" and \"%s=%s\", then "
                                 "`tuned-adm profile llmtune`; or `systemctl disable --now tuned`",
                                 prof, sets, prof, k->tuned, want);
        }
        if (streq(t, "power-profiles-daemon"))
                return xasprintf("power-profiles-daemon.service is enabled and %s whenever it starts (its "
                                 "intel_pstate/amd_pstate drivers): on a compute node `systemctl mask --now "
                                 "power-profiles-daemon`",
                                 sets);
        if (streq(t, "ondemand"))
                return xasprintf("Ubuntu's ondemand.service is enabled and %s a minute after boot: `systemctl disable "
                                 "ondemand`",
                                 sets);
        if (streq(t, "cpupower"))
                return xasprintf("cpupower.service is enabled and %s at boot: make its governor %s there (`-g %s` in "
                                 "CPUPOWER_START_OPTS of /etc/sysconfig/cpupower, governor=%s in /etc/default/cpupower), "
                                 "or `systemctl disable cpupower`",
                                 sets, want, want, want);
        if (streq(t, "cpufrequtils"))
                return xasprintf("cpufrequtils is enabled and %s at boot: set GOVERNOR=\"%s\" in "
                                 "/etc/default/cpufrequtils, or ENABLE=\"false\" there",
                                 sets, want);
        return xasprintf("%s is enabled and %s at boot: configure or disable it", t, sets);
}

/* One note per enabled tuner that sets K to something other than WANT (or may: its configuration is
 * unreadable). AFTER_WRITE: the note follows a runtime write that the tuner undoes. Returns how many. */
static size_t tuner_conflicts(struct planner *pl, const struct tuner_knob *k, const char *want, bool after_write)
{
        _cleanup_free_ char *pattern = xasprintf("tuner.*.%s", k->knob);
        const struct fact **v = NULL;
        size_t n = facts_match(pl->f, pattern, &v), found = 0;
        for (size_t i = 0; i < n; i++) {
                const struct fact *fc = v[i];
                if (fc->status == FACT_ABSENT || (fc->status == FACT_OK && streq(fc->str, want)))
                        continue;
                const char *t0 = fc->name + strlen("tuner.");
                _cleanup_free_ char *t = xstrndup(t0, strlen(t0) - strlen(k->knob) - 1);
                _cleanup_free_ char *src = fc->status == FACT_OK ? xstrdup(fc->source)
                                                                 : xasprintf("%s (%s)", fc->reason, fc->source);
                _cleanup_free_ char *advice =
                        tuner_advice(pl, t, k, fc->status == FACT_OK ? fc->str : NULL, src, want);
                if (after_write)
                        note(pl, false, "%s lasts only until the next boot: %s", k->what, advice);
                else
                        note(pl, false, "%s", advice);
                found++;
        }
        free(v);
        return found;
}

static void plan_boot_tuner(struct planner *pl)
{
        const char *knob = param(pl->res, "knob"), *want = param(pl->res, "value");
        const struct tuner_knob *k = tuner_knob_find(knob);
        if (!k) {
                note(pl, false, "rule %s: remedy.knob '%s' is not one of governor, thp, thp_defrag", pl->res->rule->id,
                     knob);
                return;
        }
        if (tuner_conflicts(pl, k, want, false) == 0)
                note(pl, false, "no service enabled at boot sets %s otherwise now: see `llmtune facts tuner`", k->what);
}
REMEDY_PLAN(boot_tuner, "boot-tuner", plan_boot_tuner, NULL)

/* Which values of a key may stay where they would decide it at boot. */
struct keep_ctx {
        const struct dropin_family *f;
        const char *want; /* the value that may stay */
        const char *min;  /* or any value at least this (a rule number: "64G", "unlimited"); NULL: none */
};

static bool keep_value(const char *value, void *data)
{
        const struct keep_ctx *k = data;
        if (streq(value, k->want))
                return true;
        bool un, mn;
        uint64_t vm, mm;
        if (!k->min || !k->f->number || k->f->number(value, &un, &vm) < 0 || parse_rule_number(k->min, &mn, &mm) < 0)
                return false;
        return un || num_cmp(false, vm, mn, mm) >= 0;
}

/* The files the plan has written so far, as the family model sees them before the tree. */
struct planner_view {
        struct dropin_view v;
        const char **paths, **contents;
};

static void view_of(struct planner *pl, struct planner_view *pv)
{
        pv->paths = xcalloc(pl->n_pend + 1, sizeof(char *));
        pv->contents = xcalloc(pl->n_pend + 1, sizeof(char *));
        for (size_t i = 0; i < pl->n_pend; i++) {
                pv->paths[i] = pl->pend[i].path;
                pv->contents[i] = pl->pend[i].content;
        }
        pv->v = (struct dropin_view){pv->paths, pv->contents, pl->n_pend};
}

static void view_done(struct planner_view *pv)
{
        free(pv->paths);
        free(pv->contents);
}

/* Comment out, behind the marker, the lines of DF that set KEY to a value KEEP rejects. A file under
 * /etc is edited in place (the file behind /etc/sysctl.d/99-sysctl.conf is /etc/sysctl.conf); a
 * vendor file in /run or /usr is shadowed by a copy of the same name in the family's /etc
 * directory, which takes precedence (sysctl.d(5), tmpfiles.d(5), systemd-system.conf(5)). Returns
 * whether a change was planned. */
static bool neutralise_file(struct planner *pl, const struct dropin_family *f, const struct dropin_file *df,
                            const char *key, struct keep_ctx *keep)
{
        bool exists;
        _cleanup_free_ char *cur = file_view(pl, df->edit, &exists);
        const char *data = cur;
        bool shadow = !streq(df->edit, df->real);
        if (shadow && !exists && root_read(pl->r, df->path, &data, NULL) < 0)
                return false;
        if (!data || unreadable_file(pl, df->edit))
                return false;
        _cleanup_free_ char *next = dropin_neutralise(pl->r, f, data, key, DISABLED_MARK, keep_value, keep);
        if (!next)
                return false;
        if (shadow && !exists) {
                /* A new file of /etc named after the vendor's: the name must be one llmtune would
                 * give a file of that directory (a newline in it would also end the comment below
                 * that names it); a directory of a format llmtune does not check (udev rules.d)
                 * still takes no control character. */
                enum file_format fmt = ff_of_path(df->edit);
                const char *why = fmt != FF__COUNT ? ff_check(fmt, FF_FILENAME, df->name)
                                                   : ff_check(fmt, FF_COMMENT, df->name);
                if (why) {
                        _cleanup_free_ char *msg = ff_refusal(fmt, "the file name", df->name, df->path, why);
                        note(pl, false, "%s: not shadowed; disable the lines setting %s in it by hand", msg, key);
                        return false;
                }
                _cleanup_free_ char *h = header(pl, "#");
                _cleanup_free_ char *said = xasprintf("A copy of %s, which it overrides, with the lines setting %s "
                                                      "disabled.",
                                                      df->path, key);
                _cleanup_free_ char *c = ff_comment(fmt, said);
                _cleanup_free_ char *full = xasprintf("%s# %s\n%s", h, c, next);
                want_file(pl, df->edit, full, 0644);
        } else
                want_file(pl, df->edit, next, 0644);
        return true;
}

static void unreadable_note(struct planner *pl, const struct dropin_family *f, const char *bad, int rc, const char *key)
{
        note(pl, false, "%s could not be read (%s): check by hand which %s line sets %s at boot", bad, errno_name(rc),
             f->name, key);
}

/* Every line of family F that sets KEY to a value KEEP rejects, wherever it is (a minimum whose
 * default is far above it: no line may lower it). */
static void neutralise_all(struct planner *pl, const struct dropin_family *f, const char *key, struct keep_ctx *keep)
{
        struct dropin_entries h;
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_entries_load(pl->r, f, NULL, &h, &bad);
        if (rc < 0) {
                unreadable_note(pl, f, bad, rc, key);
                return;
        }
        _cleanup_strv_ struct strv done = {0};
        for (size_t i = 0; i < h.n; i++)
                if (dropin_entry_sets(pl->r, &h, &h.v[i], key) && !keep_value(h.v[i].value, keep) &&
                    !strv_contains(&done, h.v[i].file->edit)) {
                        strv_add(&done, h.v[i].file->edit);
                        neutralise_file(pl, f, h.v[i].file, key, keep);
                }
        dropin_entries_done(&h);
}

/* Make each of KEYS at boot a value KEEP accepts, once the plan's own file of family F is in place:
 * while the line the family's rule makes decide a key (the last one, or for tmpfiles.d the first for
 * its path) has a value KEEP rejects, that line is commented out. Returns false (with a note) when
 * the files cannot be read. */
static bool make_win(struct planner *pl, const struct dropin_family *f, const struct strv *keys, struct keep_ctx *keep)
{
        for (unsigned round = 0; round < 64; round++) {
                struct planner_view pv;
                view_of(pl, &pv);
                struct dropin_entries h;
                _cleanup_free_ char *bad = NULL;
                int rc = dropin_entries_load(pl->r, f, &pv.v, &h, &bad);
                view_done(&pv);
                if (rc < 0) {
                        unreadable_note(pl, f, bad, rc, keys->n ? keys->v[0] : "?");
                        return false;
                }
                bool changed = false;
                for (size_t k = 0; k < keys->n; k++) {
                        const struct dropin_entry *e = dropin_effective(pl->r, &h, keys->v[k]);
                        if (e && !keep_value(e->value, keep))
                                changed |= neutralise_file(pl, f, e->file, keys->v[k], keep);
                }
                dropin_entries_done(&h);
                if (!changed)
                        return true;
        }
        return true;
}

/* The value BODY (a file of family F) gives KEY: its last setting there. */
static char *value_in(const struct dropin_family *f, const char *body, const char *key)
{
        char *v = NULL;
        struct dropin_state st = {{0}};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(body);
        while (line_next(&it)) {
                struct dropin_settings_of_line s = {0};
                f->parse(it.line, &st, &s);
                for (size_t i = 0; i < s.n; i++)
                        if (streq(s.v[i].key, key)) {
                                free(v);
                                v = xstrdup(s.v[i].value);
                        }
                dropin_settings_of_line_done(&s);
        }
        return v;
}

/* A drop-in of a family llmtune models (limits.d, system.conf.d, ...) must also be the one that
 * decides each key it sets at boot: a line of another file that wins by the family's rule with a
 * value below remedy.min (or, without it, another value) is disabled behind the marker. */
static void dropin_wins(struct planner *pl, const char *path, const char *body)
{
        const struct dropin_family *f = dropin_family_of(path);
        if (!f || !f->parse)
                return;
        _cleanup_strv_ struct strv keys = {0};
        dropin_keys_of(f, body, &keys);
        for (size_t i = 0; i < keys.n; i++) {
                _cleanup_free_ char *want = value_in(f, body, keys.v[i]);
                struct keep_ctx keep = {.f = f, .want = want, .min = param(pl->res, "min")};
                make_win(pl, f, &(struct strv){.v = &keys.v[i], .n = 1}, &keep);
        }
}

/* A rule and its "-persistent" twin share one file: the file is named after the runtime rule. */
static char *knob_id(const struct result *res)
{
        const char *id = res->rule->id;
        size_t idlen = endswith(id, "-persistent") ? strlen(id) - strlen("-persistent") : strlen(id);
        return xstrndup(id, idlen);
}

/* One sysfs file (or glob) is planned once, whichever of its rules (runtime, persistent) fails. */
static char *sysfs_once(const struct result *res)
{
        const char *p = param(res, "path");
        return p ? xasprintf("sysfs:%s", p) : NULL;
}

static void plan_sysfs(struct planner *pl)
{
        const char *pattern = param(pl->res, "path"), *value = param(pl->res, "value");
        _cleanup_strv_ struct strv paths = {0};
        root_glob(pl->r, pattern, &paths);
        _cleanup_free_ char *h = header(pl, "#"), *id = knob_id(pl->res);
        _cleanup_free_ char *conf = xasprintf("%sw %s - - - - %s\n", h, pattern, value);
        _cleanup_free_ char *file = xasprintf("/etc/tmpfiles.d/llmtune-%s.conf", id);
        want_file(pl, file, conf, 0644);
        /* tmpfiles.d(5): for one path the earliest file wins, and a later line for another path that
         * reaches the file writes after ours; the line that would decide the value at boot instead of
         * ours is disabled */
        struct keep_ctx keep = {.f = &dropin_tmpfiles, .want = value};
        make_win(pl, &dropin_tmpfiles, paths.n ? &paths : &(struct strv){.v = (char *[]){(char *)pattern}, .n = 1},
                 &keep);
        for (size_t i = 0; i < paths.n; i++) {
                _cleanup_free_ char *cur = root_read_active(pl->r, paths.v[i]);
                if (cur && streq(cur, value))
                        continue;
                struct change *c = add(pl, CHANGE_VALUE, paths.v[i]);
                c->before = cur ? xstrdup(cur) : NULL;
                c->after = xstrdup(value);
        }
        if (paths.n == 0)
                note(pl, false, "no file matches %s: set %s by hand", pattern, value);
        /* never fight a boot-time tuner silently: the tmpfiles.d line runs before it starts */
        for (size_t i = 0; i < ARRAY_SIZE(tuner_knobs); i++)
                if (strstr(pattern, tuner_knobs[i].sysfs))
                        tuner_conflicts(pl, &tuner_knobs[i], value, true);
}
REMEDY_PLAN(sysfs, "sysfs", plan_sysfs, sysfs_once)

static char *sysctl_path(const char *key)
{
        char *path = xasprintf("/proc/sys/%s", key);
        for (char *p = path + strlen("/proc/sys/"); *p; p++)
                if (*p == '.')
                        *p = '/';
        return path;
}

/* A minimum whose kernel default is far above it (shmmax, shmall): the fix is to stop lowering it,
 * never to write a fixed number (which would lower it again). Every line that sets a value under
 * the minimum is disabled; the running value (CUR at PATH) returns to the kernel default. */
static void plan_sysctl_default(struct planner *pl, const char *key, const char *path, const char *cur,
                                const char *value)
{
        bool cn, wn;
        uint64_t cm, wm;
        const char *min = param(pl->res, "min");
        struct keep_ctx keep = {.f = &dropin_sysctl, .want = min, .min = min};
        neutralise_all(pl, &dropin_sysctl, key, &keep);
        bool low = !cur || parse_integer(cur, &cn, &cm) < 0 || parse_rule_number(min, &wn, &wm) < 0 ||
                   num_cmp(cn, cm, wn, wm) < 0;
        if (low) {
                struct change *c = add(pl, CHANGE_VALUE, path);
                c->before = cur ? xstrdup(cur) : NULL;
                c->after = xstrdup(value);
        }
}

/* One sysctl key is planned once, whichever of its rules (runtime, persistent) fails. */
static char *sysctl_once(const struct result *res)
{
        const char *k = param(res, "key");
        return k ? xasprintf("sysctl:%s", k) : NULL;
}

static void plan_sysctl(struct planner *pl)
{
        const char *key = param(pl->res, "key"), *value = param(pl->res, "value"), *mode = param(pl->res, "mode");
        _cleanup_free_ char *path = sysctl_path(key);
        _cleanup_free_ char *cur = root_read_active(pl->r, path);
        if (streq(pl->res->rule->remedy, "sysctl-default")) {
                plan_sysctl_default(pl, key, path, cur, value);
                return;
        }
        bool cn, wn;
        uint64_t cm, wm;
        bool is_min = mode && streq(mode, "min");
        /* "min": raise only. A value at or above the minimum is never written down: since Linux 3.16
         * shmmax/shmall default to nearly ULONG_MAX (shmget(2)), so a "tuned" value would lower them. */
        bool runtime = !is_min || !cur || parse_integer(cur, &cn, &cm) < 0 || parse_rule_number(value, &wn, &wm) < 0 ||
                       num_cmp(cn, cm, wn, wm) < 0;
        /* sysctl.d takes plain numbers: expand a "64G" of the profile */
        _cleanup_free_ char *val = parse_rule_number(value, &wn, &wm) == 0 ? xasprintf("%s%llu", wn ? "-" : "",
                                                                                     (unsigned long long)wm)
                                                                         : xstrdup(value);
        if (!is_min && cur && streq(cur, val))
                runtime = false;
        /* The value at the next boot: the last line that sets KEY in sysctl.d order. */
        struct keep_ctx keep = {.f = &dropin_sysctl, .want = val, .min = is_min ? val : NULL};
        struct dropin_entries s;
        _cleanup_free_ char *bad = NULL;
        bool persistent_ok = false;
        if (dropin_entries_load(pl->r, &dropin_sysctl, NULL, &s, &bad) == 0) {
                const struct dropin_entry *e = dropin_effective(pl->r, &s, key);
                persistent_ok = e && keep_value(e->value, &keep);
                dropin_entries_done(&s);
        }
        /* one file per knob: a "-persistent" twin writes its runtime rule's file */
        _cleanup_free_ char *id = knob_id(pl->res), *name = xasprintf("90-llmtune-%s.conf", id);
        if (runtime || !persistent_ok) {
                _cleanup_free_ char *h = header(pl, "#");
                _cleanup_free_ char *conf = xasprintf("%s%s = %s\n", h, key, val);
                _cleanup_free_ char *file = xasprintf("/etc/sysctl.d/%s", name);
                want_file(pl, file, conf, 0644);
                /* files read after ours would set KEY back at boot (/etc/sysctl.conf through
                 * 99-sysctl.conf, where the popular guides append): their lines are disabled */
                make_win(pl, &dropin_sysctl, &(struct strv){.v = (char *[]){(char *)key}, .n = 1}, &keep);
        }
        if (runtime && (!cur || !streq(cur, val))) {
                struct change *c = add(pl, CHANGE_VALUE, path);
                c->before = cur ? xstrdup(cur) : NULL;
                c->after = xstrdup(val);
        }
}
REMEDY_PLAN(sysctl, "sysctl", plan_sysctl, sysctl_once)
REMEDY_PLAN(sysctl_default, "sysctl-default", plan_sysctl, sysctl_once)

static void plan_swapoff(struct planner *pl)
{
        const char *data;
        size_t len;
        struct swap_area *areas = NULL;
        size_t n = 0;
        if (root_read(pl->r, "/proc/swaps", &data, &len) < 0 || swaps_parse(data, len, &areas, &n) < 0)
                return;
        uint64_t avail = 0, used_total = 0;
        bool have_avail = meminfo_bytes(pl->r, "MemAvailable", &avail) == 0;
        size_t ok = 0;
        for (size_t i = 0; i < n; i++)
                if (areas[i].err == 0) {
                        used_total += areas[i].used * 1024;
                        ok++;
                }
        /* swapoff(2) fails with ENOMEM when memory cannot take what is swapped out (swapoff(2)); well
         * before that the kernel reclaims page cache and may OOM-kill a job to bring the pages back.
         * The memory available afterwards must stay at least the profile's margin (min_free). */
        const char *min = param(pl->res, "min_free");
        bool mn;
        uint64_t margin = 0;
        if (min && parse_rule_number(min, &mn, &margin) < 0) {
                note(pl, false, "swapoff_min_free '%s' is not a size: swap left on", min);
                swaps_free(areas, n);
                return;
        }
        if (!have_avail && ok) {
                note(pl, false, "MemAvailable unknown (/proc/meminfo): swap left on; check free memory, then swapoff -a");
                swaps_free(areas, n);
                return;
        }
        if (ok && (used_total >= avail || avail - used_total < margin)) {
                note(pl, false,
                     "swap holds %llu MiB and %llu MiB are available: swapoff would leave %lld MiB, below the margin of "
                     "%llu MiB (swapoff_min_free): swap left on; free memory, then swapoff -a",
                     (unsigned long long)(used_total >> 20), (unsigned long long)(avail >> 20),
                     ((long long)avail - (long long)used_total) / (1 << 20), (unsigned long long)(margin >> 20));
                swaps_free(areas, n);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (areas[i].err < 0)
                        continue;
                struct change *c = add(pl, CHANGE_SWAP, areas[i].path);
                c->before = xstrdup("on");
                c->after = xstrdup("off");
                c->aux = xstrdup(areas[i].line);
        }
        swaps_free(areas, n);
}
REMEDY_PLAN(swapoff, "swapoff", plan_swapoff, NULL)

static char *disable_swap_line(const struct fstab_line *l, void *data)
{
        return l->n >= 3 && streq(l->field[2], "swap") ? xasprintf("%s%s", DISABLED_MARK, l->text) : NULL;
}

/* Comment out the swap lines of fstab, behind the marker rollback can find. */
static void plan_fstab_swap(struct planner *pl)
{
        bool exists;
        _cleanup_free_ char *cur = file_view(pl, "/etc/fstab", &exists);
        if (!exists)
                return;
        _cleanup_free_ char *out = fstab_rewrite(cur, disable_swap_line, NULL, NULL);
        want_file(pl, "/etc/fstab", out, 0644);
}
REMEDY_PLAN(fstab_swap, "fstab-swap", plan_fstab_swap, NULL)

static void plan_zram_off(struct planner *pl)
{
        const struct fact *gen = fact_ok(pl->f, "swap.zram.generator");
        if (!gen) {
                note(pl, false, "zram swap is active without a generator llmtune knows: find what creates it (zramctl)");
                return;
        }
        /* every file in effect that defines a device: the main file and each conf.d drop-in is
         * masked by a /dev/null link of its name in /etc (zram-generator.conf(5)) */
        _cleanup_free_ char *list = xstrdup(gen->str);
        char *save = NULL;
        for (char *p = strtok_r(list, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
                if (streq(p, "/etc/default/zramswap")) {
                        /* Debian's zramswap package: mask its service */
                        want_symlink(pl, "/etc/systemd/system/zramswap.service", "/dev/null");
                        continue;
                }
                const char *name = strrchr(p, '/') + 1;
                _cleanup_free_ char *mask = strstr(p, "/zram-generator.conf.d/")
                                                    ? xasprintf("/etc/systemd/zram-generator.conf.d/%s", name)
                                                    : xstrdup("/etc/systemd/zram-generator.conf");
                want_symlink(pl, mask, "/dev/null");
        }
        static const char *const reload[] = {"systemctl", "daemon-reload", NULL};
        command(pl, "systemctl daemon-reload", reload, reload);
}
REMEDY_PLAN(zram_off, "zram-off", plan_zram_off, NULL)

/* The regeneration for the tool installed in the root (os.initramfs_tool); NULL when none is. */
static const char *const *initramfs_argv(struct planner *pl)
{
        static const char *const deb[] = {"update-initramfs", "-u", "-k", "all", NULL};
        static const char *const rh[] = {"dracut", "-f", "--regenerate-all", NULL};
        static const char *const arch[] = {"mkinitcpio", "-P", NULL};
        const struct fact *tool = fact_ok(pl->f, "os.initramfs_tool");
        if (!tool)
                return NULL;
        return streq(tool->str, "update-initramfs") ? deb : streq(tool->str, "dracut") ? rh
                                                          : streq(tool->str, "mkinitcpio") ? arch
                                                                                           : NULL;
}

static void plan_initramfs(struct planner *pl)
{
        const char *const *argv = initramfs_argv(pl);
        if (!argv) {
                const struct fact *fc = facts_get(pl->f, "os.initramfs_tool");
                note(pl, false, "regenerate the initramfs for every installed kernel by hand: llmtune found no "
                                "initramfs tool (%s)",
                     fc && fc->reason ? fc->reason : "os.initramfs_tool unknown");
                return;
        }
        /* undoing a blacklist restores modprobe.d first (reverse order), then regenerates again */
        command(pl, argv[0], argv, argv);
}
REMEDY_PLAN(initramfs, "initramfs", plan_initramfs, NULL)

static void plan_blacklist(struct planner *pl)
{
        const char *module = param(pl->res, "module"), *options = param(pl->res, "options");
        _cleanup_free_ char *h = header(pl, "#");
        _cleanup_free_ char *conf = options ? xasprintf("%sblacklist %s\noptions %s %s\n", h, module, module, options)
                                            : xasprintf("%sblacklist %s\n", h, module);
        _cleanup_free_ char *file = xasprintf("/etc/modprobe.d/llmtune-blacklist-%s.conf", module);
        want_file(pl, file, conf, 0644);
        /* modprobe.d(5): the last value of an option wins; a later "options MODULE modeset=1" is disabled */
        dropin_wins(pl, file, conf);
        plan_initramfs(pl);
}
REMEDY_PLAN(modprobe_blacklist, "modprobe-blacklist", plan_blacklist, NULL)

/* The arrays whose md.NAME.WHAT was read and is false (the audit found them wrong), by NAME, into
 * RET. */
static void md_arrays_failing(struct planner *pl, const char *what, struct strv *ret)
{
        _cleanup_free_ char *pattern = xasprintf("md.*.%s", what);
        const struct fact **v = NULL;
        size_t n = facts_match(pl->f, pattern, &v);
        for (size_t i = 0; i < n; i++)
                if (v[i]->status == FACT_OK && !v[i]->b)
                        strv_push(ret, xstrndup(v[i]->name + 3, strlen(v[i]->name) - 3 - 1 - strlen(what)));
        free(v);
}

/* The stripe geometry the audit read of the filesystem on array MD, in the filesystem's blocks:
 * what it has (STRIDE, STRIPE_WIDTH: ext4's names, XFS's sunit and swidth) and what the array
 * needs (EXPECTED_*); each NULL where it was not read. */
struct md_fs {
        const char *md;
        const struct fact *block_size, *stride, *stripe_width, *expected_stride, *expected_stripe_width;
};

/* FN for each array whose filesystem is of TYPE and not aligned to it (md.NAME.fs.aligned false),
 * with what the audit read of it. */
static void md_each_misaligned(struct planner *pl, const char *type, void (*fn)(struct planner *, const struct md_fs *))
{
        _cleanup_strv_ struct strv mds = {0};
        md_arrays_failing(pl, "fs.aligned", &mds);
        for (size_t i = 0; i < mds.n; i++) {
                const char *md = mds.v[i];
                const struct fact *t = fact_ok(pl->f, "md.%s.fs.type", md);
                if (!t || !streq(t->str, type))
                        continue;
                fn(pl, &(struct md_fs){
                               .md = md,
                               .block_size = fact_ok(pl->f, "md.%s.fs.block_size", md),
                               .stride = fact_ok(pl->f, "md.%s.fs.stride", md),
                               .stripe_width = fact_ok(pl->f, "md.%s.fs.stripe_width", md),
                               .expected_stride = fact_ok(pl->f, "md.%s.fs.expected_stride", md),
                               .expected_stripe_width = fact_ok(pl->f, "md.%s.fs.expected_stripe_width", md),
                       });
        }
}

static void tune2fs_array(struct planner *pl, const struct md_fs *fs)
{
        const struct fact *es = fs->expected_stride, *ew = fs->expected_stripe_width;
        const struct fact *s = fs->stride, *w = fs->stripe_width;
        if (!es || !ew || !s || !w)
                return;
        _cleanup_free_ char *dev = xasprintf("/dev/%s", fs->md);
        _cleanup_free_ char *opt = xasprintf("stride=%s,stripe_width=%s", es->str, ew->str);
        _cleanup_free_ char *old = xasprintf("stride=%s,stripe_width=%s", s->str, w->str);
        _cleanup_free_ char *label = xasprintf("tune2fs %s (%s -> %s)", dev, old, opt);
        const char *argv[] = {"tune2fs", "-E", opt, dev, NULL};
        const char *undo[] = {"tune2fs", "-E", old, dev, NULL};
        command(pl, label, argv, undo);
}

static void plan_tune2fs(struct planner *pl) { md_each_misaligned(pl, "ext4", tune2fs_array); }
REMEDY_PLAN(tune2fs, "tune2fs", plan_tune2fs, NULL)

struct fstab_stripe {
        const char *mp;
        bool found;
};

/* The array's line (mounted at MP) with its stripe= removed, the line as it was kept above it behind
 * the marker: the superblock's stripe width then applies at the next mount. */
static char *drop_stripe_line(const struct fstab_line *l, void *data)
{
        struct fstab_stripe *o = data;
        if (l->n < 4)
                return NULL;
        _cleanup_free_ char *file = unescape_octal(xstrdup(l->field[1]));
        _cleanup_free_ char *stripe = mount_option(l->field[3], "stripe");
        const char *pos = streq(file, o->mp) && stripe ? strstr(l->text, l->field[3]) : NULL;
        if (!pos)
                return NULL;
        o->found = true;
        _cleanup_free_ char *opts = mount_options_without(l->field[3], "stripe");
        return xasprintf("%s%s\n%.*s%s%s", DISABLED_MARK, l->text, (int)(pos - l->text), l->text,
                         *opts ? opts : "defaults", pos + strlen(l->field[3]));
}

/*
 * A stripe= in /etc/fstab overrides the superblock's stripe width at every mount
 * (Documentation/admin-guide/ext4.rst): a wrong one is removed, so that the superblock (which
 * raid-ext4-stride keeps right) decides; it takes effect at the next mount. Nothing is remounted: the
 * running mount keeps its stripe until it is unmounted (raid-ext4-stripe-mounted says so).
 */
static void plan_fstab_stripe(struct planner *pl)
{
        _cleanup_strv_ struct strv mds = {0};
        md_arrays_failing(pl, "fstab.stripe_aligned", &mds);
        for (size_t i = 0; i < mds.n; i++) {
                const char *md = mds.v[i];
                const struct fact *mp = fact_ok(pl->f, "md.%s.fstab.point", md);
                const struct fact *sw = fact_ok(pl->f, "md.%s.fstab.stripe", md);
                if (!mp || !sw)
                        continue;
                bool exists;
                _cleanup_free_ char *cur = file_view(pl, "/etc/fstab", &exists);
                if (unreadable_file(pl, "/etc/fstab"))
                        continue;
                struct fstab_stripe o = {mp->str, false};
                _cleanup_free_ char *out = exists ? fstab_rewrite(cur, drop_stripe_line, &o, NULL) : NULL;
                if (!o.found) {
                        note(pl, false, "remove stripe=%s from the /etc/fstab line of %s (not found to edit)", sw->str,
                             mp->str);
                        continue;
                }
                want_file(pl, "/etc/fstab", out, 0644);
                note(pl, false,
                     "/etc/fstab: stripe=%s removed from %s (/dev/%s); the superblock's stripe width applies from the "
                     "next mount (unmount and mount it, or reboot: a remount keeps the stripe in effect)",
                     sw->str, mp->str, md);
        }
}
REMEDY_PLAN(fstab_stripe, "fstab-stripe", plan_fstab_stripe, NULL)

static bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

/* Why the sunit=/swidth= mount options cannot take XFS from a stripe unit of SU blocks to ES (and a
 * width of EW) with AG blocks per allocation group; NULL when the kernel accepts them. xfs(5) and
 * Documentation/admin-guide/xfs.rst: only for a filesystem made with a stripe unit, the unit may only
 * grow by a power-of-2 multiple, the width may be any integer multiple of the unit (reshaping an
 * array is what they are for); fs/xfs/xfs_mount.c (xfs_validate_new_dalign): the unit must divide the
 * allocation group. */
static char *xfs_options_refused(uint64_t su, uint64_t es, uint64_t ew, uint64_t ag)
{
        if (su == 0)
                return xstrdup("it was made without stripe alignment (sunit=0): the kernel refuses sunit=/swidth= "
                               "mount options on it, and an /etc/fstab line with them stops the boot");
        if (es < su)
                return xasprintf("the array needs a stripe unit of %llu blocks, smaller than the %llu mkfs set: the "
                                 "mount options may only increase it",
                                 (unsigned long long)es, (unsigned long long)su);
        if (es % su || !power_of_two(es / su))
                return xasprintf("the array needs a stripe unit of %llu blocks; the mount options may change the %llu "
                                 "mkfs set only by a power-of-2 multiple",
                                 (unsigned long long)es, (unsigned long long)su);
        if (ag && ag % es)
                return xasprintf("a stripe unit of %llu blocks does not divide the allocation group (%llu blocks), "
                                 "so the kernel refuses the mount",
                                 (unsigned long long)es, (unsigned long long)ag);
        if (ew % es)
                return xasprintf("a stripe width of %llu blocks is not a multiple of the unit (%llu)",
                                 (unsigned long long)ew, (unsigned long long)es);
        return NULL;
}

/* XFS alignment is set by mkfs; the sunit=/swidth= mount options change it at a full mount (never a
 * remount) where the kernel accepts them (xfs_options_refused), and a mount they fail drops the boot
 * into emergency mode when they are in /etc/fstab. So: numbers computed from the array, the mount
 * options wherever they work (an array reshaped to more disks keeps its stripe unit and needs only a
 * new width), the plain statement that only mkfs.xfs fixes it otherwise. Both are manual steps:
 * llmtune never writes them. */
static void xfs_align_array(struct planner *pl, const struct md_fs *fs)
{
        const char *md = fs->md;
        const struct fact *bs = fs->block_size, *su = fs->stride, *sw = fs->stripe_width;
        const struct fact *es = fs->expected_stride, *ew = fs->expected_stripe_width;
        const struct fact *ag = fact_ok(pl->f, "md.%s.fs.agblocks", md);
        const struct fact *dd = fact_ok(pl->f, "md.%s.data_disks", md);
        const struct fact *mp = fact_ok(pl->f, "md.%s.mount.point", md);
        if (!bs || !su || !es || !ew || !dd || !es->mag)
                return;
        uint64_t chunk_kib = es->mag * bs->mag / 1024;
        const char *where = mp ? mp->str : "its mount point";
        _cleanup_free_ char *refused = xfs_options_refused(su->mag, es->mag, ew->mag, ag ? ag->mag : 0);
        if (refused) {
                note(pl, false,
                     "XFS on /dev/%s: %s. The only fix: back up the data of /dev/%s, re-create the filesystem "
                     "with `mkfs.xfs -f -d su=%lluk,sw=%llu /dev/%s` (this erases it), restore the data",
                     md, refused, md, (unsigned long long)chunk_kib, (unsigned long long)dd->mag, md);
                return;
        }
        uint64_t sunit512 = es->mag * bs->mag / 512, swidth512 = ew->mag * bs->mag / 512;
        _cleanup_free_ char *was = sw ? xasprintf("sunit %llu, swidth %llu blocks", (unsigned long long)su->mag,
                                                  (unsigned long long)sw->mag)
                                      : xasprintf("sunit %llu blocks", (unsigned long long)su->mag);
        note(pl, false,
             "XFS on /dev/%s (%s; the array needs %llu and %llu): add sunit=%llu,swidth=%llu (512-byte units) to "
             "the options of %s in /etc/fstab, then unmount and mount it (`umount %s && mount %s`; not a "
             "remount, which ignores them); the kernel writes them into the superblock. A mount that fails "
             "with \"cannot change alignment\" needs the fstab line reverted before the next boot; one that "
             "logs \"Cannot change stripe alignment\" (it would move the root inode) kept the old values, "
             "and then only mkfs.xfs -d su=%lluk,sw=%llu fixes it",
             md, was, (unsigned long long)es->mag, (unsigned long long)ew->mag, (unsigned long long)sunit512,
             (unsigned long long)swidth512, where, where, where, (unsigned long long)chunk_kib,
             (unsigned long long)dd->mag);
}

static void plan_xfs_align(struct planner *pl) { md_each_misaligned(pl, "xfs", xfs_align_array); }
REMEDY_PLAN(xfs_align, "xfs-align", plan_xfs_align, NULL)

/* fstab options with the atime family replaced by OPTION. */
static char *with_option(const char *options, const char *option)
{
        static const char *const atime[] = {"atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime"};
        bool is_atime = false;
        for (size_t i = 0; i < ARRAY_SIZE(atime); i++)
                is_atime |= streq(option, atime[i]);
        _cleanup_strv_ struct strv out = {0};
        _cleanup_free_ char *copy = xstrdup(options);
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                bool drop = streq(t, option);
                for (size_t i = 0; is_atime && i < ARRAY_SIZE(atime); i++)
                        drop |= streq(t, atime[i]);
                if (!drop)
                        strv_add(&out, t);
        }
        strv_add(&out, option);
        char *s = strv_join(&out, ",");
        return s;
}

static void plan_fstab_option(struct planner *pl, const char *cur, const char *mp, const char *option);

static void plan_mount_option(struct planner *pl)
{
        const char *option = param(pl->res, "option");
        const struct fact **v = NULL;
        size_t n = facts_match(pl->f, "md.*.mount.point", &v);
        for (size_t i = 0; i < n; i++) {
                if (v[i]->status != FACT_OK)
                        continue;
                const char *mp = v[i]->str;
                const struct fact *opts = fact_ok(pl->f, "%.*s.options", (int)(strlen(v[i]->name) - strlen(".point")),
                                                  v[i]->name);
                if (opts) {
                        _cleanup_free_ char *w = xstrdup(opts->str);
                        bool has = false;
                        for (char *save = NULL, *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save))
                                has |= streq(t, option);
                        if (has)
                                continue;
                }
                /* The same option in /etc/fstab, so it holds after the next mount. Planned before the
                 * remount, as every persistent change is before its runtime one: an apply killed
                 * between the two leaves the rule failing, so the next apply completes it. */
                bool exists;
                _cleanup_free_ char *cur = file_view(pl, "/etc/fstab", &exists);
                if (exists)
                        plan_fstab_option(pl, cur, mp, option);
                else if (!unreadable_file(pl, "/etc/fstab")) /* that one is noted by file_view */
                        note(pl, false, "no /etc/fstab: add %s to the mount options of %s where it is mounted", option, mp);
                if (opts) {
                        /* The remount is handed no stripe=: /proc/mounts shows the stripe ext4 uses
                         * whatever set it, and passing it back would pin a value that may be stale (a
                         * new superblock or fstab value takes effect at the next mount instead). */
                        _cleanup_free_ char *keep = mount_options_without(opts->str, "stripe");
                        struct change *c = add(pl, CHANGE_MOUNTOPT, mp);
                        c->before = xstrdup(keep);
                        c->after = with_option(keep, option);
                }
        }
        free(v);
}
REMEDY_PLAN(mount_option, "mount-option", plan_mount_option, NULL)

struct fstab_option {
        const char *mp, *option;
};

/* The mount at MP with OPTION added; the rest of the line as written. */
static char *add_option_line(const struct fstab_line *l, void *data)
{
        const struct fstab_option *o = data;
        if (l->n < 4)
                return NULL;
        _cleanup_free_ char *file = unescape_octal(xstrdup(l->field[1]));
        const char *pos = streq(file, o->mp) ? strstr(l->text, l->field[3]) : NULL;
        if (!pos)
                return NULL;
        _cleanup_free_ char *newopts = with_option(l->field[3], o->option);
        return xasprintf("%.*s%s%s", (int)(pos - l->text), l->text, newopts, pos + strlen(l->field[3]));
}

static void plan_fstab_option(struct planner *pl, const char *cur, const char *mp, const char *option)
{
        struct fstab_option o = {mp, option};
        bool found;
        _cleanup_free_ char *out = fstab_rewrite(cur, add_option_line, &o, &found);
        if (found)
                want_file(pl, "/etc/fstab", out, 0644);
        else
                note(pl, false, "%s is not in /etc/fstab: add %s where it is mounted", mp, option);
}

/* /etc/nccl.conf is written once from all the NCCL keys. */
static char *nccl_once(const struct result *res) { return xstrdup("nccl-conf"); }

static void plan_nccl_conf(struct planner *pl)
{
        const struct nccl_catalog *cat = facts_nccl_catalog(pl->f);
        if (!cat) {
                note(pl, false, "the NCCL catalog (rules/nccl-catalog.tsv) was not found: fix /etc/nccl.conf by hand");
                return;
        }
        bool exists;
        _cleanup_free_ char *cur = file_view(pl, "/etc/nccl.conf", &exists);
        _cleanup_free_ char *next = nccl_conf_render(pl->f, pl->profile, cat, exists ? cur : NULL);
        if (next)
                want_file(pl, "/etc/nccl.conf", next, 0644);
}
REMEDY_PLAN(nccl_conf, "nccl-conf", plan_nccl_conf, nccl_once)

static void plan_affinity_conf(struct planner *pl)
{
        char *err = NULL;
        _cleanup_free_ char *content = affinity_conf_render(pl->f, &err);
        if (content)
                want_file(pl, AFFINITY_CONF, content, 0644);
        else
                note(pl, false, "no GPU map to write: %s", err ? err : "no GPU");
        free(err);
}
REMEDY_PLAN(affinity_conf, "affinity-conf", plan_affinity_conf, NULL)

static char *unescape_newlines(const char *s)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (; *s; s++)
                if (s[0] == '\\' && s[1] == 'n') {
                        sbuf_add(&b, "\n");
                        s++;
                } else
                        sbuf_addn(&b, s, 1);
        if (!b.len || b.s[b.len - 1] != '\n')
                sbuf_add(&b, "\n");
        return sbuf_steal(&b);
}

static void plan_dropin(struct planner *pl)
{
        _cleanup_free_ char *h = header(pl, "#");
        _cleanup_free_ char *body = unescape_newlines(param(pl->res, "content"));
        _cleanup_free_ char *content = xasprintf("%s%s", h, body);
        want_file(pl, param(pl->res, "path"), content, 0644);
        dropin_wins(pl, param(pl->res, "path"), body);
        /* what the file needs before it is in force (a manager re-exec, restarted services) */
        const char *then = param(pl->res, "then");
        if (then)
                note(pl, false, "%s", then);
}
REMEDY_PLAN(dropin, "dropin", plan_dropin, NULL)

static void plan_modules_load(struct planner *pl)
{
        const char *module = param(pl->res, "module");
        _cleanup_free_ char *h = header(pl, "#");
        _cleanup_free_ char *content = xasprintf("%s%s\n", h, module);
        _cleanup_free_ char *file = xasprintf("/etc/modules-load.d/llmtune-%s.conf", module);
        want_file(pl, file, content, 0644);
        /* systemd-modules-load loads through kmod with the blacklist applied, and kmod runs the first
         * install line instead of loading: either in modprobe.d keeps the module from loading at boot */
        _cleanup_free_ char *m = xstrdup(module);
        for (char *p = m; *p; p++)
                *p = *p == '-' ? '_' : *p;
        const char *kinds[] = {"blacklist", "install"};
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
                _cleanup_free_ char *key = xasprintf("%s %s", kinds[i], m);
                struct keep_ctx keep = {.f = &dropin_modprobe}; /* no value may stay */
                neutralise_all(pl, &dropin_modprobe, key, &keep);
        }
        const char *argv[] = {"modprobe", module, NULL};
        command(pl, "modprobe", argv, NULL);
}
REMEDY_PLAN(modules_load, "modules-load", plan_modules_load, NULL)

static void plan_service_enable(struct planner *pl)
{
        const char *unit = param(pl->res, "unit");
        static const char *const dirs[] = {"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"};
        const char *found = NULL;
        _cleanup_free_ char *path = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(dirs) && !found; i++) {
                free(path);
                path = xasprintf("%s/%s", dirs[i], unit);
                struct stat st;
                if (root_stat(pl->r, path, &st, true) == 0)
                        found = path;
        }
        if (!found) {
                note(pl, false, "%s is not installed: install it, then systemctl enable --now %s", unit, unit);
                return;
        }
        /* what `systemctl enable` does for WantedBy=multi-user.target */
        _cleanup_free_ char *link = xasprintf("/etc/systemd/system/multi-user.target.wants/%s", unit);
        want_symlink(pl, link, found);
        const char *argv[] = {"systemctl", "start", unit, NULL}, *undo[] = {"systemctl", "stop", unit, NULL};
        command(pl, "systemctl start", argv, undo);
}
REMEDY_PLAN(service_enable, "service-enable", plan_service_enable, NULL)

/* --- the kernel command line, through the distribution's own tool --------------------------------- */

#define GRUB_LLMTUNE "/etc/default/grub.d/zz-llmtune.cfg"
#define GRUB_LINE "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT "

/* The grub.d file llmtune keeps its arguments in, with ARG added (an argument of the same key
 * replaced). grub-mkconfig sources /etc/default/grub.d/\*.cfg in name order after
 * /etc/default/grub and writes GRUB_CMDLINE_LINUX_DEFAULT last on the linux line, and the kernel
 * takes the last value of a parameter: appended there, in a file that sorts last, ours wins. */
static char *grub_file_with(struct planner *pl, const char *arg)
{
        bool exists;
        _cleanup_free_ char *cur = file_view(pl, GRUB_LLMTUNE, &exists);
        _cleanup_strv_ struct strv args = {0};
        const char *line = exists ? strstr(cur, GRUB_LINE) : NULL;
        if (line) {
                _cleanup_free_ char *words = xstrndup(line + strlen(GRUB_LINE), strcspn(line + strlen(GRUB_LINE), "\"\n"));
                for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
                        strv_add(&args, w);
        }
        size_t kl = strcspn(arg, "=");
        for (size_t i = 0; i < args.n; i++)
                if (strcspn(args.v[i], "=") == kl && strncmp(args.v[i], arg, kl) == 0) {
                        free(args.v[i]);
                        memmove(&args.v[i], &args.v[i + 1], (args.n - i) * sizeof(char *));
                        args.n--;
                        i--;
                }
        strv_add(&args, arg);
        _cleanup_free_ char *joined = strv_join(&args, " "), *h = header(pl, "#");
        return xasprintf("%s# Kernel command-line arguments; update-grub writes them into grub.cfg. Remove an argument\n"
                         "# with `llmtune rollback`, or here followed by update-grub.\n" GRUB_LINE "%s\"\n",
                         h, joined);
}

/* How to undo a grubby --args: give the key back the value the next boot had, else remove it. */
static char *grubby_undo(struct planner *pl, const char *key, const char *arg)
{
        const struct fact *old = fact_ok(pl->f, "cmdline.next.%s", key);
        if (!old)
                return xasprintf("--remove-args=%s", arg);
        return *old->str ? xasprintf("--args=%s=%s", key, old->str) : xasprintf("--args=%s", key);
}

/* One kernel argument is planned once, whichever of its rules fails. */
static char *cmdline_once(const struct result *res)
{
        const char *a = param(res, "param");
        return a ? xasprintf("cmdline:%.*s", (int)strcspn(a, "="), a) : NULL;
}

static void plan_cmdline(struct planner *pl)
{
        const char *arg = param(pl->res, "param");
        _cleanup_free_ char *key = xstrndup(arg, strcspn(arg, "="));
        const char *value = strchr(arg, '=') ? strchr(arg, '=') + 1 : "";
        const struct fact *tool = fact_ok(pl->f, "cmdline.tool");
        const struct fact *next = fact_ok(pl->f, "cmdline.next.%s", key);
        if (!tool) {
                const struct fact *t = facts_get(pl->f, "cmdline.tool");
                note(pl, false, "add %s to the kernel command line with the boot loader's own tool, then reboot (%s)", arg,
                     t && t->reason ? t->reason : "no boot loader configuration found");
                return;
        }
        if (next && streq(next->str, value)) {
                note(pl, true, "%s is set for the next boot (%s): reboot to bring it into force", arg, next->source);
                return;
        }
        if (streq(tool->str, "update-grub")) {
                _cleanup_free_ char *content = grub_file_with(pl, arg);
                want_file(pl, GRUB_LLMTUNE, content, 0644);
                static const char *const grub[] = {"update-grub", NULL};
                command(pl, "update-grub", grub, grub);
        } else if (streq(tool->str, "grubby")) {
                _cleanup_free_ char *add = xasprintf("--args=%s", arg), *undo = grubby_undo(pl, key, arg);
                const char *argv[] = {"grubby", "--update-kernel=ALL", add, NULL};
                const char *back[] = {"grubby", "--update-kernel=ALL", undo, NULL};
                command(pl, "grubby", argv, back);
        } else {
                const char *argv[] = {"kernelstub", "-a", arg, NULL}, *back[] = {"kernelstub", "-d", arg, NULL};
                command(pl, "kernelstub", argv, back);
        }
        note(pl, true, "%s is in force only after a reboot: the kernel reads its command line when it starts", arg);
}
REMEDY_PLAN(cmdline, "cmdline", plan_cmdline, cmdline_once)

/*
 * Per remedy kind, the file format and field each parameter is written as (file-format.h checks
 * it: a tmpfiles.d path or argument, a sysctl.d key or value, a module, unit or mount option
 * name...). A value that does not fit is syntax in that file, never data: the remedy is refused.
 * dropin's content is checked line by line in the format of its path (dropin_problem).
 */
static const struct {
        const char *kind, *param;
        enum file_format fmt;
        enum ff_field field;
} written_as[] = {
        {"sysfs", "path", FF_TMPFILES_D, FF_PATH},
        {"sysfs", "value", FF_TMPFILES_D, FF_VALUE},
        {"sysctl", "key", FF_SYSCTL_D, FF_KEY},
        {"sysctl", "value", FF_SYSCTL_D, FF_VALUE},
        {"sysctl-default", "key", FF_SYSCTL_D, FF_KEY},
        {"sysctl-default", "value", FF_SYSCTL_D, FF_VALUE},
        {"modprobe-blacklist", "module", FF_MODPROBE_D, FF_NAME},
        {"modprobe-blacklist", "options", FF_MODPROBE_D, FF_VALUE},
        {"modules-load", "module", FF_MODULES_LOAD_D, FF_NAME},
        {"service-enable", "unit", FF_SYSTEMD, FF_NAME},
        {"mount-option", "option", FF_FSTAB, FF_OPTION},
        {"cmdline", "param", FF_CMDLINE, FF_ITEM},
};

static char *value_origin(struct planner *pl, const char *key)
{
        const struct rule *r = pl->res->rule;
        for (size_t i = 0; i < r->remedy_keys.n; i++) {
                if (!streq(r->remedy_keys.v[i], key))
                        continue;
                for (const char *p = strstr(r->remedy_vals.v[i], "${"); p; p = strstr(p + 2, "${")) {
                        const char *end = strchr(p, '}');
                        if (!end)
                                break;
                        for (size_t k = 0; k < pl->profile->params.n; k++)
                                if (strlen(pl->profile->params.v[k].key) == (size_t)(end - p - 2) &&
                                    strncmp(pl->profile->params.v[k].key, p + 2, (size_t)(end - p - 2)) == 0)
                                        return xasprintf("parameter '%s' at %s", pl->profile->params.v[k].key,
                                                         pl->profile->params.v[k].origin);
                }
                return xasprintf("rule %s at %s:%u", r->id, r->file ? r->file : "?", r->line);
        }
        return xstrdup("?");
}

/* A dropin's file name and each line of its content, in the format of its path (a format llmtune
 * does not know, such as udev rules, only as lines without control characters). */
static const char *dropin_problem(const char *path, const char *content, char **ret_line)
{
        enum file_format fmt = ff_of_path(path);
        const char *base = strrchr(path, '/');
        const char *why = fmt != FF__COUNT && base ? ff_check(fmt, FF_FILENAME, base + 1) : NULL;
        if (why) {
                *ret_line = xstrdup(base + 1);
                return why;
        }
        _cleanup_free_ char *body = unescape_newlines(content);
        for (char *line = body, *nl; !why && line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                why = fmt != FF__COUNT ? ff_check(fmt, FF_LINE, line) : ff_check(fmt, FF_COMMENT, line);
                if (why)
                        *ret_line = xstrdup(line);
        }
        return why;
}

static char *remedy_values_problem(struct planner *pl)
{
        const struct result *res = pl->res;
        for (size_t i = 0; i < res->remedy_keys.n; i++) {
                const char *key = res->remedy_keys.v[i], *v = res->remedy_vals.v[i];
                /* Every value: profiles refuse control characters on loading, a rule's value too. */
                const char *why = ff_check(FF__COUNT, FF_COMMENT, v);
                enum file_format fmt = FF__COUNT;
                _cleanup_free_ char *line = NULL;
                for (size_t k = 0; k < ARRAY_SIZE(written_as) && !why; k++)
                        if (streq(written_as[k].kind, res->rule->remedy) && streq(written_as[k].param, key))
                                why = ff_check(fmt = written_as[k].fmt, written_as[k].field, v);
                if (!why && streq(res->rule->remedy, "dropin") && streq(key, "content") && param(res, "path")) {
                        fmt = ff_of_path(param(res, "path"));
                        why = dropin_problem(param(res, "path"), v, &line);
                }
                if (why) {
                        _cleanup_free_ char *from = value_origin(pl, key),
                                            *what = xasprintf("refused: remedy.%s of rule %s", key, res->rule->id);
                        _cleanup_free_ char *msg = ff_refusal(fmt, what, line ? line : v, from, why);
                        return xasprintf("%s: syntax in what a %s remedy writes, never data", msg, res->rule->remedy);
                }
        }
        return NULL;
}

static void plan_reboot(struct planner *pl) { note(pl, true, "%s", param(pl->res, "reason")); }
REMEDY_PLAN(reboot, "reboot", plan_reboot, NULL)

/* A step llmtune reports and never does: the remedy's summary with its parameters. */
/* The step itself: the note is shown under "Manual steps" (and the Ansible module's "manual step:"),
 * so the summary's own "manual step: " would say it twice. */
static void plan_manual(struct planner *pl)
{
        const char *step = streq(pl->res->rule->remedy, "manual") ? param(pl->res, "step") : NULL;
        note(pl, false, "%s", step ? step : pl->res->remedy_summary ? pl->res->remedy_summary : pl->res->rule->remedy);
}
REMEDY_PLAN(manual, "manual", plan_manual, NULL)

static void plan_result(struct planner *pl)
{
        const struct rule *r = pl->res->rule;
        const struct remedy_plan *rp = remedy_kind_plan(r->remedy);
        _cleanup_free_ char *problem = r->remedy ? remedy_values_problem(pl) : NULL;
        if (problem)
                note(pl, false, "%s", problem);
        else if (!r->remedy)
                note(pl, false, "%s: no remedy; see `llmtune explain %s`", r->title, r->id);
        else if (rp)
                rp->plan(pl);
        else /* rules are validated against remedy.c's kinds when loaded: not reached */
                plan_manual(pl);
}

bool plan_rule_is_setup(const char *rule)
{
        return rule && (streq(rule, PLAN_RULE_PARAMS) || streq(rule, PLAN_RULE_PIN));
}

int plan_build(struct plan *p, const struct audit *a, struct facts *f, const struct resolved *profile,
               const struct plan_setup_file *setup, size_t n_setup)
{
        struct planner pl = {.p = p, .f = f, .r = facts_root(f), .profile = profile};
        *p = (struct plan){0};
        for (size_t i = 0; i < n_setup; i++) {
                pl.rule = setup[i].rule;
                want_file(&pl, setup[i].path, setup[i].content, 0644);
        }
        /* Several rules may share one remedy (the nccl-conf rules, a knob's runtime rule and its
         * persistent twin): plan it once, by the key its remedy plan gives. */
        _cleanup_strv_ struct strv done = {0};
        for (size_t i = 0; i < a->n; i++) {
                const struct result *res = &a->v[i];
                if (res->status != RES_FAIL)
                        continue;
                const struct remedy_plan *rp = remedy_kind_plan(res->rule->remedy);
                _cleanup_free_ char *key = rp && rp->once ? rp->once(res) : NULL;
                if (key && strv_contains(&done, key))
                        continue;
                if (key)
                        strv_add(&done, key);
                pl.res = res;
                pl.rule = res->rule->id;
                plan_result(&pl);
        }
        strv_done(&pl.unreadable);
        for (size_t i = 0; i < pl.n_pend; i++) {
                free(pl.pend[i].path);
                free(pl.pend[i].content);
        }
        free(pl.pend);
        return 0;
}
