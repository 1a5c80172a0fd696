/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune baseline [--profile P] [-o FILE]: a site profile from a node the operator trusts, as
 * nhc-genconf writes an NHC configuration from a healthy node. It inherits the node's profile and
 * sets, from this node's facts, the parameters that every node of that type must share (GPU count
 * and model, NVLinks per GPU, PCIe width and speed of GPUs and adapters, adapter count, rate, fabric
 * and firmware, driver version, NUMA layout); rules/baseline.ini and the rules those
 * parameters already drive judge the other nodes against it. A value this node does not show
 * uniformly (two firmware versions, a fact it could not read) is left unset with the reason, never
 * guessed: a baseline only states what was seen.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "report/consistency.h"
#include "engine/expr.h"
#include "engine/param-types.h"

enum reduce {
        SAME, /* every item has one value: that value */
        MIN,  /* numbers: the smallest (what every twin must reach) */
};

/* A parameter and the facts it is taken from: "PATTERN [where F == V [and ...]]" expressions (the
 * rule syntax, only `==` in where), several for one parameter when it bounds more than one fact. */
static const struct source {
        const char *param;
        enum reduce how;
        const char *from[2];
} sources[] = {
        {"gpu_count", SAME, {"gpu.nvidia_count present"}},
        {"gpu_device_id", SAME, {"all gpu.*.device_id present where vendor_id == 10de"}},
        {"nvlink_per_gpu", MIN, {"all nvml.*.nvlink.count present", "all nvml.*.nvlink.up present"}},
        {"nvswitch_count", SAME, {"nvswitch.count present"}},
        {"gpu_pcie_width", MIN, {"all gpu.*.link.width present where vendor_id == 10de"}},
        {"gpu_pcie_speed", MIN,
         {"all gpu.*.link.max_speed present where vendor_id == 10de",
          "all gpu.*.upstream_link.max_speed present where vendor_id == 10de"}},
        {"gpu_per_socket", SAME, {"gpu.per_socket present"}},
        {"ib_hca_count", MIN, {"ib.hca_count present", "ib.infiniband_ports present"}},
        {"ib_rate_gbps", MIN, {"all ib.*.port.*.rate_gbps present where state == ACTIVE and role == compute"}},
        {"ib_link_layer", SAME, {"all ib.*.port.*.fabric present where role == compute"}},
        /* the NVLink switch management bridges of an NVLink 5 board are RDMA devices, not adapters */
        {"hca_pcie_width", MIN, {"all ib.*.link.width present where role != nvlink-mgmt"}},
        {"hca_pcie_speed", MIN,
         {"all ib.*.link.max_speed present where role != nvlink-mgmt",
          "all ib.*.upstream_link.max_speed present where role != nvlink-mgmt"}},
        {"hca_fw_version", SAME, {"all ib.*.fw_ver present where role != nvlink-mgmt"}},
        {"nvidia_driver_version", SAME, {"nvidia.driver.version present"}},
        {"numa_nodes", SAME, {"numa.nodes present"}},
};

struct taken {
        const struct fact *best; /* the value so far */
        size_t items;
        char *why_not;           /* set: the parameter stays unset, this says why */
};

static bool where_holds(struct facts *f, const struct expr *e, const char *name)
{
        for (size_t w = 0; w < e->nwhere; w++) {
                _cleanup_free_ char *sib = expr_item_sibling(e, name, e->where[w].field);
                const struct fact *sf = facts_get(f, sib);
                if (!sf || sf->status != FACT_OK)
                        return false;
                /* the table above uses == and != only */
                if (streq(sf->str, e->where[w].value) != (e->where[w].op != OP_NE))
                        return false;
        }
        return true;
}

/* One fact into T: the first value, or the smaller, or a second value where one is wanted. */
static void take_fact(struct taken *t, enum reduce how, const struct fact *fc)
{
        if (fc->status != FACT_OK) {
                t->why_not = xasprintf("%s %s: %s", fc->name, fc->status == FACT_ABSENT ? "absent" : "unreadable",
                                       fc->reason ? fc->reason : "no reason given");
                return;
        }
        t->items++;
        if (!t->best) {
                t->best = fc;
                return;
        }
        bool an, bn;
        uint64_t am, bm;
        if (how == MIN && fact_number(fc, &an, &am) && fact_number(t->best, &bn, &bm)) {
                if (num_cmp(an, am, bn, bm) < 0)
                        t->best = fc;
        } else if (!streq(fc->str, t->best->str))
                t->why_not = xasprintf("not the same on this node: %s = %s, %s = %s", t->best->name, t->best->str,
                                       fc->name, fc->str);
}

