/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /etc/nccl.conf from the profile's [nccl] keys and what the hardware implies (NCCL 2.30.7
 * src/transport/net_ib/init.cc: HCAs and ports; src/os/linux.cc: interfaces). Everything written is
 * checked with the same linter `llmtune nccl lint` uses, so a generated file never holds a line
 * NCCL would misread.
 *
 * Generated comments avoid '=': NCCL before 2.26 has no comments and turns "# a=b" into a junk
 * variable named "# a" (harmless, but a comment should not define anything).
 */
#include "nccl/nccl-gen.h"

#include <errno.h>
#include <stdio.h>

#include "base/file-format.h"

/* Names that container runtimes, Kubernetes network plugins, libvirt and VPNs give their interfaces
 * (the names rules/consistency.conf leaves out of the fleet's socket-ifname check): never the
 * cluster network NCCL should bootstrap over. They are a second screen: what decides is that the
 * interface is on hardware (net.IF.hardware: a NIC, or a bond, VLAN or bridge over one); a veth
 * bridge, an overlay (VXLAN) or a tunnel is not, whatever its name. IPoIB (ib*) stays: NCCL itself
 * prefers it for its sockets (NCCL_SOCKET_IFNAME in the NCCL environment variables documentation).
 * Interfaces whose only addresses are link-local do not count either (net.*.has_address). */
static const char *const ifname_skip[] = {"lo",   "docker", "virbr", "veth",    "br-",       "cni",
                                          "flannel", "cali", "tun",  "tap",     "podman",    "tailscale",
                                          "wg",   "zt",     "vxlan", "cilium", "weave",     "kube-"};

bool nccl_ifname_screened(const char *ifname)
{
        for (size_t k = 0; k < ARRAY_SIZE(ifname_skip); k++)
                if (streq(ifname_skip[k], "lo") ? streq(ifname, "lo") : startswith(ifname, ifname_skip[k]))
                        return true;
        return false;
}

/* A site's transport switch (NCCL_P2P_DISABLE, NCCL_IB_DISABLE, NCCL_SHM_DISABLE; NCCL env.rst
 * "Debugging"): one that acts may be the workaround that keeps the machine's jobs running (consumer
 * GPUs whose peer-to-peer hangs, ACS in the way, a /dev/shm too small in a container), so it is
 * disabled only when the profile says so (nccl_debug_switches = remove). One that does nothing
 * (NCCL_P2P_DISABLE=0) is always disabled: it only misleads the reader. */
static bool switch_disabled(const char *line, bool remove_switches)
{
        const char *eq = strchr(line, '=');
        if (!eq)
                return false;
        _cleanup_free_ char *key = xstrndup(line, (size_t)(eq - line));
        return nccl_is_transport_switch(key) && (remove_switches || !nccl_switch_acts(key, eq + 1));
}

static bool profile_removes_switches(const struct resolved *profile)
{
        const char *p = profile ? resolved_param(profile, "nccl_debug_switches") : NULL;
        return p && streq(p, "remove");
}

/* GPUDirect RDMA tuning: meaningless unless NCCL can register GPU memory with the NIC. */
static bool is_gdr_key(const char *key) { return startswith(key, "NCCL_NET_GDR_"); }

void nccl_settings_done(struct nccl_settings *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].key);
                free(s->v[i].value);
                free(s->v[i].why);
        }
        free(s->v);
        strv_done(&s->notes);
        *s = (struct nccl_settings){0};
}

static const struct nccl_setting *settings_find(const struct nccl_settings *s, const char *key)
{
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->v[i].key, key))
                        return &s->v[i];
        return NULL;
}

static void settings_add(struct nccl_settings *s, const char *key, const char *value, char *why)
{
        s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
        s->v[s->n++] = (struct nccl_setting){xstrdup(key), xstrdup(value), why};
}

static bool fact_true(struct facts *f, const char *name)
{
        const struct fact *fc = facts_get(f, name);
        return fc && fc->status == FACT_OK && fc->type == FACT_BOOL && fc->b;
}

static const char *fact_text(struct facts *f, const char *name)
{
        const struct fact *fc = facts_get(f, name);
        return fc && fc->status == FACT_OK ? fc->str : NULL;
}

