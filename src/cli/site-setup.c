/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cli/site-setup.h"

#include <errno.h>
#include <string.h>

#include "base/site-config.h"

void site_setup_done(struct site_setup *s)
{
        strv_done(&s->keys);
        strv_done(&s->vals);
        free(s->name);
        free(s->path);
        free(s->text);
        free(s->conf_text);
        *s = (struct site_setup){0};
}

static bool param_name_ok(const char *k, size_t n)
{
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
                        return false;
        return true;
}

int site_setup_param(struct site_setup *s, const char *arg)
{
        const char *eq = strchr(arg, '=');
        if (!eq || !param_name_ok(arg, (size_t)(eq - arg)))
                return cli_error("--param '%s': expected NAME=VALUE, NAME of lowercase letters, digits and '_'", arg);
        _cleanup_free_ char *key = xstrndup(arg, (size_t)(eq - arg));
        if (strv_contains(&s->keys, key))
                return cli_error("--param %s given twice", key);
        strv_add(&s->keys, key);
        strv_add(&s->vals, eq + 1);
        return EXIT_OK;
}

static bool valid_profile_name(const char *s)
{
        return *s && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == strlen(s);
}

int site_setup_profile(struct site_setup *s, const char **profile, struct rule_env *env)
{
        if (s->site_name && !s->keys.n)
                return cli_error("--site-profile names the profile --param writes: give --param too");
        if (!s->keys.n)
                return EXIT_OK;
        const char *base = *profile;
        if (!base || strchr(base, '/') || endswith(base, ".ini"))
                return cli_error("--param needs --profile NAME: the profile whose parameters it sets");
        s->name = s->site_name ? xstrdup(s->site_name) : xasprintf("site-%s", base);
        if (!valid_profile_name(s->name))
                return cli_error("--site-profile '%s': use lowercase letters, digits, '-' and '_'", s->name);
        s->path = xasprintf(PROFILES_SITE_DIR "/%s.ini", s->name);
        struct sbuf b = {0};
        sbuf_addf(&b, "# Written by llmtune apply --param: the parameters of %s set for this host.\n"
                      "# The next apply --param with this name replaces it; `llmtune rollback` restores what was here.\n"
                      "[profile]\nname = %s\ninherits = %s\ndescription = %s with parameters set for this host\n\n[params]\n",
                  base, s->name, base, base);
        /* sorted: the same parameters give the same file whatever their order on the command line */
        struct strv order = {0};
        for (size_t i = 0; i < s->keys.n; i++)
                strv_add(&order, s->keys.v[i]);
        strv_sort(&order);
        for (size_t i = 0; i < order.n; i++)
                for (size_t j = 0; j < s->keys.n; j++)
                        if (streq(order.v[i], s->keys.v[j]))
                                sbuf_addf(&b, "%s = %s\n", s->keys.v[j], s->vals.v[j]);
        strv_done(&order);
        s->text = sbuf_steal(&b);
        env->lib.overlay_path = s->path;
        env->lib.overlay_text = s->text;
        *profile = s->name;
        return EXIT_OK;
}

/* llmtune.conf with the pin of NAME, every other line kept (the planner drops the change when the
 * file holds it already). */
static int pin_text(struct cli *cli, const char *name, char **ret)
{
        const char *data = NULL;
        size_t len = 0;
        int rc = root_read(cli_root(cli), SITE_CONFIG_PATH, &data, &len);
        if (rc < 0 && !root_gone(rc))
                return cli_error("cannot read %s to pin the profile: %s", SITE_CONFIG_PATH, strerror(-rc));
        _cleanup_free_ char *old = rc == 0 ? xstrndup(data, len) : NULL;
        *ret = site_config_with_profile(old, name);
        return EXIT_OK;
}

int site_setup_files(struct cli *cli, struct site_setup *s, const struct rule_env *env)
{
        /* A value the profile line cannot carry as given (an inline "; comment", spaces at its
         * ends) would make the run apply another value than the one asked for. */
        for (size_t i = 0; i < s->keys.n; i++) {
                const char *v = resolved_param(&env->profile, s->keys.v[i]);
                if (!v || !streq(v, s->vals.v[i]))
                        return cli_error("--param %s: '%s' cannot be written as a profile value as it is (it reads "
                                         "back as '%s')", s->keys.v[i], s->vals.v[i], v ? v : "(nothing)");
        }
        s->n_files = 0;
        if (s->path)
                s->files[s->n_files++] = (struct plan_setup_file){PLAN_RULE_PARAMS, s->path, s->text};
        if (!s->pin)
                return EXIT_OK;
        const struct profile *leaf = env->profile.leaf;
        if (leaf->site && !startswith(leaf->file, PROFILES_SITE_DIR "/"))
                return cli_error("--pin names a profile by name: %s is a file outside %s", leaf->file, PROFILES_SITE_DIR);
        int rc = pin_text(cli, env->profile.name, &s->conf_text);
        if (rc == EXIT_OK)
                s->files[s->n_files++] = (struct plan_setup_file){PLAN_RULE_PIN, SITE_CONFIG_PATH, s->conf_text};
        return rc;
}
