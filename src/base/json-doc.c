/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One JSON document read strictly: see json-doc.h. */
#include "base/json-doc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>

#include "base/util.h"

int json_doc_parse(const char *text, size_t len, json_object **ret, const char **why)
{
        *ret = NULL;
        if (len > INT_MAX) {
                *why = "too large";
                return -EINVAL;
        }
        json_tokener *tok = json_tokener_new();
        if (!tok) {
                *why = "out of memory";
                return -ENOMEM;
        }
        json_object *o = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t used = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!o || jerr != json_tokener_success) {
                json_object_put(o);
                *why = jerr == json_tokener_continue ? "truncated" : json_tokener_error_desc(jerr);
                return -EINVAL;
        }
        while (used < len && isspace((unsigned char)text[used]))
                used++;
        if (used < len) {
                json_object_put(o);
                *why = "text after the JSON document";
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

const char *json_doc_str(json_object *o, const char *key)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

char *json_doc_strdup(json_object *o, const char *key)
{
        const char *s = json_doc_str(o, key);
        return s ? xstrdup(s) : NULL;
}