/* Middle part of a fact name: "ib.mlx5_0.port.1.state" with prefix "ib." and suffix ".state". */
static char *name_middle(const char *name, const char *prefix, const char *suffix)
{
        size_t pl = strlen(prefix), sl = strlen(suffix), nl = strlen(name);
        if (nl <= pl + sl)
                return NULL;
        return xstrndup(name + pl, nl - pl - sl);
}

/* NULL when NAME may be an item of a list value in nccl.conf, else the refusal (caller frees) naming
 * FROM, where the name came from: a device or interface name from the tree, a profile parameter. */
static char *item_refused(const char *what, const char *name, const char *from)
{
        const char *why = ff_check(FF_NCCL_CONF, FF_ITEM, name);
        return why ? ff_refusal(FF_NCCL_CONF, what, name, from, why) : NULL;
}

/* The HCAs NCCL may use for compute traffic: the profile's nccl_ib_hca list, or every HCA with a port
 * of role compute (probe-ib.c: paired with a GPU through the PCIe tree, else by NUMA node), whatever
 * the state of its ports now. */
static void compute_hcas(struct facts *f, const struct resolved *profile, struct strv *ret, bool *explicit_)
{
        const char *param = profile ? resolved_param(profile, "nccl_ib_hca") : NULL;
        *explicit_ = param && !streq(param, "auto");
        if (*explicit_) {
                _cleanup_free_ char *copy = xstrdup(param);
                char *save = NULL;
                for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
                        if (!strv_contains(ret, t))
                                strv_add(ret, t);
                return;
        }
        const struct fact **v;
        size_t n = facts_match(f, "ib.*.port.*.role", &v);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *mid = name_middle(v[i]->name, "ib.", ".role");
                char *dot = mid ? strstr(mid, ".port.") : NULL;
                if (!dot || v[i]->status != FACT_OK || !streq(v[i]->str, "compute"))
                        continue;
                *dot = '\0';
                if (!strv_contains(ret, mid))
                        strv_add(ret, mid);
        }
        free(v);
        strv_sort(ret);
}

/* The RDMA devices of the N link_layer facts V (InfiniBand or Ethernet ports) into ALL; false, with
 * a note, when a name cannot be an item of NCCL_IB_HCA: then no list is written at all, since a
 * compute HCA left out of it would reroute its traffic. */
static bool hca_names(const struct fact **v, size_t n, struct strv *all, struct nccl_settings *s)
{
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *mid = name_middle(v[i]->name, "ib.", ".link_layer");
                char *dot = mid ? strstr(mid, ".port.") : NULL;
                if (!dot || v[i]->status != FACT_OK || (!streq(v[i]->str, "InfiniBand") && !streq(v[i]->str, "Ethernet")))
                        continue;
                *dot = '\0';
                _cleanup_free_ char *refused = item_refused("the InfiniBand device name", mid, v[i]->source);
                if (refused) {
                        strv_push(&s->notes, xasprintf("NCCL_IB_HCA not written: %s", refused));
                        return false;
                }
                if (!strv_contains(all, mid))
                        strv_add(all, mid);
        }
        return true;
}

/* Every name of COMPUTE fits a list item (the profile's nccl_ib_hca or ib.*.port.*.role); false with
 * a note when one does not. */
static bool compute_names_fit(const struct strv *compute, bool explicit_, struct nccl_settings *s)
{
        for (size_t i = 0; i < compute->n; i++) {
                _cleanup_free_ char *refused = item_refused(explicit_ ? "the HCA" : "the local HCA", compute->v[i],
                                                            explicit_ ? "the profile's nccl_ib_hca" : "ib.*.port.*.role");
                if (refused) {
                        strv_push(&s->notes, xasprintf("NCCL_IB_HCA not written: %s", refused));
                        return false;
                }
        }
        return true;
}

/* NCCL_IB_HCA. Unset, NCCL uses every ACTIVE InfiniBand/RoCE port at each init (NCCL environment
 * variables documentation), which is right when every HCA carries compute traffic: then nothing is
 * written. It is written only to keep non-compute RDMA devices out (storage HCAs, and the NVLink switch
 * management bridges of an NVLink 5 board, role nvlink-mgmt), naming the compute HCAs (all
 * their ports, '=' for exact names: a bare mlx5_1 also selects mlx5_10..19), never "the ports that
 * happen to be ACTIVE now", which would drop a rail for good. While a compute port is not ACTIVE it
 * is not written at all (a note says which), as the list could not be checked. */