/* Nothing matched: say why the collection is empty when it is not known (X.count of the pattern's
 * first part: nvml.count without NVML or a capture), else that there are none. */
static void none_seen(struct facts *f, const struct source *s, struct taken *t)
{
        const char *pat = startswith(s->from[0], "all ") ? s->from[0] + 4 : s->from[0];
        const char *dot = strchr(pat, '.');
        _cleanup_free_ char *count = dot ? xasprintf("%.*s.count", (int)(dot - pat), pat) : NULL;
        const struct fact *c = count ? facts_get(f, count) : NULL;
        if (c && c->status != FACT_OK && !startswith(pat, count))
                t->why_not = xasprintf("%s %s: %s", c->name, c->status == FACT_ABSENT ? "absent" : "unreadable",
                                       c->reason ? c->reason : "no reason given");
        else
                t->why_not = xasprintf("none on this node (%s)", s->from[0]);
}

static void take_source(struct facts *f, const struct source *s, struct taken *t)
{
        for (size_t k = 0; k < ARRAY_SIZE(s->from) && s->from[k] && !t->why_not; k++) {
                struct expr e;
                _cleanup_free_ char *err = NULL;
                if (expr_parse(s->from[k], &e, &err) < 0) {
                        t->why_not = xasprintf("internal: %s", err);
                        return;
                }
                _cleanup_free_ const struct fact **v = NULL;
                size_t n = strchr(e.fact, '*') ? facts_match(f, e.fact, &v) : 0;
                const struct fact *one = n ? NULL : facts_get(f, e.fact);
                if (!strchr(e.fact, '*') && one)
                        take_fact(t, s->how, one);
                for (size_t i = 0; i < n && !t->why_not; i++)
                        if (where_holds(f, &e, v[i]->name))
                                take_fact(t, s->how, v[i]);
                expr_done(&e);
        }
        if (!t->why_not && !t->best)
                none_seen(f, s, t);
}

/* The names of the facts some check of RULES compares, as this node has them, sorted. */
static void compared_facts(struct facts *f, const struct cons_rules *rules, struct strv *names)
{
        for (size_t k = 0; k < rules->n; k++)
                for (size_t p = 0; p < rules->v[k].facts.n; p++) {
                        _cleanup_free_ const struct fact **v = NULL;
                        size_t n = facts_match(f, rules->v[k].facts.v[p], &v);
                        for (size_t i = 0; i < n; i++)
                                if (cons_rules_want(rules, v[i]->name) && !strv_contains(names, v[i]->name))
                                        strv_add(names, v[i]->name);
                }
        strv_sort(names);
}

/* [facts], [facts-absent], [facts-unreadable]: what `report --consistency` compares
 * (rules/consistency.conf), as this node has it, for `report --consistency --reference FILE`. The
 * profile, which the report takes from an audit, is not a fact: that check keeps its majority. */
static void write_facts(FILE *out, struct facts *f)
{
        _cleanup_free_ char *path = xasprintf("%s/rules/consistency.conf", cli_data_dir());
        struct cons_rules rules = {0};
        struct diags d = {0};
        struct strv names = {0};
        if (cons_rules_load(path, &rules, &d) < 0)
                fprintf(out, "\n# no [facts]: %s\n", d.msgs.n ? d.msgs.v[0] : path);
        else
                compared_facts(f, &rules, &names);
        _cleanup_free_ struct cons_entry *v = xcalloc(names.n + 1, sizeof(*v));
        for (size_t i = 0; i < names.n; i++) {
                const struct fact *fc = facts_get(f, names.v[i]);
                v[i] = (struct cons_entry){.name = fc->name,
                                           .state = fc->status == FACT_OK       ? CONS_OK
                                                    : fc->status == FACT_ABSENT ? CONS_ABSENT
                                                                                : CONS_UNREADABLE,
                                           .value = fc->status == FACT_OK ? fc->str : fc->reason};
        }
        cons_write_reference(out, v, names.n);
        strv_done(&names);
        strv_done(&d.msgs);
        cons_rules_done(&rules);
}

/* A value the parameter's declared type does not take (the fabric `other`, which no site can name)
 * stays unset: lint would refuse the whole baseline for it. */
