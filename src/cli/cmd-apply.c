/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune apply / plan: fix what the audit found, show it first, log every change, undo on failure. */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
#include "apply/changelog.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "apply/diff.h"
#include "facts/json-out.h"
#include "apply/plan.h"
#include "base/site-config.h"
#include "cli/site-setup.h"
#include "apply/txn.h"

struct apply_opts {
        const char *profile;
        char *reapply_profile; /* --reapply: the profile the newest change in force was applied with */
        struct strv only;
        struct site_setup setup; /* --param, --site-profile, --pin */
        int wait_opt;          /* --wait 1, --no-wait 0, neither -1 */
        bool dry_run, json, wait, reapply, exit_code, pinned;
};

/* Files: one diff per file from its first before to its last after. */
static void print_file_diffs(const struct plan *p)
{
        _cleanup_(strv_done) struct strv seen = {0};
        for (size_t i = 0; i < p->n; i++) {
                const struct change *c = &p->v[i];
                if (!change_kind_of(c)->content || strv_contains(&seen, c->target))
                        continue;
                strv_add(&seen, c->target);
                const char *last = c->after;
                for (size_t j = i + 1; j < p->n; j++)
                        if (change_kind_of(&p->v[j])->content && streq(p->v[j].target, c->target))
                                last = p->v[j].after;
                _cleanup_free_ char *d = unified_diff(c->target, c->before, last);
                fputs(d, stdout);
        }
}

/* How many changes from I on are alike (a value per CPU): of a kind shown grouped, the same kind,
 * rule, before and after. */
static size_t values_alike(const struct plan *p, size_t i)
{
        const struct change *c = &p->v[i];
        size_t same = 1;
        while (change_kind_of(c)->grouped && i + same < p->n) {
                const struct change *d = &p->v[i + same];
                if (d->type != c->type || !streq(d->rule, c->rule) || !streq(d->after, c->after) ||
                    !streq_ptr(d->before, c->before))
                        break;
                same++;
        }
        return same;
}

/* The changes of KIND under its section S; many alike as one line with the first and last target. */
static void print_group(const struct plan *p, const struct change_kind *kind, unsigned s)
{
        bool head = false;
        for (size_t i = 0; i < p->n; i++) {
                const struct change *c = &p->v[i];
                unsigned in;
                const char *title = change_kind_of(c) == kind ? change_section(c, &in) : NULL;
                if (!title || in != s)
                        continue;
                if (!head)
                        printf("%s:\n", title);
                head = true;
                size_t same = values_alike(p, i);
                if (same > 3) {
                        printf("  %s ... %s (%zu files): %s -> %s   (%s)\n", c->target, p->v[i + same - 1].target, same,
                               c->before ? c->before : "(none)", c->after, c->rule);
                        i += same - 1;
                        continue;
                }
                _cleanup_free_ char *line = change_line(c);
                printf("  %s   (%s)\n", line, c->rule);
        }
}

/* Files as diffs, then each kind's sections in the order of the table of kinds. */
static void print_plan_human(const struct plan *p)
{
        print_file_diffs(p);
        const struct change_kind *k;
        for (size_t i = 0; (k = change_kind_at(i)); i++)
                for (unsigned s = 0; s < ARRAY_SIZE(k->sections) && k->sections[s]; s++)
                        print_group(p, k, s);
}

/* One change record, the same for plan and apply (a dry run's records are the real run's). */
static json_object *change_json(const struct change *c, const char *status)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "rule", json_object_new_string(c->rule));
        json_object_object_add(o, "type", json_object_new_string(change_type_name(c->type)));
        json_object_object_add(o, "target", json_object_new_string(c->target));
        if (change_kind_of(c)->content) {
                _cleanup_free_ char *d = unified_diff(c->target, c->before, c->after);
                json_object_object_add(o, "diff", json_object_new_string(d));
        }
        json_object_object_add(o, "before", c->before ? json_object_new_string(c->before) : NULL);
        json_object_object_add(o, "after", c->after ? json_object_new_string(c->after) : NULL);
        change_json_fields(c, o);
        if (status)
                json_object_object_add(o, "status", json_object_new_string(status));
        return o;
}