static void derive_ib_hca(struct facts *f, const struct resolved *profile, struct nccl_settings *s)
{
        _cleanup_free_ const struct fact **v = NULL;
        size_t n = facts_match(f, "ib.*.port.*.link_layer", &v);
        _cleanup_strv_ struct strv all = {0}, down = {0}, compute = {0};
        if (!hca_names(v, n, &all, s))
                return;
        if (!all.n) {
                strv_add(&s->notes, "NCCL_IB_HCA: no InfiniBand/RoCE adapter, so NCCL uses sockets");
                return;
        }
        bool explicit_;
        compute_hcas(f, profile, &compute, &explicit_);
        if (!compute_names_fit(&compute, explicit_, s))
                return;
        if (!compute.n) {
                strv_add(&s->notes, "NCCL_IB_HCA: no HCA is paired with a GPU (none behind a GPU's PCIe switch or on "
                                    "its NUMA node): left to NCCL's default (every active port); set nccl_ib_hca in "
                                    "the profile to choose");
                return;
        }
        if (!explicit_ && compute.n == all.n) {
                strv_push(&s->notes, xasprintf("NCCL_IB_HCA: not set, every one of the %zu HCAs is a compute HCA and "
                                               "NCCL's default uses every active port",
                                               all.n));
                return;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *mid = name_middle(v[i]->name, "ib.", ".link_layer");
                char *dot = mid ? strstr(mid, ".port.") : NULL;
                if (!dot)
                        continue;
                *dot = '\0';
                if (!strv_contains(&compute, mid))
                        continue;
                _cleanup_free_ char *sn = xasprintf("ib.%s.port.%s.state", mid, dot + strlen(".port."));
                const char *state = fact_text(f, sn);
                if (!state || !streq(state, "ACTIVE"))
                        strv_push(&down, xasprintf("%s:%s (%s)", mid, dot + strlen(".port."), state ? state : "unknown"));
        }
        for (size_t i = 0; i < compute.n; i++)
                if (!strv_contains(&all, compute.v[i]))
                        strv_push(&down, xasprintf("%s (no such RDMA device)", compute.v[i]));
        if (down.n) {
                _cleanup_free_ char *list = strv_join(&down, ", ");
                strv_push(&s->notes, xasprintf("NCCL_IB_HCA not written: compute port %s is not ACTIVE; bring it up "
                                               "(llmtune explain ib-port-active) and apply again",
                                               list));
                return;
        }
        if (compute.n > 32) {
                while (compute.n > 32)
                        free(compute.v[--compute.n]);
                compute.v[compute.n] = NULL;
        }
        _cleanup_free_ char *list = strv_join(&compute, ",");
        _cleanup_free_ char *value = xasprintf("=%s", list);
        settings_add(s, "NCCL_IB_HCA", value,
                     explicit_ ? xasprintf("the profile's compute HCAs (nccl_ib_hca), by exact name")
                               : xasprintf("the %zu of %zu HCAs paired with a GPU (behind its PCIe switch, or on its "
                                           "NUMA node where the tree does not pair them), by exact name and whatever "
                                           "their port state; the others (storage, NVLink switch management) are kept out",
                                           compute.n, all.n));
}

/* Why interface IFN does not carry the cluster network (NULL: it may): a screened name, a virtual
 * interface with no hardware below it, down, or without a routable address. *UNKNOWN gets the first
 * fact that could not be read. */
static const char *ifname_rejected(struct facts *f, const char *ifn, const struct fact *up, char **unknown)
{
        if (nccl_ifname_screened(ifn))
                return "screened";
        const char *names[] = {"hardware", "has_address"};
        const struct fact *fc[2] = {NULL, NULL};
        for (size_t k = 0; k < 2; k++) {
                _cleanup_free_ char *n = xasprintf("net.%s.%s", ifn, names[k]);
                fc[k] = facts_get(f, n);
        }
        const struct fact *order[] = {up, fc[0], fc[1]};
        for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
                const struct fact *x = order[k];
                if (x && x->status != FACT_OK) {
                        if (!*unknown)
                                *unknown = xasprintf("%s: %s", x->name, x->reason);
                        return "unknown";
                }
                if (!x || x->type != FACT_BOOL || !x->b)
                        return "no";
        }
        return NULL;
}