static void check_type(const struct resolved *r, const char *param, struct taken *t)
{
        const char *spec = resolved_param_type(r, param);
        struct param_type pt;
        _cleanup_free_ char *err = NULL;
        if (!spec || param_type_parse(spec, &pt, &err) < 0)
                return;
        if (!param_type_accepts(&pt, t->best->str)) {
                _cleanup_free_ char *words = param_type_describe(&pt);
                t->why_not = xasprintf("%s = %s, not %s", t->best->name, t->best->str, words);
        }
        param_type_done(&pt);
}

static void write_profile(FILE *out, struct facts *f, const struct resolved *r)
{
        const char *inherits = r->name;
        fprintf(out, "# A fleet baseline written by `llmtune baseline` from a node the operator trusts: the\n"
                     "# parameters below are what that node has; every node of its type must match them\n"
                     "# (rules/baseline.ini and the rules each parameter drives). Put it in\n"
                     "# /etc/llmtune/profiles.d/ and pin it (`llmtune profile set %s-baseline`), or audit\n"
                     "# with --profile FILE.\n\n",
                inherits);
        fprintf(out, "[profile]\nname = %s-baseline\ndescription = %s, as the trusted node of this fleet\ninherits = %s\n\n",
                inherits, inherits, inherits);
        fprintf(out, "[params]\n");
        for (size_t i = 0; i < ARRAY_SIZE(sources); i++) {
                struct taken t = {0};
                take_source(f, &sources[i], &t);
                if (!t.why_not)
                        check_type(r, sources[i].param, &t);
                if (t.why_not)
                        fprintf(out, "# %s not set: %s\n", sources[i].param, t.why_not);
                else
                        fprintf(out, "%s = %s\n", sources[i].param, t.best->str);
                free(t.why_not);
        }
        write_facts(out, f);
}

static int baseline_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {"output", required_argument, NULL, 'o'},
                {},
        };
        const char *wanted = NULL, *output = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "p:o:", opts, NULL)) != -1)
                switch (c) {
                case 'p': wanted = optarg; break;
                case 'o': output = optarg; break;
                default: return cli_usage_error("baseline");
                }
        if (optind != argc)
                return cli_error("baseline takes no arguments (see llmtune baseline --help)");
        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        int rc = f ? cli_load_profile(cli, &env, wanted, f) : EXIT_ERROR;
        FILE *out = stdout;
        if (rc == EXIT_OK && output && !(out = fopen(output, "we")))
                rc = cli_error("cannot write %s: %s", output, strerror(errno));
        if (rc == EXIT_OK) {
                write_profile(out, f, &env.profile);
                if (fflush(out) != 0 || ferror(out))
                        rc = cli_error("cannot write %s: %s", output ? output : "standard output", strerror(errno));
                if (output && fclose(out) != 0 && rc == EXIT_OK)
                        rc = cli_error("cannot write %s: %s", output, strerror(errno));
        }
        return rc;
}

const struct command cmd_baseline = {
        .name = "baseline",
        .summary = "write a site profile from this node, the fleet's reference",
        .usage = "Usage: llmtune [--root DIR] baseline [--profile P] [-o FILE]\n"
                 "\n"
                 "Write a site profile that inherits this node's profile (detected, pinned, or P) and sets\n"
                 "what every node of its type must share to what this node has: GPU count and model\n"
                 "(gpu_count, gpu_device_id), NVLinks per GPU (nvlink_per_gpu), NVSwitches, the PCIe width\n"
                 "and speed of GPUs and RDMA adapters (gpu_pcie_width, gpu_pcie_speed, hca_pcie_width,\n"
                 "hca_pcie_speed: the trained width, the speed both ends support), adapter count, rate,\n"
                 "fabric and firmware (ib_hca_count, ib_rate_gbps, ib_link_layer, hca_fw_version), the\n"
                 "NVIDIA driver version and the NUMA layout (numa_nodes, gpu_per_socket). Run it on a node\n"
                 "you trust: an audit of that node with the baseline passes what it passed before, and\n"
                 "the baseline's rules (rules/baseline.ini) fail on a node that differs. A value this node\n"
                 "does not show uniformly, or could not read, is left unset with a comment saying why.\n"
                 "The facts `llmtune report --consistency` compares follow in [facts] (with [facts-absent]\n"
                 "and [facts-unreadable]): `report --consistency --reference FILE` holds the fleet to them.\n"
                 "\n"
                 "  -p, --profile P   the profile to inherit (default: the pinned one, else detection)\n"
                 "  -o, --output FILE write to FILE instead of standard output\n",
        .run = baseline_cmd,
};