static bool reboot_required(const struct plan *p)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->v[i].reboot)
                        return true;
        return false;
}

/* What plan's and apply's JSON both begin with: the format, the root, the profile, and what
 * --param and --pin name. */
static json_object *json_head(struct root *root, const struct rule_env *env, const struct apply_opts *o)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "root", json_object_new_string(root_path(root)));
        json_object_object_add(top, "profile", json_object_new_string(env->profile.name));
        if (o->setup.path)
                json_object_object_add(top, "site_profile", json_object_new_string(o->setup.path));
        if (o->setup.pin)
                json_object_object_add(top, "pinned", json_object_new_string(env->profile.name));
        return top;
}

/* plan, apply --dry-run: the plan, and with --exit-code whether changes are pending. A plan apply
 * would refuse (a link where a file goes, a change log it would not trust) is shown, then the
 * refusal in apply's words, exit 1: a dry run foresees what the real run would not do. */
static int print_plan(struct root *root, const struct rule_env *env, const struct plan *p, const struct apply_opts *o)
{
        _cleanup_free_ char *refusal = root_is_archive(root) ? NULL : txn_foresee(root, p);
        if (o->json) {
                json_object *top = json_head(root, env, o);
                /* The same record schema as apply's: status is what apply would report,
                 * "planned" for a change, "skipped" for a command that would not run here
                 * (under --root only image files in the tree are touched), "reboot-required"
                 * or "manual"; "changed" counts what apply would count as changed. */
                size_t would = 0;
                json_object *arr = json_object_new_array();
                for (size_t i = 0; i < p->n; i++) {
                        const struct change *ch = &p->v[i];
                        const char *st = change_plan_status(root, ch);
                        would += streq(st, "planned");
                        json_object_array_add(arr, change_json(ch, st));
                }
                json_object_object_add(top, "changed", json_object_new_int64((int64_t)would));
                json_object_object_add(top, "planned", json_object_new_int64((int64_t)plan_changes(p)));
                json_object_object_add(top, "reboot_required", json_object_new_boolean(reboot_required(p)));
                json_object_object_add(top, "failed", json_object_new_boolean(refusal != NULL));
                if (refusal)
                        json_object_object_add(top, "error", json_object_new_string(refusal));
                json_object_object_add(top, "changes", arr);
                json_print(stdout, top);
                json_object_put(top);
        } else {
                print_plan_human(p);
                printf("%zu change%s planned (profile %s)%s\n", plan_changes(p), plan_changes(p) == 1 ? "" : "s",
                       env->profile.name, reboot_required(p) ? ", reboot required" : "");
        }
        if (refusal)
                return cli_error("apply would fail at %s; nothing would be changed", refusal);
        /* like `git diff --exit-code`: pending changes are what a gate wants to know */
        return o->exit_code && plan_changes(p) > 0 ? EXIT_FINDINGS : EXIT_OK;
}

