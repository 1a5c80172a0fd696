/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NCCL linter on the seed-style file and each problem class, and /etc/nccl.conf generation on
 * the fixture roots (LLMTUNE_ROOTS): HCAs and interfaces from the hardware, the profile's keys,
 * the site's lines kept or commented out, idempotence, and every generated file passing the linter.
 * The catalog is LLMTUNE_NCCL_CATALOG (rules/nccl-catalog.tsv).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facts/facts.h"
#include "nccl/nccl-gen.h"
#include "nccl/nccl-lint.h"
#include "tmptree.h"
#include "unit-main.h"

static struct nccl_catalog cat;
static struct root *root;
static struct facts *facts;

static void setup(void)
{
        const char *p = getenv("LLMTUNE_NCCL_CATALOG");
        ck_assert_msg(p, "LLMTUNE_NCCL_CATALOG is not set (run through meson test)");
        ck_assert_int_eq(nccl_catalog_load(p, &cat), 0);
        ck_assert_uint_gt(cat.n, 200);
}

static void teardown(void)
{
        facts = facts_free(facts);
        root = root_free(root);
        nccl_catalog_done(&cat);
}

static struct facts *open_fixture(const char *name)
{
        const char *dir = getenv("LLMTUNE_ROOTS");
        ck_assert_msg(dir, "LLMTUNE_ROOTS is not set (run through meson test)");
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
        facts = facts_free(facts);
        root = root_free(root);
        ck_assert_int_eq(root_new(p, &root), 0);
        facts = facts_new(root);
        return facts;
}

/* The finding of LINE with PROBLEM, or NULL. */
static const struct nccl_finding *find(const struct nccl_lint *l, unsigned line, enum nccl_problem p)
{
        for (size_t i = 0; i < l->n_findings; i++)
                if (l->findings[i].line == line && l->findings[i].problem == p)
                        return &l->findings[i];
        return NULL;
}

static void lint(const char *text, struct nccl_lint *l) { nccl_lint_text(&cat, text, strlen(text), l); }

