/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writers against names from a tree (src/base/file-format.c). The input is up to four
 * NUL-separated parts: an InfiniBand device name, a network interface name, the site's nccl.conf
 * text, and a value. The first two become the facts of a made-up machine (a compute HCA beside a
 * storage HCA, an interface on hardware that is up with an address) from which /etc/nccl.conf and
 * `nccl env` are rendered; the value goes through every format's every field. What must hold,
 * else the target aborts:
 *
 *   - the rendered nccl.conf, read back as NCCL reads it (nccl_read below), defines only
 *     NCCL_IB_HCA and NCCL_SOCKET_IFNAME in llmtune's block, each exactly as "=NAME" with a name
 *     that the nccl.conf check takes; every line after the block is a line of the site's text, as
 *     it was or behind the disabled marker; `nccl env` has only comments and export lines;
 *   - a value nccl.conf takes as a value is read back as exactly that value of its key; a value
 *     gpu-affinity.conf takes as an address parses back as that address of one GPU;
 *   - a comment made to fit (ff_comment) and a refusal (ff_refusal) are one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts/readers/affinity.h"
#include "config.h"
#include "facts/facts.h"
#include "base/file-format.h"
#include "fuzz.h"
#include "nccl/nccl-gen.h"
#include "nccl/nccl-lint.h"
#include "base/root.h"

static struct nccl_catalog cat;
static struct root *root;

/* Abort (what libFuzzer reports) when COND fails, saying which check of this file it was. */
static void must_at(bool cond, int line)
{
        if (!cond) {
                fprintf(stderr, "fuzz-writers: the check at line %d failed\n", line);
                abort();
        }
}
#define must(cond) must_at(cond, __LINE__)

/* Part K of the input (NUL-separated), or DEFLT. */
static char *part(const char *text, size_t size, int k, const char *deflt)
{
        const char *p = text, *end = text + size;
        for (int i = 0; i < k && p < end; i++) {
                const char *nul = memchr(p, '\0', (size_t)(end - p));
                p = nul ? nul + 1 : end;
        }
        if (p >= end)
                return xstrdup(deflt);
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        return xstrndup(p, nul ? (size_t)(nul - p) : (size_t)(end - p));
}

/* A machine with HCAs DEV (compute, paired with GPU 0) and "storage0", and the interface IFN. */
static struct facts *machine(const char *dev, const char *ifn)
{
        struct facts *f = facts_new(root);
        fact_uint(f, "fuzz", 2, "ib.count");
        const char *hcas[] = {dev, "storage0"}, *roles[] = {"compute", "storage"};
        for (size_t i = 0; i < 2; i++) {
                fact_str(f, "fuzz", "InfiniBand", "ib.%s.port.1.link_layer", hcas[i]);
                fact_str(f, "fuzz", "ACTIVE", "ib.%s.port.1.state", hcas[i]);
                fact_str(f, "fuzz", roles[i], "ib.%s.port.1.role", hcas[i]);
        }
        fact_str(f, "fuzz", "10de", "gpu.0.vendor_id");
        fact_uint(f, "fuzz", 1, "net.count");
        fact_bool(f, "fuzz", true, "net.%s.up", ifn);
        fact_bool(f, "fuzz", true, "net.%s.hardware", ifn);
        fact_bool(f, "fuzz", true, "net.%s.has_address", ifn);
        facts_seal(f);
        return f;
}

/* Is LINE one of the site's lines (as written, or disabled behind the marker; its CR line end
 * dropped, as NCCL 2.30 drops it)? */
static bool site_line(const char *existing, const char *line)
{
        size_t n = strlen(line);
        for (const char *p = existing; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (len && p[len - 1] == '\r')
                        len--;
                if ((len == n && strncmp(p, line, n) == 0) ||
                    (startswith(line, NCCL_GEN_DISABLED) && len == n - strlen(NCCL_GEN_DISABLED) &&
                     strncmp(p, line + strlen(NCCL_GEN_DISABLED), len) == 0))
                        return true;
                p = nl ? nl + 1 : NULL;
        }
        return false;
}

/* TEXT read as NCCL 2.30 reads a config file (src/misc/param.cc): a line whose first character is
 * '#' is skipped, a line without '=' too; otherwise the key is what comes before the first '=' and
 * the value the rest of the line, a trailing CR dropped, nothing trimmed. Calls SEE per definition. */
