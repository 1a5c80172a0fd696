/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A note: reported, never carried out. A reboot the changes need, or a step that must be done by
 * hand (with the exact command) because llmtune will not do it safely: target "reboot" or
 * "manual", aux the text. Notes are also the log's records of runs and acknowledgements.
 */
#include <json-c/json.h>

#include "apply/change-kind.h"

static bool any_target(const char *t) { return true; }

static int nothing(struct root *r, const struct change *c, char **err) { return 0; }

static unsigned note_section(const struct change *c) { return c->reboot ? 0 : 1; }

static char *note_line(const struct change *c) { return xstrdup(c->aux ? c->aux : ""); }

static char *note_label(const struct change *c) { return c->aux ? xstrdup(c->aux) : NULL; }

static const char *note_status(struct root *r, const struct change *c) { return c->reboot ? "reboot-required" : "manual"; }

static void note_json(const struct change *c, struct json_object *o)
{
        json_object_object_add(o, "text", json_object_new_string(c->aux));
        json_object_object_add(o, "reboot", json_object_new_boolean(c->reboot));
}

const struct change_kind change_kind_note = {
        .name = "note",
        .reported_only = true,
        .allowed = any_target,
        .area = "anything",
        .apply = nothing,
        .undo = nothing,
        .sections = {"Reboot required", "Manual steps"},
        .section = note_section,
        .line = note_line,
        .label = note_label,
        .status = note_status,
        .json = note_json,
};
