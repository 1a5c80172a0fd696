/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Error counters between runs (counters.h) and the counters.* facts about the state they are judged
 * against. */
#include "facts/probes/counters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/parse.h"
#include "facts/probes/probes.h"

#define BOOT_ID "/proc/sys/kernel/random/boot_id"
#define STATE_MAGIC "llmtune-counters 1"

struct reading {
        char *key;
        uint64_t value;
};

struct cstate {
        int rc;            /* 0 read, -ENOENT none, -EBADMSG not ours (WHY), else the read error */
        char *why;
        char *boot;        /* of the state ("-": unknown) */
        char *this_boot;   /* of this run ("-": unknown) */
        time_t time;
        struct reading *old, *cur; /* the state's readings; this run's */
        size_t nold, ncur;
};

static void cstate_free(void *p)
{
        struct cstate *s = p;
        for (size_t i = 0; i < s->nold; i++)
                free(s->old[i].key);
        for (size_t i = 0; i < s->ncur; i++)
                free(s->cur[i].key);
        free(s->old);
        free(s->cur);
        free(s->why);
        free(s->boot);
        free(s->this_boot);
        free(s);
}

static void add_reading(struct reading **v, size_t *n, const char *key, uint64_t value)
{
        for (size_t i = 0; i < *n; i++)
                if (streq((*v)[i].key, key)) {
                        (*v)[i].value = value;
                        return;
                }
        *v = xrealloc(*v, (*n + 1) * sizeof(**v));
        (*v)[(*n)++] = (struct reading){.key = xstrdup(key), .value = value};
}

/* The state file's text into S; -EBADMSG with S->why at the first line that is not ours. */
static int parse_state(struct cstate *s, const char *data)
{
        unsigned lineno = 0;
        for (const char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
                lineno++;
                _cleanup_free_ char *l = xstrndup(line, strcspn(line, "\n"));
                char key[512], val[128], extra;
                int n = sscanf(l, "%511s %127s %c", key, val, &extra);
                uint64_t v;
                if (lineno == 1 ? !streq(l, STATE_MAGIC) : n != 2) {
                        s->why = xasprintf("line %u is not \"%s\" / \"KEY VALUE\"", lineno, STATE_MAGIC);
                        return -EBADMSG;
                }
                if (lineno == 1)
                        continue;
                if (streq(key, "boot")) {
                        free(s->boot);
                        s->boot = xstrdup(val);
                } else if (parse_u64(val, &v) < 0) {
                        s->why = xasprintf("line %u: '%s' is not a number", lineno, val);
                        return -EBADMSG;
                } else if (streq(key, "time"))
                        s->time = (time_t)v;
                else
                        add_reading(&s->old, &s->nold, key, v);
        }
        if (!lineno || !s->boot || !s->time) {
                s->why = xstrdup("it lacks its header, boot or time line");
                return -EBADMSG;
        }
        return 0;
}

static struct cstate *state_of(struct facts *f)
{
        struct cstate *s = facts_handle(f, "counter-state");
        if (s)
                return s;
        s = xcalloc(1, sizeof(*s));
        struct root *r = facts_root(f);
        char *boot = NULL;
        s->this_boot = root_read_line(r, BOOT_ID, &boot) == 0 && *boot ? boot : (free(boot), xstrdup("-"));
        const char *data;
        s->rc = root_read_text(r, COUNTERS_STATE, &data, NULL);
        if (root_gone(s->rc))
                s->rc = -ENOENT;
        else if (s->rc == 0 && (s->rc = parse_state(s, data)) < 0) {
                for (size_t i = 0; i < s->nold; i++)
                        free(s->old[i].key);
                s->nold = 0; /* half a file is no baseline */
        }
        facts_set_handle(f, "counter-state", s, cstate_free);
        return s;
}

/* Why a counter has no growth to judge, from the state S (NULL when it has a reading). */
static char *no_growth(const struct cstate *s, const char *key, const uint64_t **prev)
{
        *prev = NULL;
        if (s->rc == -ENOENT)
                return xstrdup("no earlier reading: the counters are recorded by `llmtune health-check` (or "
                               "`audit --record-counters`) in " COUNTERS_STATE);
        if (s->rc == -EBADMSG)
                return xasprintf(COUNTERS_STATE " is not one llmtune writes (%s): no earlier reading; the next "
                                                "record replaces it",
                                 s->why);
        if (s->rc < 0)
                return xasprintf(COUNTERS_STATE " cannot be read: %s", errno_name(s->rc));
        for (size_t i = 0; i < s->nold; i++)
                if (streq(s->old[i].key, key)) {
                        *prev = &s->old[i].value;
                        return NULL;
                }
        return xstrdup("no earlier reading of this counter (a device or port new since the last record)");
}

