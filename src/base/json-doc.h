/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One JSON document read strictly: the whole text is one value and nothing but white space after
 * it. What a change log line, a MANIFEST, a facts or audit --json file is read with.
 */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

/* Parse TEXT (LEN bytes) into *RET (the caller puts it). On failure returns -EINVAL, *RET NULL and
 * *WHY (static) says what is wrong: json-c's description of the error, "truncated", or "text after
 * the JSON document". */
int json_doc_parse(const char *text, size_t len, json_object **ret, const char **why);

/* The string member KEY of the object O; NULL when O (which may be NULL) has none or it is not a
 * string. The _strdup form is a copy the caller frees. */
const char *json_doc_str(json_object *o, const char *key);
char *json_doc_strdup(json_object *o, const char *key);
