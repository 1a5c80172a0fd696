/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Facts of a test's tree and assertions on them: see factcheck.h. */
#include "factcheck.h"

#include <check.h>
#include <string.h>

#include "base/root.h"
#include "tmptree.h"
#include "base/util.h"

struct facts *open_facts(const char *dir)
{
        struct root *r = NULL;
        ck_assert_int_eq(root_new(dir ? dir : tmptree_path(), &r), 0);
        return facts_new(r);
}

void close_facts(struct facts *f)
{
        struct root *r = facts_root(f);
        facts_free(f);
        root_free(r);
}

static const char *shown(const struct fact *fc)
{
        const char *s = fc->status == FACT_OK ? fc->str : fc->reason;
        return s ? s : "";
}

const struct fact *get(struct facts *f, const char *name)
{
        const struct fact *fc = facts_get(f, name);
        ck_assert_msg(fc != NULL, "%s: no fact", name);
        return fc;
}

const struct fact *get_as(struct facts *f, const char *name, enum fact_status st)
{
        const struct fact *fc = get(f, name);
        ck_assert_msg(fc->status == st, "%s: status %d, expected %d (%s)", name, fc->status, st, shown(fc));
        return fc;
}

void eq(struct facts *f, const char *name, const char *value)
{
        const struct fact *fc = get_as(f, name, FACT_OK);
        ck_assert_msg(streq(fc->str, value), "%s = \"%s\", expected \"%s\"", name, fc->str, value);
}

void has_status(struct facts *f, const char *name, enum fact_status st, const char *why)
{
        const struct fact *fc = get_as(f, name, st);
        ck_assert_msg(fc->source != NULL, "%s: no source", name);
        if (why)
                ck_assert_msg(fc->reason && strstr(fc->reason, why), "%s: reason \"%s\" lacks \"%s\"", name,
                              fc->reason ? fc->reason : "", why);
}

void absent(struct facts *f, const char *name, const char *why) { has_status(f, name, FACT_ABSENT, why); }

void unreadable(struct facts *f, const char *name, const char *why) { has_status(f, name, FACT_UNREADABLE, why); }