/* apply's report of a run txn_apply carried out. */
static void print_result(struct root *r, const struct rule_env *env, const struct plan *p, const struct apply_opts *o,
                         const struct txn_apply_result *res)
{
        if (o->json) {
                json_object *top = json_head(r, env, o);
                json_object_object_add(top, "run", json_object_new_string(res->run));
                json_object_object_add(top, "changed", json_object_new_int64((int64_t)res->changed));
                json_object_object_add(top, "failed", json_object_new_boolean(res->failure != NULL));
                if (res->failure)
                        json_object_object_add(top, "error", json_object_new_string(res->failure));
                json_object_object_add(top, "reboot_required", json_object_new_boolean(reboot_required(p)));
                json_object_object_add(top, "head", changelog_head_json(res->head_seq, res->head_hash));
                json_object *arr = json_object_new_array();
                for (size_t i = 0; i < p->n; i++)
                        json_object_array_add(arr, change_json(&p->v[i], res->status[i] ? res->status[i] : "not-run"));
                json_object_object_add(top, "changes", arr);
                json_print(stdout, top);
                json_object_put(top);
                return;
        }
        for (size_t i = 0; i < p->n; i++) {
                const struct change *c = &p->v[i];
                if (!res->status[i] || change_kind_of(c)->reported_only)
                        continue;
                _cleanup_free_ char *what = change_label(c);
                printf("%-8s %-10s %s   (%s)\n", res->status[i], change_type_name(c->type), what, c->rule);
        }
        for (size_t i = 0; i < p->n; i++)
                if (change_kind_of(&p->v[i])->reported_only)
                        printf("%-8s %s   (%s)\n", p->v[i].reboot ? "REBOOT" : "MANUAL", p->v[i].aux, p->v[i].rule);
        printf("%zu changed%s\n", res->changed, reboot_required(p) ? ", reboot required" : "");
}

static void print_notes(struct txn *t)
{
        for (size_t i = 0; i < t->notes.n; i++)
                fprintf(stderr, "llmtune: %s\n", t->notes.v[i]);
        strv_done(&t->notes);
}

/* Carry out plan P under T: an interrupted run of the same profile is completed under its own
 * run id; the report follows. */
static int carry_out(struct cli *cli, struct txn *t, const struct rule_env *env, const struct plan *p,
                     const struct apply_opts *o)
{
        const char *resume = NULL;
        for (size_t i = 0; t->resume_run && i < t->lr.n && !resume; i++)
                if (streq(t->lr.v[i].run, t->resume_run) && streq(t->lr.v[i].profile, env->profile.name))
                        resume = t->resume_run;
        if (resume)
                fprintf(stderr, "llmtune: completing the interrupted run %s\n", resume);
        /* host NULL: the change log records the host of the root it was opened on */
        struct log_context ctx = {.profile = env->profile.name, .profile_hash = env->profile.hash};
        _cleanup_(txn_apply_result_done) struct txn_apply_result res = {0};
        int rc = txn_apply(t, p, &ctx, resume, &res);
        print_notes(t);
        txn_done(t); /* the lock goes before the report is printed, as it always did */
        int exit_code = !rc            ? EXIT_OK
                        : res.refused ? cli_error("refusing to apply: %s", res.failure)
                                      : cli_error("apply failed at %s; the changes of this run were undone", res.failure);
        print_result(cli->root, env, p, o, &res);
        return exit_code;
}

#define NOTHING_TO_DO (-1) /* run_apply's status while it skips to the end without an error */

static void apply_opts_done(struct apply_opts *o)
{
        strv_done(&o->only);
        free(o->reapply_profile);
        site_setup_done(&o->setup);
}

static int parse_opts(int argc, char **argv, bool plan_only, struct apply_opts *o)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {"rule", required_argument, NULL, 'r'},
                {"dry-run", no_argument, NULL, 'n'},
                {"json", no_argument, NULL, 'j'},
                {"wait", no_argument, NULL, 'w'},
                {"no-wait", no_argument, NULL, 'W'},
                {"reapply", no_argument, NULL, 'R'},
                {"exit-code", no_argument, NULL, 'E'},
                {"param", required_argument, NULL, 'P'},
                {"site-profile", required_argument, NULL, 'S'},
                {"pin", no_argument, NULL, 'I'},
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "p:r:njw", opts, NULL)) != -1)
                switch (c) {
                case 'p': o->profile = optarg; break;
                case 'r': strv_add(&o->only, optarg); break;
                case 'n': o->dry_run = true; break;
                case 'j': o->json = true; break;
                case 'w': o->wait_opt = 1; break;
                case 'W': o->wait_opt = 0; break;
                case 'R': o->reapply = true; break;
                case 'E': o->exit_code = true; break;
                case 'P':
                        if (site_setup_param(&o->setup, optarg) != EXIT_OK)
                                return EXIT_ERROR;
                        break;
                case 'S': o->setup.site_name = optarg; break;
                case 'I': o->setup.pin = true; break;
                default: return cli_usage_error(plan_only ? "plan" : "apply");
                }
        for (int i = optind; i < argc; i++)
                if (o->only.n)
                        strv_add(&o->only, argv[i]);
                else
                        return cli_error("unexpected argument '%s'", argv[i]);
        if (o->exit_code && !o->dry_run)
                return cli_error("--exit-code goes with plan (or apply --dry-run)");
        if (o->reapply && o->only.n)
                return cli_error("--reapply chooses the rules itself: no --rule with it");
        if (o->reapply && (o->setup.keys.n || o->setup.pin))
                return cli_error("--reapply puts back what is in force: no --param or --pin with it");
        return EXIT_OK;
}