/* NCCL_SOCKET_IFNAME: interfaces on hardware that are up and have an address (NCCL wants IFF_RUNNING
 * and an address, src/os/linux.cc), minus loopback, container, overlay, VPN and libvirt ones. NCCL's
 * socket transport uses every interface the list matches (up to 16), so a listed overlay would carry
 * job traffic; a listed name that is missing on a node costs nothing as long as another one matches. */
static void derive_socket_ifname(struct facts *f, struct nccl_settings *s)
{
        const struct fact **v;
        size_t n = facts_match(f, "net.*.up", &v);
        _cleanup_strv_ struct strv ifs = {0};
        _cleanup_free_ char *unknown = NULL; /* why an interface's state or addresses are unknown */
        const struct fact *cnt = facts_get(f, "net.count");
        if (cnt && cnt->status != FACT_OK)
                unknown = xasprintf("net.count: %s", cnt->reason);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ifn = name_middle(v[i]->name, "net.", ".up");
                if (!ifn || ifname_rejected(f, ifn, v[i], &unknown))
                        continue;
                _cleanup_free_ char *refused = item_refused("the interface name", ifn, v[i]->source);
                if (refused)
                        strv_push(&s->notes, xasprintf("NCCL_SOCKET_IFNAME: left out: %s", refused));
                else
                        strv_add(&ifs, ifn);
        }
        free(v);
        if (!ifs.n && unknown) {
                /* Not "no interface": the interfaces or their addresses could not be read. */
                strv_push(&s->notes, xasprintf("NCCL_SOCKET_IFNAME: not set: the interfaces that are up with an "
                                               "address are unknown (%s)",
                                               unknown));
                return;
        }
        if (!ifs.n) {
                strv_add(&s->notes, "NCCL_SOCKET_IFNAME: no interface on hardware is up with a routable address "
                                    "(loopback, container, overlay, VPN and link-local-only interfaces do not count)");
                return;
        }
        _cleanup_free_ char *list = strv_join(&ifs, ",");
        _cleanup_free_ char *value = xasprintf("=%s", list);
        settings_add(s, "NCCL_SOCKET_IFNAME", value,
                     xasprintf("interfaces on hardware (a NIC, or a bond, VLAN or bridge over one) that are up with a "
                               "routable address, by exact name; container, overlay, VPN and link-local-only ones are "
                               "left out, since NCCL uses every listed interface it finds; init fails only on a node "
                               "where none of the names matches"));
}

/* GPUDirect RDMA works when NCCL can register GPU memory with the NIC: through DMA-BUF (open kernel
 * module, Linux 5.12+, NCCL_DMABUF_ENABLE=1 by default) or a peer-memory module (nvidia_peermem, the
 * legacy nv_peer_mem); gpudirect.mode says which (probe-service.c). */
static bool gdr_available(struct facts *f)
{
        const char *mode = fact_text(f, "gpudirect.mode");
        return (mode && (streq(mode, "dmabuf") || streq(mode, "peermem"))) ||
               fact_true(f, "module.nvidia_peermem.loaded") || fact_true(f, "module.nv_peer_mem.loaded");
}

/* What the linter says about one KEY=VALUE line on its own; NULL when nothing. */
static char *lint_one(const struct nccl_catalog *c, const char *key, const char *value, bool *debug, bool *fatal)
{
        *debug = *fatal = false;
        if (!c)
                return NULL;
        _cleanup_free_ char *line = xasprintf("%s=%s\n", key, value);
        struct nccl_lint l;
        nccl_lint_text(c, line, strlen(line), &l);
        char *msg = NULL;
        for (size_t i = 0; i < l.n_findings; i++) {
                enum nccl_problem p = l.findings[i].problem;
                if (p == NP_DEBUG)
                        *debug = true;
                else if (nccl_problem_is_error(p))
                        *fatal = true;
                if (!msg && nccl_problem_is_error(p))
                        msg = xstrdup(l.findings[i].message);
        }
        /* A warning the profile's value still earns (deprecated, a debugging setting, advice) goes into
         * the comment: the profile asked for it, the reader should know. */
        for (size_t i = 0; !msg && i < l.n_findings; i++)
                if (l.findings[i].problem != NP_DEBUG)
                        msg = xstrdup(l.findings[i].message);
        nccl_lint_done(&l);
        return msg;
}