static void nccl_read(const char *text, size_t len, void (*see)(const char *key, const char *value, void *data),
                      void *data)
{
        for (size_t pos = 0; pos < len;) {
                const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
                size_t n = nl ? (size_t)(nl - s) : len - pos;
                pos += n + (nl ? 1 : 0);
                char *line = xstrndup(s, n);
                size_t l = strlen(line);
                if (l && line[l - 1] == '\r')
                        line[l - 1] = '\0';
                char *eq = strchr(line, '=');
                if (line[0] != '#' && eq) {
                        *eq = '\0';
                        see(line, eq + 1, data);
                }
                free(line);
        }
}

/* In llmtune's block: only the two keys the hardware gives, each "=NAME" with a name that fits. */
static void block_entry(const char *key, const char *value, void *data)
{
        (void)data;
        must(streq(key, "NCCL_IB_HCA") || streq(key, "NCCL_SOCKET_IFNAME"));
        must(value[0] == '=' && !ff_check(FF_NCCL_CONF, FF_ITEM, value + 1));
}

struct expect {
        const char *value;
        int seen;
};

static void value_entry(const char *key, const char *value, void *data)
{
        struct expect *e = data;
        must(streq(key, "NCCL_FUZZ") && streq(value, e->value));
        e->seen++;
}

static void check_conf(struct facts *f, const char *existing)
{
        char *out = nccl_conf_render(f, NULL, &cat, existing);
        must(startswith(out, NCCL_GEN_BEGIN "\n"));
        char *end = strstr(out, "\n" NCCL_GEN_END "\n");
        must(end != NULL);
        nccl_read(out, (size_t)(end - out) + 1, block_entry, NULL);
        for (char *line = end + strlen("\n" NCCL_GEN_END "\n"), *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                must(nl != NULL);
                *nl = '\0';
                must(!*line || site_line(existing, line));
        }
        free(out);
        struct nccl_settings s;
        nccl_settings_build(f, NULL, &cat, &s);
        char *env = nccl_env_render(&s);
        for (char *line = env, *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                must(nl != NULL);
                must(line[0] == '#' || startswith(line, "export NCCL_IB_HCA='=") ||
                     startswith(line, "export NCCL_SOCKET_IFNAME='="));
        }
        free(env);
        nccl_settings_done(&s);
}

/* VALUE through every format's fields; what is taken must read back as itself. */
static void check_value(const char *value)
{
        for (int fmt = 0; fmt < FF__COUNT; fmt++) {
                char *c = ff_comment(fmt, value);
                must(!ff_check(fmt, FF_COMMENT, c));
                free(c);
                for (int field = FF_KEY; field <= FF_FILENAME; field++)
                        (void)ff_check(fmt, field, value);
        }
        char *msg = ff_refusal(FF_NCCL_CONF, "the value", value, value, "why");
        must(!strchr(msg, '\n') && !strchr(msg, '\r'));
        free(msg);
        if (!ff_check(FF_NCCL_CONF, FF_VALUE, value)) {
                char *line = xasprintf("NCCL_FUZZ=%s\n", value);
                struct expect e = {.value = value};
                nccl_read(line, strlen(line), value_entry, &e);
                must(e.seen == 1);
                free(line);
        }
        if (!ff_check(FF_GPU_AFFINITY, FF_ADDRESS, value)) {
                char *text = xasprintf("0 %s 0 0-3 0-3 0-3\n", value), *err = NULL;
                struct affinity_map m;
                must(affinity_conf_parse(text, &m, &err) == 0 && m.n == 1 && streq(m.v[0].address, value));
                affinity_map_done(&m);
                free(text);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!root) {
                nccl_catalog_load(LLMTUNE_SRCDIR "/rules/nccl-catalog.tsv", &cat);
                if (root_new(fuzz_tmpdir(), &root) < 0)
                        abort();
        }
        const char *text = (const char *)data;
        char *dev = part(text, size, 0, "mlx5_0"), *ifn = part(text, size, 1, "eth0"),
             *existing = part(text, size, 2, ""), *value = part(text, size, 3, "");
        /* fnmatch's metacharacters in a fact name would make a pattern of it, not a name */
        if (*dev && *ifn && !strpbrk(dev, "*?[\\") && !strpbrk(ifn, "*?[\\") && !streq(dev, "storage0")) {
                struct facts *f = machine(dev, ifn);
                check_conf(f, existing);
                facts_free(f);
        }
        check_value(value);
        free(dev);
        free(ifn);
        free(existing);
        free(value);
        return 0;
}
