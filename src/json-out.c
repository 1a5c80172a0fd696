/* SPDX-License-Identifier: MIT */
#include "json-out.h"

#include <stdint.h>

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

void json_print(FILE *out, json_object *o)
{
        fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE),
              out);
        fputc('\n', out);
}