/* The checks before the lock: the root can be changed, by this user; --wait from the site
 * configuration. */
static int check_root(struct cli *cli, struct apply_opts *o, struct root **ret)
{
        struct root *root = cli_root(cli);
        const struct site_config *conf = root ? cli_config(cli) : NULL;
        if (!conf)
                return EXIT_ERROR;
        if (!o->dry_run && root_is_archive(root))
                return cli_error("%s is a %s, which is read-only: apply changes a machine or a "
                                 "directory tree (try --dry-run or `llmtune plan`)", root_path(root),
                                 root_is_topology(root) ? "topology export" : "gathered archive");
        if (!o->dry_run && !cli_root_can_change(cli, root))
                return EXIT_ERROR;
        /* --wait / --no-wait, else [apply] wait in the site configuration, else no waiting */
        o->wait = o->wait_opt >= 0 ? o->wait_opt == 1 : conf->apply_wait == 1;
        o->pinned = conf->profile != NULL;
        *ret = root;
        return EXIT_OK;
}

/* --reapply: the rules whose changes are in force in the change log, nothing else: at boot this
 * puts back what apply did (a late cpufreq driver's governor) and changes nothing new. Which
 * profile: --profile, else the pin, else the one the newest change in force was applied with;
 * never detection: a boot must not choose a profile by itself. NOTHING_TO_DO when none is. */
static int reapply_rules(struct root *root, struct apply_opts *o)
{
        struct log_read lr;
        int r = changelog_read(root, &lr, NULL); /* its error said by strerror, as before */
        if (r < 0)
                return cli_error("cannot read the change log %s: %s", CHANGELOG_PATH, strerror(-r));
        _cleanup_free_ size_t *idx = NULL;
        size_t n = changelog_in_force(&lr, &idx);
        const struct log_record *newest = NULL;
        for (size_t i = 0; i < n; i++) {
                const char *rule = lr.v[idx[i]].change.rule;
                /* the site profile and the pin are files in /etc: nothing resets them at boot */
                if (rule && !plan_rule_is_setup(rule) && !strv_contains(&o->only, rule))
                        strv_add(&o->only, rule);
                if (!newest || lr.v[idx[i]].seq > newest->seq)
                        newest = &lr.v[idx[i]];
        }
        if (!o->profile && !o->pinned && newest && newest->profile)
                o->reapply_profile = xstrdup(newest->profile);
        o->profile = o->profile ? o->profile : o->reapply_profile;
        log_read_done(&lr);
        if (o->only.n > 0)
                return EXIT_OK;
        if (o->json)
                printf("{\n  \"format\": 1,\n  \"changed\": 0,\n  \"reapply\": \"nothing to re-apply: no change made by llmtune is in force\"\n}\n");
        else
                printf("no change made by llmtune is in force; nothing to re-apply\n");
        return NOTHING_TO_DO;
}

/* --reapply after loading the rules: a rule renamed or dropped by an upgrade is skipped, said on
 * stderr. */