/* NULL when KEY=VALUE fits a line of nccl.conf, else the refusal naming FROM (caller frees). */
static char *setting_refused(const char *key, const char *value, const char *from)
{
        const char *why = ff_check(FF_NCCL_CONF, FF_KEY, key);
        if (why)
                return ff_refusal(FF_NCCL_CONF, "the key", key, from, why);
        why = ff_check(FF_NCCL_CONF, FF_VALUE, value);
        return why ? ff_refusal(FF_NCCL_CONF, "the value", value, from, why) : NULL;
}

static const char *profile_reason(const struct resolved *profile, const char *key)
{
        _cleanup_free_ char *rk = xasprintf("%s.reason", key);
        for (size_t i = 0; i < profile->nccl.n; i++)
                if (streq(profile->nccl.v[i].key, rk) && *profile->nccl.v[i].value)
                        return profile->nccl.v[i].value;
        return NULL;
}

static void take_profile(struct facts *f, const struct resolved *profile, const struct nccl_catalog *c,
                         struct nccl_settings *s)
{
        bool gdr = gdr_available(f);
        for (size_t i = 0; i < profile->nccl.n; i++) {
                const struct setting *st = &profile->nccl.v[i];
                if (strchr(st->key, '.'))
                        continue; /* KEY.reason: a note on KEY, not a setting */
                _cleanup_free_ char *from = xasprintf("profile %s", profile->name);
                _cleanup_free_ char *bad = setting_refused(st->key, st->value, from);
                if (bad) {
                        strv_push(&s->notes, xasprintf("%s not written: %s", st->key, bad));
                        continue;
                }
                bool debug, fatal;
                _cleanup_free_ char *msg = lint_one(c, st->key, st->value, &debug, &fatal);
                if (fatal) {
                        strv_push(&s->notes, xasprintf("%s from profile %s not written: %s", st->key, profile->name, msg));
                        continue;
                }
                const char *reason = debug ? profile_reason(profile, st->key) : NULL;
                if (debug && !reason) {
                        strv_push(&s->notes, xasprintf("%s from profile %s not written: a debugging switch needs a "
                                                       "reason (%s.reason in the profile's [nccl])",
                                                       st->key, profile->name, st->key));
                        continue;
                }
                if (is_gdr_key(st->key) && !gdr) {
                        strv_push(&s->notes, xasprintf("%s from profile %s not written: no GPUDirect RDMA here "
                                                       "(neither DMA-BUF nor nvidia_peermem), so it would do nothing",
                                                       st->key, profile->name));
                        continue;
                }
                char *why = reason ? xasprintf("profile %s, a debugging switch: %s", profile->name, reason)
                            : msg  ? xasprintf("profile %s (%s)", profile->name, msg)
                                   : xasprintf("profile %s", profile->name);
                settings_add(s, st->key, st->value, why);
        }
}

/* The NCCL variables the profile's parameters set (profile_nccl_params: NCCL_IB_TC, NCCL_IB_SL,
 * NCCL_IB_GID_INDEX). They are the site's (its switches' QoS, the GID its fabric routes on), so the
 * parameter's declared type is their check, not the linter's advice: NCCL_IB_GID_INDEX named by the
 * profile is the site's decision. A key the profile's [nccl] section sets too keeps that value. */
static void take_params(const struct resolved *profile, struct nccl_settings *s)
{
        for (size_t i = 0; i < profile_nccl_params_n; i++) {
                const struct profile_nccl_param *p = &profile_nccl_params[i];
                const char *v = resolved_param(profile, p->param);
                if (!v || streq(v, "any"))
                        continue;
                const struct nccl_setting *have = settings_find(s, p->key);
                if (have) {
                        if (!streq(have->value, v))
                                strv_push(&s->notes, xasprintf("%s: the profile's [nccl] value is used, not its "
                                                               "parameter %s (%s)",
                                                               p->key, p->param, v));
                        continue;
                }
                settings_add(s, p->key, v,
                             xasprintf("profile %s, parameter %s: the site's value, which the host cannot show", profile->name,
                                       p->param));
        }
}

