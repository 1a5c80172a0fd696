/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/json-out.h"

#include <stdint.h>
#include <stdlib.h>

static const char *status_name(enum fact_status s)
{
        switch (s) {
        case FACT_OK: return "ok";
        case FACT_ABSENT: return "absent";
        case FACT_UNREADABLE: return "unreadable";
        }
        return "?";
}

json_object *fact_value_json(const struct fact *fc)
{
        if (!fc || fc->status != FACT_OK)
                return NULL;
        switch (fc->type) {
        case FACT_INT:
                if (fc->neg)
                        return json_object_new_int64((int64_t)(0 - fc->mag));
                return fc->mag > INT64_MAX ? json_object_new_uint64(fc->mag) : json_object_new_int64((int64_t)fc->mag);
        case FACT_BOOL: return json_object_new_boolean(fc->b);
        case FACT_STR: return json_object_new_string(fc->str);
        }
        return NULL;
}

json_object *fact_to_json(const struct fact *fc)
{
        static const char *const types[] = {[FACT_STR] = "string", [FACT_INT] = "int", [FACT_BOOL] = "bool"};
        json_object *o = json_object_new_object();
        json_object_object_add(o, "status", json_object_new_string(status_name(fc->status)));
        if (fc->status == FACT_OK) {
                json_object_object_add(o, "type", json_object_new_string(types[fc->type]));
                json_object_object_add(o, "value", fact_value_json(fc));
        } else
                json_object_object_add(o, "reason", json_object_new_string(fc->reason ? fc->reason : ""));
        if (fc->source)
                json_object_object_add(o, "source", json_object_new_string(fc->source));
        return o;
}

/* Length of the valid UTF-8 sequence at S (at most N bytes), 0 when it is not one (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
        if (s[0] < 0x80)
                return 1;
        size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                   : s[0] >= 0xf0 && s[0] <= 0xf4                                     ? 4
                                                                                       : 0;
        if (!len || len > n)
                return 0;
        for (size_t i = 1; i < len; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) || (s[0] == 0xf0 && s[1] < 0x90) ||
            (s[0] == 0xf4 && s[1] > 0x8f))
                return 0;
        return len;
}

/* S with every byte that is not part of valid UTF-8 replaced by U+FFFD, or NULL when S is valid. */
static char *utf8_fixed(const char *s, size_t n, size_t *ret_len)
{
        size_t i = 0, k;
        while (i < n && (k = utf8_seq((const unsigned char *)s + i, n - i)))
                i += k;
        if (i == n)
                return NULL;
        struct sbuf b = {0};
        sbuf_addn(&b, s, i);
        while (i < n) {
                k = utf8_seq((const unsigned char *)s + i, n - i);
                if (k) {
                        sbuf_addn(&b, s + i, k);
                        i += k;
                } else {
                        sbuf_add(&b, "\xef\xbf\xbd");
                        i++;
                }
        }
        *ret_len = b.len;
        return sbuf_steal(&b);
}

/* Make every string and key of O valid UTF-8; returns how many were changed. */
static size_t utf8_sanitize(json_object *o)
{
        size_t changed = 0, len;
        switch (json_object_get_type(o)) {
        case json_type_string: {
                char *fixed = utf8_fixed(json_object_get_string(o), (size_t)json_object_get_string_len(o), &len);
                if (fixed) {
                        json_object_set_string_len(o, fixed, (int)len);
                        free(fixed);
                        changed++;
                }
                break;
        }
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        changed += utf8_sanitize(json_object_array_get_idx(o, i));
                break;
        case json_type_object: {
                struct strv bad = {0};
                json_object_object_foreach(o, key, val) {
                        changed += utf8_sanitize(val);
                        char *fixed = utf8_fixed(key, strlen(key), &len);
                        if (fixed) {
                                strv_add(&bad, key);
                                free(fixed);
                        }
                }
                for (size_t i = 0; i < bad.n; i++) {
                        json_object *v = NULL;
                        json_object_object_get_ex(o, bad.v[i], &v);
                        json_object_get(v);
                        char *fixed = utf8_fixed(bad.v[i], strlen(bad.v[i]), &len);
                        json_object_object_del(o, bad.v[i]);
                        json_object_object_add(o, fixed, v);
                        free(fixed);
                        changed++;
                }
                strv_done(&bad);
                break;
        }
        default:
                break;
        }
        return changed;
}

void json_print(FILE *out, json_object *o)
{
        /* JSON is UTF-8 (RFC 8259), and a tree can hold any bytes (a hostname, an interface name,
         * a file's content): bytes that are not UTF-8 become U+FFFD, and the document says how
         * many strings were changed so, so a consumer never gets invalid output unannounced. */
        size_t changed = utf8_sanitize(o);
        if (changed && json_object_is_type(o, json_type_object))
                json_object_object_add(o, "non_utf8_replaced", json_object_new_int64((int64_t)changed));
        fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE),
              out);
        fputc('\n', out);
}

void json_print_list(FILE *out, const char *key, json_object *list)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "format", json_object_new_int(1));
        json_object_object_add(o, key, list);
        json_print(out, o);
        json_object_put(o);
}