static int known_rules(const struct rule_env *env, struct apply_opts *o)
{
        struct strv known = {0};
        for (size_t i = 0; i < o->only.n; i++)
                if (rules_find(&env->rules, o->only.v[i]))
                        strv_add(&known, o->only.v[i]);
                else
                        fprintf(stderr, "llmtune: rule '%s' is no longer known; not re-applied\n", o->only.v[i]);
        strv_done(&o->only);
        o->only = known;
        _cleanup_free_ char *list = known.n ? strv_join(&known, " ") : xstrdup("(none known)");
        fprintf(stderr, "llmtune: re-applying with profile %s (%s): %s\n", env->profile.name, env->picked_why, list);
        if (known.n > 0)
                return EXIT_OK;
        printf("none of the rules in force is known; nothing to re-apply\n");
        return NOTHING_TO_DO;
}

/* apply (not a dry run) takes the lock before anything is read, so the plan is made from the state
 * this run will change (a second apply that waited plans after the first one finished), and closes
 * what an interrupted run left open first. */
static int begin(struct root *root, const struct apply_opts *o, struct txn *t)
{
        int rc = txn_begin(t, root, o->wait);
        if (rc == 0)
                rc = txn_open_log(t);
        if (rc == 0)
                rc = txn_recover(t);
        print_notes(t);
        if (rc < 0 && o->json) {
                /* the refusal as data too, as plan --json gives it (Ansible reads "error") */
                json_object *top = json_object_new_object();
                json_object_object_add(top, "format", json_object_new_int(1));
                json_object_object_add(top, "root", json_object_new_string(root_path(root)));
                json_object_object_add(top, "changed", json_object_new_int(0));
                json_object_object_add(top, "failed", json_object_new_boolean(true));
                json_object_object_add(top, "error", json_object_new_string(t->error));
                json_print(stdout, top);
                json_object_put(top);
        }
        return rc < 0 ? cli_error("%s", t->error) : EXIT_OK;
}

static int run_apply(struct cli *cli, int argc, char **argv, bool plan_only)
{
        _cleanup_(apply_opts_done) struct apply_opts o = {.dry_run = plan_only, .wait_opt = -1};
        struct root *root = NULL;
        int rc = parse_opts(argc, argv, plan_only, &o);
        if (rc == EXIT_OK)
                rc = check_root(cli, &o, &root);
        if (rc == EXIT_OK && o.reapply)
                rc = reapply_rules(root, &o);
        if (rc == EXIT_OK && !o.dry_run && root_is_live(root) && geteuid() != 0)
                rc = cli_error("apply changes the live system and needs root (try --dry-run, or --root DIR for a tree)");
        if (rc != EXIT_OK)
                return rc == NOTHING_TO_DO ? EXIT_OK : rc;
        _cleanup_txn_ struct txn t = {.lock_fd = -1};
        if (!o.dry_run && (rc = begin(root, &o, &t)) != EXIT_OK)
                return rc;
        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        _cleanup_(audit_done) struct audit a = {0};
        _cleanup_(plan_done) struct plan p = {0};
        rc = site_setup_profile(&o.setup, &o.profile, &env);
        if (rc == EXIT_OK)
                rc = cli_load_profile(cli, &env, o.profile, f);
        if (rc == EXIT_OK)
                rc = site_setup_files(cli, &o.setup, &env);
        if (rc == EXIT_OK && o.reapply)
                rc = known_rules(&env, &o);
        const char *bad = NULL;
        if (rc == EXIT_OK && engine_run(&env.rules, &env.profile, f, &o.only, &a, &bad) < 0)
                rc = cli_error("unknown rule '%s' (see `llmtune explain --list`)", bad);
        if (rc != EXIT_OK)
                return rc == NOTHING_TO_DO ? EXIT_OK : rc;
        plan_build(&p, &a, f, &env.profile, o.setup.files, o.setup.n_files);
        if (o.dry_run)
                return print_plan(root, &env, &p, &o);
        return carry_out(cli, &t, &env, &p, &o);
}

static int apply_cmd(struct cli *cli, int argc, char **argv) { return run_apply(cli, argc, argv, false); }
static int plan_cmd(struct cli *cli, int argc, char **argv) { return run_apply(cli, argc, argv, true); }