START_TEST(seed_file)
{
        struct nccl_lint l;
        lint("NCCL_SOCKET_TIMEOUT=1800\n"
             "NCCL_MIN_NRINGS=4\n"
             "NCCL_ASYNC_ERROR_HANDLING=1\n"
             "NCCL_P2P_DISABLE=0\n"
             "NCCL_DEBUG = INFO\n",
             &l);
        const struct nccl_finding *x;
        ck_assert_ptr_nonnull(x = find(&l, 1, NP_FOREIGN));
        ck_assert_ptr_nonnull(strstr(x->message, "read by nothing"));
        ck_assert_ptr_nonnull(x = find(&l, 2, NP_DEPRECATED));
        ck_assert_ptr_nonnull(strstr(x->message, "NCCL_MIN_CTAS"));
        ck_assert_ptr_nonnull(x = find(&l, 3, NP_FOREIGN));
        ck_assert_ptr_nonnull(strstr(x->message, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
        ck_assert_ptr_nonnull(x = find(&l, 4, NP_DEBUG));
        ck_assert_ptr_nonnull(strstr(x->message, "does nothing"));
        ck_assert_ptr_nonnull(x = find(&l, 5, NP_SYNTAX));
        ck_assert_ptr_nonnull(strstr(x->message, "spaces around '='"));
        nccl_lint_done(&l);
}
END_TEST
DEFINE_TEST(seed_file, .description = "seed file", .root = "none");

START_TEST(each_problem_with_its_line)
{
        struct nccl_lint l;
        lint("# comment\n"                         /* 1 */
             "NCCL_IB_HCAS==mlx5_0\n"              /* 2 unknown, did you mean */
             "NCCL_IB_GDR_LEVEL=PHB\n"             /* 3 removed */
             "TORCH_NCCL_BLOCKING_WAIT=1\n"        /* 4 PyTorch's */
             "NCCL_IB_TIMEOUT=abc\n"               /* 5 not an integer */
             "NCCL_DEBUG=LOUD\n"                   /* 6 not in the allowed set */
             "NCCL_SOCKET_IFNAME=\"eth0\"\n"       /* 7 quotes */
             "export NCCL_ALGO=Ring\n"             /* 8 export */
             "NCCL_PROTO=Simple # fast\n"          /* 9 inline # */
             "NCCL_IB_TIMEOUT=20\n"                /* 10 duplicate of 5 */
             "NCCL_BUFFSIZE=4194304\r\n"           /* 11 CRLF */
             "NCCL_CONF_FILE=/etc/other.conf\n"    /* 12 environment only */
             "  # indented\n",                     /* 13 not a comment */
             &l);
        const struct nccl_finding *x;
        ck_assert_ptr_null(find(&l, 1, NP_SYNTAX));
        ck_assert_ptr_nonnull(x = find(&l, 2, NP_UNKNOWN));
        ck_assert_ptr_nonnull(strstr(x->message, "did you mean NCCL_IB_HCA?"));
        ck_assert_ptr_nonnull(x = find(&l, 3, NP_REMOVED));
        ck_assert_ptr_nonnull(strstr(x->message, "NCCL_NET_GDR_LEVEL"));
        ck_assert_ptr_nonnull(x = find(&l, 4, NP_FOREIGN));
        ck_assert_ptr_nonnull(strstr(x->message, "job's environment"));
        ck_assert_ptr_nonnull(find(&l, 5, NP_BAD_VALUE));
        ck_assert_ptr_nonnull(find(&l, 6, NP_BAD_VALUE));
        ck_assert_ptr_nonnull(x = find(&l, 7, NP_SYNTAX));
        ck_assert_ptr_nonnull(strstr(x->message, "quotes"));
        ck_assert_ptr_nonnull(x = find(&l, 8, NP_SYNTAX));
        ck_assert_ptr_nonnull(strstr(x->message, "export"));
        ck_assert_ptr_nonnull(x = find(&l, 9, NP_SYNTAX));
        ck_assert_ptr_nonnull(strstr(x->message, "inline '#'"));
        ck_assert_ptr_nonnull(x = find(&l, 10, NP_DUPLICATE));
        ck_assert_ptr_nonnull(strstr(x->message, "line 5"));
        ck_assert_ptr_nonnull(x = find(&l, 11, NP_SYNTAX));
        ck_assert_ptr_nonnull(strstr(x->message, "CRLF"));
        ck_assert_ptr_nonnull(find(&l, 12, NP_FOREIGN));
        ck_assert_ptr_nonnull(find(&l, 13, NP_SYNTAX));
        nccl_lint_done(&l);
}
END_TEST
DEFINE_TEST(each_problem_with_its_line, .description = "each problem with its line", .root = "none");

/* NCCL 2.30's own reading of the tuning lists and level names, and what does not belong in a
 * persistent file (issue 12 item 10). */
START_TEST(nccl_230_values)
{
        struct nccl_lint l;
        lint("NCCL_ALGO=ring,NVLSTree;allreduce:^tree\n" /* 1 valid, case-insensitive */
             "NCCL_PROTO=Simple;LL\n"                    /* 2 second entry without "func:" */
             "NCCL_P2P_LEVEL=NVB\n"                      /* 3 valid in the code */
             "NCCL_NET_GDR_LEVEL=p2c\n"                  /* 4 lower case: ignored */
             "NCCL_DEBUG=TRACE\n"                        /* 5 debugging level */
             "NCCL_IB_HCA=^=mlx5_4\n"                    /* 6 exact names: fine */
             "NCCL_IB_GID_INDEX=-1\n"                    /* 7 the default: fine */
             "NCCL_MAX_CTAS=16\n",                       /* 8 debugging */
             &l);
        const struct nccl_finding *x;
        ck_assert_ptr_null(find(&l, 1, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(find(&l, 1, NP_DEBUG_KEY));
        ck_assert_ptr_nonnull(x = find(&l, 2, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(strstr(x->message, "\"LL\" has no \"function:\""));
        ck_assert_ptr_null(find(&l, 3, NP_BAD_VALUE));
        ck_assert_ptr_nonnull(x = find(&l, 4, NP_BAD_VALUE));
        ck_assert_ptr_nonnull(strstr(x->message, "(write P2C)"));
        ck_assert_ptr_nonnull(find(&l, 5, NP_DEBUG_KEY));
        ck_assert_ptr_null(find(&l, 6, NP_ADVICE));
        ck_assert_ptr_null(find(&l, 7, NP_ADVICE));
        ck_assert_ptr_nonnull(find(&l, 8, NP_DEBUG_KEY));
        ck_assert(nccl_problem_is_error(NP_INIT_FAIL) && !nccl_problem_is_error(NP_ADVICE));
        nccl_lint_done(&l);
        lint("NCCL_PROTO=allgather:LL;Reduce:Simple\nNCCL_ALGO=AllToAll:Ring\nNCCL_DEBUG=WARN\n", &l);
        ck_assert_ptr_null(find(&l, 1, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(x = find(&l, 2, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(strstr(x->message, "unknown function \"AllToAll\""));
        ck_assert_ptr_null(find(&l, 3, NP_DEBUG_KEY));
        nccl_lint_done(&l);
        /* A first entry of only ':' (the linter read a NULL list here: fuzz-nccl-conf's crash). */
        lint("NCCL_ALGO=:;\nNCCL_PROTO=::\nNCCL_ALGO=;\n", &l);
        ck_assert_ptr_nonnull(x = find(&l, 1, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(strstr(x->message, "the entry \":\" holds neither a function nor an item"));
        ck_assert_ptr_nonnull(x = find(&l, 2, NP_INIT_FAIL));
        ck_assert_ptr_nonnull(strstr(x->message, "the entry \"::\""));
        ck_assert_ptr_null(find(&l, 3, NP_INIT_FAIL)); /* no entry at all: NCCL's loop never runs */
        nccl_lint_done(&l);
}
END_TEST
DEFINE_TEST(nccl_230_values, .description = "nccl 230 values", .root = "none");

/* A resolved profile with just a name and [nccl] keys (key, value pairs, NULL-terminated). */
static struct resolved profile_with(const char *name, const char *const *kv)
{
        struct resolved r = {.name = xstrdup(name)};
        for (size_t i = 0; kv && kv[i]; i += 2) {
                r.nccl.v = xrealloc(r.nccl.v, (r.nccl.n + 1) * sizeof(*r.nccl.v));
                r.nccl.v[r.nccl.n++] = (struct setting){xstrdup(kv[i]), xstrdup(kv[i + 1]), xstrdup("test")};
        }
        return r;
}

static void profile_done(struct resolved *r)
{
        for (size_t i = 0; i < r->nccl.n; i++) {
                free(r->nccl.v[i].key);
                free(r->nccl.v[i].value);
                free(r->nccl.v[i].origin);
        }
        free(r->nccl.v);
        free(r->name);
}

/* A debugging switch the profile keeps with a reason is still reported by the linter (the profile
 * then turns rule nccl-conf-debug-switches off); so is a site's line that acts as written but earns
 * a warning (NCCL_ALGO, a GID index: kept, reported by the audit); nothing else may be. */
static void assert_clean(const char *text)
{
        struct nccl_lint l;
        lint(text, &l);
        const char *end = strstr(text, NCCL_GEN_END "\n");
        unsigned end_line = 1;
        for (const char *p = text; end && p < end; p++)
                end_line += *p == '\n';
        for (size_t i = 0; i < l.n_findings; i++)
                if (!(l.findings[i].problem == NP_DEBUG && strstr(text, "a debugging switch: ")) &&
                    !(nccl_problem_is_advisory(l.findings[i].problem) && l.findings[i].line > end_line))
                        ck_abort_msg("generated file, line %u: %s\n%s", l.findings[i].line, l.findings[i].message, text);
        nccl_lint_done(&l);
}

/* Render from EXISTING, check the result lints clean and re-renders to itself. */
static char *render_checked(const struct resolved *p, const char *existing)
{
        char *a = nccl_conf_render(facts, p, &cat, existing);
        ck_assert(startswith(a, NCCL_GEN_BEGIN "\n"));
        assert_clean(a);
        _cleanup_free_ char *b = nccl_conf_render(facts, p, &cat, a);
        ck_assert_msg(streq(a, b), "not idempotent:\n%s\n---\n%s", a, b);
        return a;
}

START_TEST(dgx_a100_generated)
{
        open_fixture("dgx-a100");
        static const char *const kv[] = {"NCCL_DEBUG", "WARN", "NCCL_NET_GDR_LEVEL", "PHB", NULL};
        struct resolved p = profile_with("a100-8x", kv);
        const char *seed = "# cluster defaults\n"
                           "NCCL_SOCKET_TIMEOUT=1800\n"
                           "NCCL_MIN_NRINGS=4\n"
                           "NCCL_ASYNC_ERROR_HANDLING=1\n"
                           "NCCL_P2P_DISABLE=0\n"
                           "NCCL_DEBUG = INFO\n"
                           "NCCL_DEBUG=INFO\n"
                           "NCCL_IB_TIMEOUT=20\n";
        _cleanup_free_ char *out = render_checked(&p, seed);
        /* every HCA shares a NUMA node with a GPU: NCCL's default (every active port) is left alone */
        ck_assert_ptr_null(strstr(out, "\nNCCL_IB_HCA="));
        ck_assert_ptr_nonnull(strstr(out, "every one of the 8 HCAs is a compute HCA"));
        ck_assert_ptr_nonnull(strstr(out, "\nNCCL_SOCKET_IFNAME==enp230s0\n"));
        ck_assert_ptr_nonnull(strstr(out, "\nNCCL_DEBUG=WARN\n"));
        /* No peer-memory module on this root: GPUDirect tuning would do nothing. */
        ck_assert_ptr_null(strstr(out, "\nNCCL_NET_GDR_LEVEL="));
        ck_assert_ptr_nonnull(strstr(out, "NCCL_NET_GDR_LEVEL from profile a100-8x not written"));
        /* The site's lines: kept when right, commented out otherwise, in their order after the block. */
        const char *site = strstr(out, NCCL_GEN_END "\n\n");
        ck_assert_ptr_nonnull(site);
        ck_assert_str_eq(site + strlen(NCCL_GEN_END "\n\n"), "# cluster defaults\n"
                                                              "#llmtune-disabled# NCCL_SOCKET_TIMEOUT=1800\n"
                                                              "#llmtune-disabled# NCCL_MIN_NRINGS=4\n"
                                                              "#llmtune-disabled# NCCL_ASYNC_ERROR_HANDLING=1\n"
                                                              "#llmtune-disabled# NCCL_P2P_DISABLE=0\n"
                                                              "#llmtune-disabled# NCCL_DEBUG = INFO\n"
                                                              "#llmtune-disabled# NCCL_DEBUG=INFO\n"
                                                              "NCCL_IB_TIMEOUT=20\n");
        /* No file yet: just the block. */
        _cleanup_free_ char *fresh = render_checked(&p, NULL);
        ck_assert(endswith(fresh, NCCL_GEN_END "\n"));
        profile_done(&p);
}
END_TEST
DEFINE_TEST(dgx_a100_generated, .description = "dgx a100 generated", .root = "dgx-a100");

START_TEST(hgx_h100_generated)
{
        open_fixture("hgx-h100");
        static const char *const kv[] = {"NCCL_NET_GDR_LEVEL", "PHB", "NCCL_IB_DISABLE", "1", NULL};
        struct resolved p = profile_with("h100-sxm-8x", kv);
        _cleanup_free_ char *out = render_checked(&p, NULL);
        ck_assert_ptr_null(strstr(out, "\nNCCL_IB_HCA="));
        ck_assert_ptr_nonnull(strstr(out, "\nNCCL_SOCKET_IFNAME==eno1\n"));
        /* nvidia_peermem is loaded here: the profile's GDR key is written. */
        ck_assert_ptr_nonnull(strstr(out, "\nNCCL_NET_GDR_LEVEL=PHB\n"));
        /* A debugging switch without a reason is not. */
        ck_assert_ptr_null(strstr(out, "\nNCCL_IB_DISABLE="));
        ck_assert_ptr_nonnull(strstr(out, "NCCL_IB_DISABLE.reason"));
        profile_done(&p);

        static const char *const kv2[] = {"NCCL_IB_DISABLE", "1", "NCCL_IB_DISABLE.reason",
                                          "the HCAs are storage-only", "NCCL_IB_HCA", "=mlx5_0:1", NULL};
        struct resolved q = profile_with("site", kv2);
        _cleanup_free_ char *out2 = render_checked(&q, "NCCL_IB_DISABLE=1\nNCCL_CROSS_NIC=0\n");
        ck_assert_ptr_nonnull(strstr(out2, "\nNCCL_IB_DISABLE=1\n"));
        ck_assert_ptr_nonnull(strstr(out2, "the HCAs are storage-only"));
        ck_assert_ptr_null(strstr(out2, "NCCL_IB_DISABLE.reason="));
        /* The profile's value of a hardware key wins. */
        ck_assert_ptr_nonnull(strstr(out2, "\nNCCL_IB_HCA==mlx5_0:1\n"));
        ck_assert_ptr_null(strstr(out2, "\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1"));
        /* The site's duplicate of a managed key is commented out, its own key kept. */
        ck_assert_ptr_nonnull(strstr(out2, "\n#llmtune-disabled# NCCL_IB_DISABLE=1\nNCCL_CROSS_NIC=0\n"));
        profile_done(&q);
}
END_TEST
DEFINE_TEST(hgx_h100_generated, .description = "hgx h100 generated", .root = "hgx-h100");

START_TEST(ws_4090_and_vm)
{
        open_fixture("ws-4090");
        _cleanup_free_ char *out = render_checked(NULL, NULL);
        ck_assert_ptr_null(strstr(out, "\nNCCL_IB_HCA="));
        ck_assert_ptr_nonnull(strstr(out, "no InfiniBand/RoCE adapter"));
        ck_assert_ptr_nonnull(strstr(out, "\nNCCL_SOCKET_IFNAME==enp4s0\n"));
        open_fixture("vm-nogpu");
        _cleanup_free_ char *vm = render_checked(NULL, NULL);
        ck_assert_ptr_nonnull(strstr(vm, "\nNCCL_SOCKET_IFNAME==eth0\n"));
}
END_TEST
DEFINE_TEST(ws_4090_and_vm, .description = "ws 4090 and vm", .root = "ws-4090, vm-nogpu");

START_TEST(existing_blocks)
{
        open_fixture("vm-nogpu");
        /* A block in the middle moves to the top; a BEGIN without END drops nothing; CRLF becomes LF. */
        const char *existing = "NCCL_CROSS_NIC=1\r\n" NCCL_GEN_BEGIN "\nNCCL_OLD=1\n" NCCL_GEN_END
                               "\n\nNCCL_NTHREADS=256\n" NCCL_GEN_BEGIN "\nNCCL_ALGO=Ring\n";
        _cleanup_free_ char *out = render_checked(NULL, existing);
        ck_assert_ptr_null(strstr(out, "NCCL_OLD"));
        const char *site = strstr(out, NCCL_GEN_END "\n\n");
        ck_assert_ptr_nonnull(site);
        ck_assert_str_eq(site + strlen(NCCL_GEN_END "\n\n"),
                         "NCCL_CROSS_NIC=1\nNCCL_NTHREADS=256\n" NCCL_GEN_BEGIN "\nNCCL_ALGO=Ring\n");
}
END_TEST
DEFINE_TEST(existing_blocks, .description = "existing blocks", .root = "vm-nogpu");

START_TEST(env_lines)
{
        open_fixture("dgx-a100");
        static const char *const kv[] = {"NCCL_DEBUG_SUBSYS", "INIT,it's", NULL};
        struct resolved p = profile_with("p", kv);
        struct nccl_settings s;
        nccl_settings_build(facts, &p, NULL, &s);
        _cleanup_free_ char *env = nccl_env_render(&s);
        ck_assert_ptr_nonnull(strstr(env, "\nexport NCCL_DEBUG_SUBSYS='INIT,it'\\''s'\n"));
        ck_assert_ptr_nonnull(strstr(env, "\nexport NCCL_SOCKET_IFNAME='=enp230s0'\n"));
        nccl_settings_done(&s);
        profile_done(&p);
}
END_TEST
DEFINE_TEST(env_lines, .description = "env lines", .root = "dgx-a100");

/* Interfaces up whose addresses the tree does not hold: "unknown", never "no interface" (13.2). */
START_TEST(socket_ifname_unknown_addresses)
{
        tmptree_new("nccl");
        tmptree_put("sys/class/net/eth0/operstate", "up\n", 0644);
        tmptree_put("sys/class/net/eth0/flags", "0x1003\n", 0644);
        tmptree_link("sys/class/net/eth0/device", "../../../devices/pci0000:00/0000:00:03.0");
        tmptree_put("sys/class/net/lo/flags", "0x9\n", 0644);
        facts = facts_free(facts);
        root = root_free(root);
        ck_assert_int_eq(root_new(tmptree_path(), &root), 0);
        facts = facts_new(root);
        struct resolved p = profile_with("p", NULL);
        struct nccl_settings s;
        nccl_settings_build(facts, &p, NULL, &s);
        _cleanup_free_ char *notes = strv_join(&s.notes, "|");
        ck_assert_msg(!strstr(notes, "no interface is up"), "%s", notes);
        ck_assert_msg(strstr(notes, "NCCL_SOCKET_IFNAME: not set: the interfaces that are up with an address are "
                                    "unknown (net.eth0.has_address: no /proc/net/if_inet6 or /proc/net/route"),
                      "%s", notes);
        nccl_settings_done(&s);
        profile_done(&p);
        /* with a route for eth0 the interface is known to have an address */
        tmptree_put("proc/net/route", "Iface\tDestination\nBOGUS\neth0\t0000000A\n", 0644);
        facts = facts_free(facts);
        root = root_free(root);
        ck_assert_int_eq(root_new(tmptree_path(), &root), 0);
        facts = facts_new(root);
        nccl_settings_build(facts, &p, NULL, &s);
        bool set = false;
        for (size_t i = 0; i < s.n; i++)
                set |= streq(s.v[i].key, "NCCL_SOCKET_IFNAME") && streq(s.v[i].value, "=eth0");
        ck_assert(set);
        nccl_settings_done(&s);
        facts = facts_free(facts);
        root = root_free(root);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(socket_ifname_unknown_addresses, .description = "socket ifname unknown addresses", .root = "tmptree");

/* A NIC and the interface stacked on it as the kernel shows them: the class link into the device's
 * directory, or under /sys/devices/virtual/net with lower_NAME links to what it runs over. */
static void netdev(const char *name, const char *parent, const char *lower, const char *route_hex)
{
        _cleanup_free_ char *dir = parent ? xasprintf("sys/devices/%s/net/%s", parent, name)
                                          : xasprintf("sys/devices/virtual/net/%s", name);
        _cleanup_free_ char *flags = xasprintf("%s/flags", dir), *op = xasprintf("%s/operstate", dir);
        tmptree_put(flags, "0x1003\n", 0644);
        tmptree_put(op, "up\n", 0644);
        _cleanup_free_ char *cls = xasprintf("sys/class/net/%s", name), *target = xasprintf("../../%s", dir + 4);
        tmptree_link(cls, target);
        if (parent) {
                _cleanup_free_ char *dev = xasprintf("%s/device", dir);
                tmptree_link(dev, "../../../0000:00:03.0");
        }
        if (lower) {
                _cleanup_free_ char *l = xasprintf("%s/lower_%s", dir, lower), *t = xasprintf("../%s", lower);
                tmptree_link(l, t);
        }
        if (route_hex) {
                _cleanup_free_ char *old = tmptree_get("proc/net/route");
                _cleanup_free_ char *next = xasprintf("%s%s\t%s\n", old ? old : "Iface\tDestination\n", name, route_hex);
                tmptree_put("proc/net/route", next, 0644);
        }
}

/* NCCL's socket transport uses every interface NCCL_SOCKET_IFNAME matches: only interfaces on
 * hardware are listed (a NIC, a bond or VLAN over one), never a container bridge of veths, an
 * overlay or a VPN tunnel, whatever they are named (issue 29 item 8). */
START_TEST(socket_ifname_hardware_only)
{
        tmptree_new("nccl");
        const char *pci = "pci0000:00/0000:00:03.0";
        netdev("eth0", pci, NULL, "0000000A");
        netdev("eth1", pci, NULL, NULL);          /* the bond's slave: no address of its own */
        netdev("bond0", NULL, "eth1", "0000140A");
        netdev("eth0.100", NULL, "eth0", "0000640A");
        netdev("veth1a2b", NULL, NULL, NULL);
        netdev("cni0", NULL, "veth1a2b", "0001F40A");
        netdev("flannel.1", NULL, NULL, "0000F40A");
        netdev("podman0", NULL, NULL, "0058A8C0");
        netdev("tailscale0", NULL, NULL, "0000FD64");
        netdev("mynet0", NULL, NULL, "0000C80A"); /* a tunnel with a name no list knows */
        facts = facts_free(facts);
        root = root_free(root);
        ck_assert_int_eq(root_new(tmptree_path(), &root), 0);
        facts = facts_new(root);
        const struct fact *hw = facts_get(facts, "net.bond0.hardware");
        ck_assert(hw && hw->status == FACT_OK && hw->b);
        ck_assert_str_eq(hw->source, "/sys/class/net/bond0/lower_eth1");
        hw = facts_get(facts, "net.cni0.hardware");
        ck_assert(hw && hw->status == FACT_OK && !hw->b);
        const struct fact *virt = facts_get(facts, "net.eth0.100.virtual");
        ck_assert(virt && virt->status == FACT_OK && virt->b);
        struct resolved p = profile_with("p", NULL);
        struct nccl_settings s;
        nccl_settings_build(facts, &p, NULL, &s);
        const struct nccl_setting *set = NULL;
        for (size_t i = 0; i < s.n; i++)
                if (streq(s.v[i].key, "NCCL_SOCKET_IFNAME"))
                        set = &s.v[i];
        ck_assert_ptr_nonnull(set);
        ck_assert_str_eq(set->value, "=bond0,eth0.100,eth0");
        ck_assert_msg(strstr(set->why, "init fails only on a node where none of the names matches") &&
                              !strstr(set->why, "a missing one fails init"),
                      "%s", set->why);
        nccl_settings_done(&s);
        profile_done(&p);
        facts = facts_free(facts);
        root = root_free(root);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(socket_ifname_hardware_only, .description = "socket ifname hardware only", .root = "tmptree");

/* The names rules/consistency.conf leaves out of the fleet's socket-ifname check are the names the
 * generator screens out of NCCL_SOCKET_IFNAME: one list of container, overlay and VPN interfaces. */
START_TEST(socket_ifname_screen_matches_consistency)
{
        const char *src = getenv("LLMTUNE_NCCL_CATALOG");
        ck_assert_ptr_nonnull(src);
        _cleanup_free_ char *dir = xstrndup(src, strrchr(src, '/') - src);
        _cleanup_free_ char *path = xasprintf("%s/consistency.conf", dir);
        FILE *fp = fopen(path, "re");
        ck_assert_msg(fp != NULL, "%s", path);
        char line[512];
        bool in = false, ignore = false;
        size_t seen = 0;
        while (fgets(line, sizeof(line), fp)) {
                if (line[0] == '[')
                        in = startswith(line, "[socket-ifname]");
                if (!in)
                        continue;
                if (line[0] != ' ' && line[0] != '\t')
                        ignore = startswith(line, "ignore");
                if (!ignore)
                        continue;
                for (char *p = strstr(line, "net."); p; p = strstr(p + 1, "net.")) {
                        size_t n = strcspn(p + 4, "*.,\n ");
                        _cleanup_free_ char *name = xasprintf("%.*s0", (int)n, p + 4);
                        if (streq(name, "lo0"))
                                strcpy(name, "lo");
                        ck_assert_msg(nccl_ifname_screened(name), "consistency.conf ignores %s, the generator lists it",
                                      name);
                        seen++;
                }
        }
        fclose(fp);
        ck_assert_uint_ge(seen, 10);
}
END_TEST
DEFINE_TEST(socket_ifname_screen_matches_consistency,
            .description = "socket ifname screen matches consistency", .root = "none");

/* A home that cannot be searched (a non-root audit of /root) hides whether ~/.nccl.conf exists:
 * that is not a problem in a file (14.2). As root the check runs in a child that drops to nobody. */
START_TEST(user_conf_unsearchable_home)
{
        tmptree_new("nccl");
        tmptree_mkdir("root");
        tmptree_mkdir("home/alice");
        ck_assert_int_eq(chmod(tmptree_path(), 0755), 0);
        _cleanup_free_ char *home = xasprintf("%s/root", tmptree_path());
        ck_assert_int_eq(chmod(home, geteuid() == 0 ? 0700 : 0), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
                        _exit(2);
                struct root *r = NULL;
                if (root_new(tmptree_path(), &r) < 0)
                        _exit(3);
                struct facts *f = facts_new(r);
                const struct fact *fc = facts_get(f, "nccl.user_conf.files");
                int bad = !fc || fc->status != FACT_ABSENT || !strstr(fc->reason, "/root/.nccl.conf") ||
                          !strstr(fc->reason, "not searchable");
                const struct fact *pr = facts_get(f, "nccl.user_conf.problems");
                bad |= (!pr || pr->status != FACT_OK || !streq(pr->str, "none")) << 1;
                if (bad)
                        fprintf(stderr, "files: %s / problems: %s\n", fc ? (fc->str ? fc->str : fc->reason) : "-",
                                pr ? (pr->str ? pr->str : pr->reason) : "-");
                facts_free(f);
                root_free(r);
                _exit(bad ? 10 + bad : 0);
        }
        int st = 0;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_int_eq(chmod(home, 0755), 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %d", st);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(user_conf_unsearchable_home, .description = "user conf unsearchable home", .root = "tmptree");

UNIT_MAIN(.name = "nccl", .setup = setup, .teardown = teardown)