static bool facts_match_any_ib(struct facts *f)
{
        const struct fact *c = facts_get(f, "ib.count");
        return c && c->status == FACT_OK && c->mag > 0;
}

void nccl_settings_build(struct facts *f, const struct resolved *profile, const struct nccl_catalog *c,
                         struct nccl_settings *ret)
{
        struct nccl_settings s = {0}, hw = {0};
        if (profile) {
                take_profile(f, profile, c, &s);
                take_params(profile, &s);
        }
        derive_ib_hca(f, profile, &hw);
        const char *sif = profile ? resolved_param(profile, "nccl_socket_ifname") : NULL;
        if (sif && streq(sif, "none"))
                /* a single-node machine needs no network: a pinned NIC that is down would fail init */
                strv_add(&hw.notes, "NCCL_SOCKET_IFNAME: not pinned (profile: nccl_socket_ifname = none, a single-node "
                                    "machine)");
        else
                derive_socket_ifname(f, &hw);
        if (gdr_available(f))
                strv_add(&hw.notes, "GPUDirect RDMA: available (DMA-BUF or a peer-memory module); NCCL_NET_GDR_LEVEL is "
                                    "left at NCCL's default (P2C, as NCCL_NET_GDR_C2C defaults to 1; PXB without it), "
                                    "raise it only after measuring");
        else if (facts_match_any_ib(f))
                strv_add(&hw.notes, "GPUDirect RDMA: not available (neither DMA-BUF nor nvidia_peermem), so NCCL stages "
                                    "network traffic through host memory (the open kernel modules on Linux 5.12+, or "
                                    "nvidia-peermem with MLNX_OFED)");
        /* The profile's value of a key wins over the hardware's. */
        for (size_t i = 0; i < hw.n; i++) {
                if (settings_find(&s, hw.v[i].key)) {
                        strv_push(&s.notes, xasprintf("%s: the profile's value is used instead of the hardware's (%s)",
                                                      hw.v[i].key, hw.v[i].value));
                        continue;
                }
                settings_add(&s, hw.v[i].key, hw.v[i].value, hw.v[i].why);
                hw.v[i].why = NULL;
        }
        for (size_t i = 0; i < hw.notes.n; i++)
                strv_add(&s.notes, hw.notes.v[i]);
        nccl_settings_done(&hw);
        *ret = s;
}

int nccl_conf_paths(struct root *r, struct strv *ret)
{
        strv_add(ret, "/root/.nccl.conf");
        _cleanup_strv_ struct strv homes = {0};
        int rc = root_list(r, "/home", &homes);
        for (size_t i = 0; i < homes.n; i++)
                strv_push(ret, xasprintf("/home/%s/.nccl.conf", homes.v[i]));
        strv_add(ret, "/etc/nccl.conf");
        return rc < 0 && !root_gone(rc) ? rc : 0;
}

/* --- the file ------------------------------------------------------------------------------ */

static void lines_split(const char *text, struct strv *ret)
{
        if (!text)
                return;
        for (const char *p = text; *p;) {
                size_t n = strcspn(p, "\n");
                char *line = xstrndup(p, n);
                /* NCCL 2.30 strips a trailing \r, older versions keep it in the value: store LF. */
                size_t l = strlen(line);
                if (l && line[l - 1] == '\r')
                        line[l - 1] = '\0';
                strv_push(ret, line);
                p += n + (p[n] == '\n');
        }
}

/* The site's lines: everything outside complete managed blocks, minus the one blank line the
 * renderer puts after a block. A BEGIN without its END (before the next BEGIN) is not a block:
 * nothing of the site's is ever dropped. */
static void site_lines(const struct strv *all, struct strv *ret)
{
        for (size_t i = 0; i < all->n; i++) {
                if (streq(all->v[i], NCCL_GEN_BEGIN)) {
                        size_t j = i + 1;
                        while (j < all->n && !streq(all->v[j], NCCL_GEN_END) && !streq(all->v[j], NCCL_GEN_BEGIN))
                                j++;
                        if (j < all->n && streq(all->v[j], NCCL_GEN_END)) {
                                i = j;
                                if (i + 1 < all->n && !*all->v[i + 1])
                                        i++;
                                continue;
                        }
                }
                strv_add(ret, all->v[i]);
        }
}