#define APPLY_OPTIONS                                                                                               \
        "  -p, --profile NAME|FILE  profile (default: the pinned one, else detected, as audit does)\n"                                 \
        "  -r, --rule ID...         only these rules\n"                                                           \
        "      --param NAME=VALUE   set a parameter of --profile NAME for this host: the run writes the site\n"   \
        "                           profile " PROFILES_SITE_DIR "/site-NAME.ini that inherits NAME and holds\n" \
        "                           these values, and uses it (logged and undone with the run)\n"              \
        "      --site-profile NAME  the name of that site profile (default site-PROFILE)\n"                   \
        "      --pin                pin the profile used in " SITE_CONFIG_PATH ", as part of the run\n"        \
        "  -j, --json               machine-readable output: changed count, reboot_required, per-change records\n"

const struct command cmd_apply = {
        .name = "apply",
        .summary = "fix what the audit found, logged and undoable",
        .usage = "Usage: llmtune [--root DIR] apply [--profile NAME|FILE] [--rule ID...|--reapply] [--dry-run] [--json]\n"
                 "                                [--param NAME=VALUE... [--site-profile NAME]] [--pin] [--wait|--no-wait]\n"
                 "\n"
                 "Turn the failing audit findings into a plan and carry it out. Each change is logged to\n"
                 "ROOT/var/lib/llmtune/changelog.jsonl before it is made (intent) and after (outcome); files\n"
                 "are replaced atomically and their previous content kept by hash; each change is re-read to\n"
                 "confirm it. If a change fails, the changes of this run are undone in reverse order and apply\n"
                 "exits 1 naming the target and the reason. What cannot be changed safely at runtime (a loaded\n"
                 "nouveau, XFS alignment) is reported as \"reboot required\" or a manual step, never forced.\n"
                 "A second apply with the same profile changes nothing (\"0 changed\").\n"
                 "On the live system apply needs root; under --root DIR it works on that tree and never touches\n"
                 "the running kernel (runtime values are written to the tree's files; commands run only on\n"
                 "image files inside the tree).\n"
                 "\n" APPLY_OPTIONS
                 "  -n, --dry-run            show the plan (same as `llmtune plan`) and change nothing\n"
                 "  -w, --wait               wait for another apply or rollback instead of failing\n"
                 "      --no-wait            fail at once when another run holds the lock ([apply] wait\n"
                 "                           in " SITE_CONFIG_PATH " sets the default)\n"
                 "      --reapply            only the rules whose changes are in force in the change log,\n"
                 "                           with the pinned profile, else the one they were applied with\n"
                 "                           (never detection): what llmtune-apply.service runs at boot\n"
                 "\n"
                 "Exit status: 0 applied (or nothing to do), 1 error or a failed (and undone) run.\n",
        .run = apply_cmd,
};

const struct command cmd_plan = {
        .name = "plan",
        .summary = "show what apply would change (a dry run)",
        .usage = "Usage: llmtune [--root DIR] plan [--profile NAME|FILE] [--rule ID...] [--json] [--exit-code]\n"
                 "                               [--param NAME=VALUE... [--site-profile NAME]] [--pin]\n"
                 "\n"
                 "Print a unified diff (a/ and b/ headers) for every file apply would create or change,\n"
                 "then the runtime changes, commands, reboots and manual steps. Writes nothing. Runs the\n"
                 "checks apply runs before writing (confinement, a link where a file goes or above it, the\n"
                 "change log's trust and end): a plan apply would refuse exits 1 with apply's reason.\n"
                 "\n" APPLY_OPTIONS
                 "      --exit-code          exit 2 when changes are pending (like `git diff --exit-code`)\n"
                 "\n"
                 "Exit status: 0 shown, 1 error or apply would refuse, 2 changes pending (only with\n"
                 "--exit-code), 3 which profile fits could not be told (an unreadable fact; give --profile).\n",
        .run = plan_cmd,
};
