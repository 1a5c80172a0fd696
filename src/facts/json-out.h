/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON rendering shared by the commands (json-c). */
#pragma once

#include <json-c/json.h>
#include <stdio.h>

#include "facts/facts.h"

/* {"status": "ok", "type": "int", "value": 2, "source": "..."} or
 * {"status": "absent"|"unreadable", "reason": "...", "source": "..."} */
json_object *fact_to_json(const struct fact *fc);

/* The value alone (number, bool or string), null when not ok. */
json_object *fact_value_json(const struct fact *fc);

/* For _cleanup_(json_object_putp): drops the reference when the variable goes out of scope. */
static inline void json_object_putp(json_object **o)
{
        if (*o)
                json_object_put(*o);
}

/* Pretty-print with a trailing newline. Always valid UTF-8: bytes that are not are replaced by
 * U+FFFD, and a top-level object then gets "non_utf8_replaced": <strings and keys changed>. */
void json_print(FILE *out, json_object *o);
/* A list as a document like every other: {"format": 1, KEY: LIST} (an object, so it can carry a
 * version and non_utf8_replaced), printed with json_print; LIST is taken and released. */
void json_print_list(FILE *out, const char *key, json_object *list);
