/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "apply/change-kind.h"

#include <errno.h>

/* The registry: each kind of change-kinds.h at the index of its enum value. */
#define CHANGE_KIND_ENTRY(e, module) [CHANGE_##e] = &change_kind_##module,
static const struct change_kind *const change_kinds[] = {CHANGE_KINDS(CHANGE_KIND_ENTRY)};
#undef CHANGE_KIND_ENTRY

const struct change_kind *change_kind_at(size_t i) { return i < ARRAY_SIZE(change_kinds) ? change_kinds[i] : NULL; }

const struct change_kind *change_kind_of(const struct change *c) { return change_kind_at((size_t)c->type); }

const char *change_type_name(enum change_type t)
{
        const struct change_kind *k = change_kind_at((size_t)t);
        return k ? k->name : "?";
}

int change_type_parse(const char *s, enum change_type *ret)
{
        for (size_t i = 0; i < ARRAY_SIZE(change_kinds); i++)
                if (streq(change_kinds[i]->name, s)) {
                        *ret = (enum change_type)i;
                        return 0;
                }
        return -EINVAL;
}

const char *change_section(const struct change *c, unsigned *index)
{
        const struct change_kind *k = change_kind_of(c);
        unsigned i = k->section ? k->section(c) : 0;
        if (index)
                *index = i;
        return i < ARRAY_SIZE(k->sections) ? k->sections[i] : NULL;
}

char *change_line(const struct change *c)
{
        const struct change_kind *k = change_kind_of(c);
        if (k->line)
                return k->line(c);
        return xasprintf("%s: %s -> %s", c->target, c->before ? c->before : "(none)", c->after ? c->after : "(removed)");
}

char *change_label(const struct change *c)
{
        const struct change_kind *k = change_kind_of(c);
        return k->label ? k->label(c) : c->target ? xstrdup(c->target) : NULL;
}

char *change_short_line(const char *state)
{
        if (!state)
                return xstrdup("-");
        struct sbuf b = {0};
        for (const char *p = state; *p && b.len < 40; p++)
                sbuf_addn(&b, *p == '\n' || *p == '\t' ? " " : p, 1);
        if (strlen(state) > 40)
                sbuf_add(&b, "...");
        return b.s ? sbuf_steal(&b) : xstrdup("\"\"");
}

char *change_short_form(const struct change *c, const char *state, const char *sha)
{
        const struct change_kind *k = change_kind_of(c);
        return k->short_form ? k->short_form(c, state, sha) : change_short_line(state);
}

const char *change_plan_status(struct root *r, const struct change *c)
{
        const struct change_kind *k = change_kind_of(c);
        const char *s = k->status ? k->status(r, c) : NULL;
        return s ? s : "planned";
}

bool change_undoable(const struct change *c)
{
        const struct change_kind *k = change_kind_of(c);
        return !k->undoable || k->undoable(c);
}

bool change_has_states(const struct change *c) { return change_kind_of(c)->current != NULL; }

void change_json_fields(const struct change *c, struct json_object *o)
{
        const struct change_kind *k = change_kind_of(c);
        if (k->json)
                k->json(c, o);
}