/* The key of a line NCCL reads as written, or NULL (comment, blank, no '='). */
static char *line_key(const char *line)
{
        if (line[0] == '#')
                return NULL;
        const char *eq = strchr(line, '=');
        return eq ? xstrndup(line, (size_t)(eq - line)) : NULL;
}

/* Comment out what NCCL would misread, what does nothing, debugging switches, later duplicates and
 * keys the managed block sets. A line that passes stays as it is, so the transform is stable. */
static void site_transform(struct strv *site, const struct nccl_settings *s, const struct nccl_catalog *c,
                           bool remove_switches)
{
        _cleanup_strv_ struct strv kept = {0};
        for (size_t i = 0; i < site->n; i++) {
                char *line = site->v[i];
                if (!*line || line[0] == '#')
                        continue;
                bool bad = false;
                if (c) {
                        struct nccl_lint l;
                        nccl_lint_text(c, line, strlen(line), &l);
                        /* Deprecated keys too: they still act, but the replacement is the key to
                         * set (in the profile). Advisory findings (a debugging setting such as
                         * NCCL_ALGO, a GID index, HCA prefixes) do not disable a line: it acts as
                         * written and may be the site's deliberate workaround; the audit reports it.
                         * Transport switches are decided by switch_disabled(). */
                        for (size_t k = 0; k < l.n_findings && !bad; k++)
                                bad = !nccl_problem_is_advisory(l.findings[k].problem) &&
                                      l.findings[k].problem != NP_DEBUG;
                        nccl_lint_done(&l);
                }
                _cleanup_free_ char *key = line_key(line);
                if (!key) /* whitespace only: NCCL skips it too */
                        bad = strspn(line, " \t") != strlen(line);
                else if (settings_find(s, key) || strv_contains(&kept, key) || switch_disabled(line, remove_switches))
                        bad = true;
                if (bad) {
                        site->v[i] = xasprintf(NCCL_GEN_DISABLED "%s", line);
                        free(line);
                } else if (key)
                        strv_add(&kept, key);
        }
}

/* Why each disabled line is disabled, from the transformed lines alone (so re-rendering agrees). */
static void disabled_notes(const struct strv *site, const struct nccl_settings *s, const struct nccl_catalog *c,
                           bool remove_switches, struct strv *ret)
{
        _cleanup_strv_ struct strv kept = {0};
        for (size_t i = 0; i < site->n; i++) {
                const char *line = site->v[i];
                if (!startswith(line, NCCL_GEN_DISABLED)) {
                        _cleanup_free_ char *key = line_key(line);
                        if (key)
                                strv_add(&kept, key);
                        continue;
                }
                const char *orig = line + strlen(NCCL_GEN_DISABLED);
                char *msg = NULL;
                if (c) {
                        struct nccl_lint l;
                        nccl_lint_text(c, orig, strlen(orig), &l);
                        for (size_t k = 0; k < l.n_findings && !msg; k++)
                                if (!nccl_problem_is_advisory(l.findings[k].problem) &&
                                    l.findings[k].problem != NP_DEBUG)
                                        msg = xstrdup(l.findings[k].message);
                        nccl_lint_done(&l);
                }
                _cleanup_free_ char *key = line_key(orig);
                if (msg)
                        ;
                else if (key && settings_find(s, key))
                        msg = xasprintf("%s is set in this block", key);
                else if (key && strv_contains(&kept, key))
                        msg = xasprintf("%s is defined earlier in the file (the first definition wins)", key);
                else if (key && switch_disabled(orig, false))
                        msg = xasprintf("%s set to %s does nothing (only %s acts)", key, strchr(orig, '=') + 1,
                                        streq(key, "NCCL_IB_DISABLE") ? "a non-zero integer" : "1");
                else if (key && remove_switches && nccl_is_transport_switch(key))
                        msg = xasprintf("%s is a debugging switch and the profile removes them (its "
                                        "nccl_debug_switches is remove)",
                                        key);
                else
                        msg = xasprintf("%s", *orig ? orig : "(blank)");
                strv_push(ret, xasprintf("disabled below: %s", msg));
                free(msg);
        }
}