void counter_growth(struct facts *f, const char *name, const char *key)
{
        const struct fact *fc = facts_get(f, name);
        bool neg;
        uint64_t now;
        if (!fc)
                return;
        if (fc->status == FACT_ABSENT) { /* no counter, no growth, for the same reason */
                fact_absent(f, fc->source, fc->reason, "%s_growth", name);
                return;
        }
        if (fc->status != FACT_OK || !fact_number(fc, &neg, &now) || neg) {
                fact_unreadable(f, fc->source, 0, fc->status == FACT_OK ? "not a count" : fc->reason, "%s_growth", name);
                return;
        }
        struct cstate *s = state_of(f);
        add_reading(&s->cur, &s->ncur, key ? key : name, now);
        const uint64_t *prev;
        _cleanup_free_ char *why = no_growth(s, key ? key : name, &prev);
        _cleanup_free_ char *src = xasprintf(COUNTERS_STATE " (recorded %lld s before)",
                                             (long long)(time(NULL) - s->time));
        if (why)
                fact_absent(f, COUNTERS_STATE, why, "%s_growth", name);
        else if (!streq(s->boot, s->this_boot) || streq(s->boot, "-") || now < *prev)
                fact_uint(f, src, now, "%s_growth", name); /* another boot, or cleared since: all of it is new */
        else
                fact_uint(f, src, now - *prev, "%s_growth", name);
}

int counters_save(struct facts *f)
{
        struct root *r = facts_root(f);
        if (root_is_archive(r) || root_is_topology(r))
                return -EROFS;
        struct cstate *s = state_of(f);
        struct sbuf b = {0};
        sbuf_addf(&b, STATE_MAGIC "\nboot %s\ntime %lld\n", s->this_boot, (long long)time(NULL));
        for (size_t i = 0; i < s->ncur; i++)
                sbuf_addf(&b, "%s %llu\n", s->cur[i].key, (unsigned long long)s->cur[i].value);
        /* readings of this boot not taken again (a rule not run this time) stay the baseline */
        for (size_t i = 0; s->rc == 0 && streq(s->boot, s->this_boot) && i < s->nold; i++) {
                bool again = false;
                for (size_t k = 0; k < s->ncur && !again; k++)
                        again = streq(s->cur[k].key, s->old[i].key);
                if (!again)
                        sbuf_addf(&b, "%s %llu\n", s->old[i].key, (unsigned long long)s->old[i].value);
        }
        int rc = root_mkdirs(r, "/var/lib/llmtune", 0755);
        if (rc == 0)
                rc = root_write_file(r, COUNTERS_STATE, b.s, b.len, 0600);
        free(sbuf_steal(&b));
        return rc;
}

/* counters.{state,recorded,age,boot}: what growth is judged against this run. */
static int counters_run(struct facts *f)
{
        struct cstate *s = state_of(f);
        const char *src = COUNTERS_STATE;
        _cleanup_free_ char *why = NULL;
        const uint64_t *prev;
        if ((why = no_growth(s, "", &prev)) && s->rc < 0) {
                static const char *const names[] = {"counters.recorded", "counters.age", "counters.same_boot"};
                fact_str(f, src, s->rc == -ENOENT ? "none" : s->rc == -EBADMSG ? "foreign" : "unreadable",
                         "counters.state");
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        if (s->rc == -ENOENT || s->rc == -EBADMSG)
                                fact_absent(f, src, why, "%s", names[i]);
                        else
                                fact_unreadable(f, src, s->rc, why, "%s", names[i]);
                return 0;
        }
        fact_str(f, src, "ok", "counters.state");
        char when[32];
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&s->time, &tm));
        fact_str(f, src, when, "counters.recorded");
        time_t now = time(NULL);
        fact_uint(f, src, now > s->time ? (uint64_t)(now - s->time) : 0, "counters.age");
        fact_bool(f, src, streq(s->boot, s->this_boot) && !streq(s->boot, "-"), "counters.same_boot");
        return 0;
}

const struct probe probe_counters = {
        .name = "counters",
        .prefixes = {"counters."},
        .run = counters_run,
};