/* "# [KEY: ]TEXT" as one line, whatever TEXT holds (a name from the tree in a note). */
static void add_comment(struct sbuf *b, const char *key, const char *text)
{
        _cleanup_free_ char *line = ff_comment(FF_NCCL_CONF, text);
        sbuf_addf(b, "# %s%s%s\n", key ? key : "", key ? ": " : "", line);
}

char *nccl_conf_render(struct facts *f, const struct resolved *profile, const struct nccl_catalog *c,
                       const char *existing)
{
        struct nccl_settings s;
        nccl_settings_build(f, profile, c, &s);
        _cleanup_strv_ struct strv all = {0}, site = {0}, disabled = {0};
        lines_split(existing, &all);
        site_lines(&all, &site);
        bool remove_switches = profile_removes_switches(profile);
        site_transform(&site, &s, c, remove_switches);
        disabled_notes(&site, &s, c, remove_switches, &disabled);

        struct sbuf b = {0};
        _cleanup_free_ char *pname = ff_comment(FF_NCCL_CONF, profile ? profile->name : "");
        sbuf_add(&b, NCCL_GEN_BEGIN "\n");
        sbuf_addf(&b, "# Written by llmtune from %s%s and this machine's hardware: change the profile, not\n"
                      "# this block (llmtune apply rewrites it). NCCL reads KEY and VALUE literally and the first\n"
                      "# definition of a key wins, so this block comes first and the site's own lines follow it.\n",
                  profile ? "profile " : "no profile", pname);
        for (size_t i = 0; i < s.n; i++) {
                /* Whatever made a setting, it is written only as one KEY=VALUE line. */
                _cleanup_free_ char *bad = setting_refused(s.v[i].key, s.v[i].value, s.v[i].why);
                if (bad) {
                        strv_push(&s.notes, xasprintf("not written: %s", bad));
                        continue;
                }
                if (s.v[i].why)
                        add_comment(&b, s.v[i].key, s.v[i].why);
                sbuf_addf(&b, "%s=%s\n", s.v[i].key, s.v[i].value);
        }
        for (size_t i = 0; i < s.notes.n; i++)
                add_comment(&b, NULL, s.notes.v[i]);
        for (size_t i = 0; i < disabled.n; i++)
                add_comment(&b, NULL, disabled.v[i]);
        sbuf_add(&b, NCCL_GEN_END "\n");
        if (site.n) {
                sbuf_add(&b, "\n");
                for (size_t i = 0; i < site.n; i++)
                        sbuf_addf(&b, "%s\n", site.v[i]);
        }
        nccl_settings_done(&s);
        return sbuf_steal(&b);
}

/* POSIX shell single quotes: everything literal, a quote as '\''. */
static void add_quoted(struct sbuf *b, const char *v)
{
        sbuf_add(b, "'");
        for (const char *p = v; *p; p++)
                if (*p == '\'')
                        sbuf_add(b, "'\\''");
                else
                        sbuf_addn(b, p, 1);
        sbuf_add(b, "'");
}

char *nccl_env_render(const struct nccl_settings *s)
{
        struct sbuf b = {0};
        sbuf_add(&b, "# NCCL settings for a job script (the same as llmtune writes to /etc/nccl.conf).\n");
        for (size_t i = 0; i < s->n; i++) {
                /* The same settings as the file: only what fits a line of it (a job script that
                 * sources this reads the same values NCCL would read from the file). */
                _cleanup_free_ char *bad = setting_refused(s->v[i].key, s->v[i].value, s->v[i].why);
                if (bad) {
                        add_comment(&b, NULL, bad);
                        continue;
                }
                if (s->v[i].why)
                        add_comment(&b, s->v[i].key, s->v[i].why);
                sbuf_addf(&b, "export %s=", s->v[i].key);
                add_quoted(&b, s->v[i].value);
                sbuf_add(&b, "\n");
        }
        for (size_t i = 0; i < s->notes.n; i++)
                add_comment(&b, NULL, s->notes.v[i]);
        if (!b.len)
                sbuf_add(&b, "");
        return sbuf_steal(&b);
}
