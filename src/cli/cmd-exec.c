/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune exec: run a command bound to the CPUs and memory of a GPU's NUMA node (numa(7), NVIDIA
 * DeepLearningExamples gpu_affinity.py). The binding is sched_setaffinity(2) plus set_mempolicy(2),
 * both inherited across execve(2), so the command and everything it starts stay on the node.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "facts/readers/affinity.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "base/parse.h"

/* What exec was asked for (the options), and the command's position in argv. */
struct exec_opts {
        long gpu, node;
        bool by_rank, strict, dry, verbose;
        enum affinity_policy policy;
        enum affinity_mem mem;
        const char *profile;
        int cmd; /* index of CMD in argv */
};

/* The binding worked out from the facts: a CPU set and a node, or why there is none. */
struct binding {
        char *what;         /* "GPU 2 (0000:47:00.0)", "NUMA node 3" */
        struct cpuset_list set;
        unsigned *owned;    /* set.cpus when this struct owns them (--node) */
        int node;           /* -1: none */
        char *unbound_why;  /* why it runs unbound, else NULL */
};

static void binding_done(struct binding *b)
{
        free(b->what);
        free(b->owned);
        free(b->unbound_why);
}

/* The local rank of a launcher: torchrun sets LOCAL_RANK, srun SLURM_LOCALID (torchrun under srun
 * sets both, and its LOCAL_RANK is the one that names the GPU). */
static int local_rank(unsigned *ret)
{
        static const char *const vars[] = {"LOCAL_RANK", "SLURM_LOCALID"};
        for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
                const char *v = getenv(vars[i]);
                if (!v || !*v)
                        continue;
                uint64_t n;
                if (parse_u64(v, &n) < 0 || n > 65535)
                        return cli_error("%s=%s is not a local rank", vars[i], v);
                *ret = (unsigned)n;
                return 0;
        }
        return cli_error("--local-rank: neither LOCAL_RANK (torchrun) nor SLURM_LOCALID (srun) is set");
}

/* The PCI-order index of the GPU whose UUID starts with UUID (CUDA takes a unique prefix), through
 * nvml.N.uuid and nvml.N.address (the driver's view, from NVML or an nvidia-smi capture). Returns 0,
 * or -1 with *why. */
static int uuid_to_gpu(struct facts *f, const struct affinity_map *m, const char *uuid, unsigned *ret, char **why)
{
        const struct fact **v;
        size_t n = facts_match(f, "nvml.*.uuid", &v);
        const char *addr = NULL, *unknown = NULL;
        unsigned hits = 0;
        for (size_t i = 0; i < n; i++) {
                if (v[i]->status != FACT_OK) {
                        unknown = v[i]->reason;
                        continue;
                }
                if (strncasecmp(v[i]->str, uuid, strlen(uuid)) != 0)
                        continue;
                _cleanup_free_ char *an = xasprintf("%.*s.address", (int)(strlen(v[i]->name) - strlen(".uuid")),
                                                    v[i]->name);
                const struct fact *a = facts_get(f, an);
                addr = a && a->status == FACT_OK ? a->str : NULL;
                hits++;
        }
        free(v);
        if (hits > 1) {
                *why = xasprintf("%s names %u GPUs (a prefix of several UUIDs)", uuid, hits);
                return -1;
        }
        for (size_t i = 0; hits == 1 && addr && i < m->n; i++)
                if (streq(m->v[i].address, addr)) {
                        *ret = (unsigned)i;
                        return 0;
                }
        if (hits == 1)
                *why = xasprintf("%s is the GPU at %s, which is not among the NVIDIA GPUs on PCI", uuid,
                                 addr ? addr : "an unknown address");
        else if (n == 0 || unknown) {
                const struct fact *c = facts_get(f, "nvml.count");
                *why = xasprintf("the GPUs' UUIDs are unknown here (%s), so %s cannot be mapped to a GPU",
                                 unknown ? unknown : c && c->reason ? c->reason : "no nvml.N.uuid fact", uuid);
        } else
                *why = xasprintf("no GPU has the UUID %s", uuid);
        return -1;
}

/* One entry of CUDA_VISIBLE_DEVICES as a PCI-order index: a plain index, a GPU UUID ("GPU-..."), or
 * a MIG device in the R470 form "MIG-GPU-UUID/GI/CI" (its GPU's UUID). The newer "MIG-UUID" names a
 * MIG instance whose UUID no fact holds: it cannot be mapped. Returns 0, or -1 with *why. */
static int visible_entry_to_gpu(struct facts *f, const struct affinity_map *m, const char *tok, unsigned *ret,
                                char **why)
{
        uint64_t n;
        if (parse_u64(tok, &n) == 0 && n <= 65535) {
                *ret = (unsigned)n;
                return 0;
        }
        if (startswith(tok, "GPU-"))
                return uuid_to_gpu(f, m, tok, ret, why);
        if (startswith(tok, "MIG-GPU-")) {
                _cleanup_free_ char *uuid = xstrndup(tok + 4, strcspn(tok + 4, "/"));
                return uuid_to_gpu(f, m, uuid, ret, why);
        }
        if (startswith(tok, "MIG-"))
                *why = xasprintf("%s is a MIG instance; its GPU cannot be told from the facts (nvidia-smi -L shows it)",
                                 tok);
        else
                *why = xasprintf("'%s' is neither a GPU index nor a GPU or MIG UUID", tok);
        return -1;
}

/* A local rank names the rank-th visible GPU: with CUDA_VISIBLE_DEVICES, the rank-th entry of that
 * list mapped to PCI order. Returns 0, or -1 with *why (the command then runs unbound). */
static int rank_to_gpu(struct facts *f, const struct affinity_map *m, unsigned rank, unsigned *ret, char **why)
{
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        if (!cvd || !*cvd) {
                *ret = rank;
                return 0;
        }
        _cleanup_free_ char *copy = xstrdup(cvd);
        unsigned i = 0;
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++)
                if (i == rank) {
                        _cleanup_free_ char *inner = NULL;
                        if (visible_entry_to_gpu(f, m, tok, ret, &inner) == 0)
                                return 0;
                        *why = xasprintf("CUDA_VISIBLE_DEVICES entry %u: %s", rank, inner);
                        return -1;
                }
        *why = xasprintf("local rank %u but CUDA_VISIBLE_DEVICES=%s lists only %u GPUs", rank, cvd, i);
        return -1;
}

static void bind_gpu(const struct affinity_map *m, long gpu, enum affinity_policy policy, struct binding *b)
{
        if ((size_t)gpu >= m->n) {
                b->unbound_why = xasprintf("there is no GPU %ld (%zu NVIDIA GPUs)", gpu, m->n);
                return;
        }
        const struct gpu_affinity *g = &m->v[gpu];
        b->what = xasprintf("GPU %ld (%s)", gpu, g->address);
        b->set = g->set[policy];
        b->node = g->numa_node;
        if (!b->set.n)
                b->unbound_why = xasprintf("%s: %s", b->what, g->why ? g->why : "no CPU set");
}

static void bind_node(struct facts *f, long node, struct binding *b)
{
        b->what = xasprintf("NUMA node %ld", node);
        _cleanup_free_ char *name = xasprintf("numa.node.%ld.cpus", node);
        const struct fact *fc = facts_get(f, name);
        int n = fc && fc->status == FACT_OK && *fc->str ? parse_cpulist(fc->str, &b->owned) : -ENOENT;
        if (n <= 0) {
                b->unbound_why = xasprintf("NUMA node %ld has no CPUs here (%s)", node, name);
                return;
        }
        b->set = (struct cpuset_list){b->owned, (size_t)n};
        b->node = (int)node;
}

/* Work out the binding of O from the facts (the GPU map is filled for GPU bindings). */
static int resolve_binding(struct facts *f, const struct exec_opts *o, struct affinity_map *m, struct binding *b)
{
        *b = (struct binding){.node = -1};
        if (o->node >= 0) {
                bind_node(f, o->node, b);
                return 0;
        }
        unsigned rank = 0, gpu = (unsigned)o->gpu;
        if (o->by_rank && local_rank(&rank) != 0)
                return EXIT_ERROR;
        char *err = NULL;
        if (affinity_compute(f, m, &err) < 0) {
                b->unbound_why = err;
                return 0;
        }
        if (o->by_rank && rank_to_gpu(f, m, rank, &gpu, &b->unbound_why) < 0)
                return 0;
        bind_gpu(m, gpu, o->policy, b);
        return 0;
}

/* The profile's ram_per_gpu (host RAM per GPU its systems ship with), 0 when unknown or "any". */
static uint64_t profile_ram_per_gpu(struct cli *cli, struct facts *f, const char *wanted, char **name)
{
        _cleanup_(rule_env_done) struct rule_env env = {0};
        uint64_t v = 0;
        if (cli_load_profile(cli, &env, wanted, f) != EXIT_OK)
                return 0;
        const char *p = resolved_param(&env.profile, "ram_per_gpu");
        if (!p || parse_size(p, 0, &v) < 0)
                return 0;
        *name = xstrdup(env.profile.name);
        return v;
}

/* The NUMA nodes that hold the machine's CPU memory: kind "cpu" with memory (a GPU's own memory
 * exposed as a node, or a CPU-less memory node, is not where a rank's pages go by default). 0 when
 * unknown. */
static unsigned cpu_memory_nodes(struct facts *f)
{
        const struct fact **v;
        size_t n = facts_match(f, "numa.node.*.kind", &v);
        unsigned nodes = 0;
        for (size_t i = 0; i < n; i++) {
                if (v[i]->status != FACT_OK || !streq(v[i]->str, "cpu")) {
                        if (v[i]->status != FACT_OK)
                                nodes = 0, i = n;
                        continue;
                }
                _cleanup_free_ char *mn = xasprintf("%.*smem_total", (int)(strlen(v[i]->name) - strlen("kind")), v[i]->name);
                const struct fact *m = facts_get(f, mn);
                nodes += m && m->status == FACT_OK && m->type == FACT_INT && !m->neg && m->mag > 0;
        }
        free(v);
        return nodes;
}

/*
 * A node short of memory. The profile's ram_per_gpu is the machine's: ram_per_gpu x GPUs in all,
 * spread over the NUMA nodes that hold CPU memory. A node's share is that total over those nodes, so
 * a stock NPS4 DGX A100 (8 nodes of 128 GiB, 2 GPUs on 4 of them) holds its share on every node,
 * while a node missing a DIMM does not. --mem bind also limits a rank to the node's memory per GPU,
 * which is said when that is below ram_per_gpu itself (what a rank of that system expects to get).
 */
static void memory_warning(struct cli *cli, struct facts *f, const struct exec_opts *o, const struct affinity_map *m,
                           const struct binding *b)
{
        if (b->unbound_why || b->node < 0 || o->node >= 0 || o->mem == AFFINITY_MEM_NONE)
                return;
        unsigned gpus = 0;
        for (size_t i = 0; i < m->n; i++)
                gpus += m->v[i].numa_node == b->node;
        _cleanup_free_ char *mn = xasprintf("numa.node.%d.mem_total", b->node);
        const struct fact *mem = facts_get(f, mn);
        unsigned nodes = cpu_memory_nodes(f);
        if (!gpus || !m->n || !nodes || !mem || mem->status != FACT_OK || mem->type != FACT_INT || mem->neg)
                return;
        _cleanup_free_ char *profile = NULL;
        uint64_t want = profile_ram_per_gpu(cli, f, o->profile, &profile);
        if (!want)
                return;
        uint64_t share = want * m->n / nodes, per_gpu = mem->mag / gpus;
        if (mem->mag < share)
                fprintf(stderr,
                        "llmtune: warning: NUMA node %d holds %" PRIu64 " MiB, less than its share of profile %s's "
                        "memory (ram_per_gpu %" PRIu64 " MiB x %zu GPUs over %u NUMA nodes = %" PRIu64 " MiB): a "
                        "missing or failed DIMM on that node? Allocations beyond it go to other nodes\n",
                        b->node, mem->mag >> 20, profile, want >> 20, m->n, nodes, share >> 20);
        if (o->mem == AFFINITY_MEM_BIND && per_gpu < want)
                fprintf(stderr,
                        "llmtune: warning: with --mem bind a rank gets NUMA node %d's %" PRIu64 " MiB for its %u GPUs, "
                        "%" PRIu64 " MiB per GPU, less than profile %s's ram_per_gpu (%" PRIu64 " MiB): a rank that "
                        "needs more is OOM-killed; --mem preferred (the default) spills to other nodes\n",
                        b->node, mem->mag >> 20, gpus, per_gpu >> 20, profile, want >> 20);
}

static void describe(FILE *out, const struct binding *b, enum affinity_policy p, enum affinity_mem mem)
{
        _cleanup_free_ char *l = format_cpulist(b->set.cpus, b->set.n);
        static const char *const memw[] = {"bound to", "preferred on", "not bound (left to"};
        fprintf(out, "%s: CPUs %s (%s), memory %s NUMA node %d%s\n", b->what, l, affinity_policy_name(p), memw[mem],
                b->node, mem == AFFINITY_MEM_NONE ? ")" : "");
}

static int parse_opts(int argc, char **argv, struct exec_opts *o)
{
        static const struct option opts[] = {
                {"gpu", required_argument, NULL, 'g'},
                {"local-rank", no_argument, NULL, 'l'},
                {"node", required_argument, NULL, 'N'},
                {"policy", required_argument, NULL, 'p'},
                {"mem", required_argument, NULL, 'm'},
                {"profile", required_argument, NULL, 'P'},
                {"strict", no_argument, NULL, 's'},
                {"dry-run", no_argument, NULL, 'n'},
                {"verbose", no_argument, NULL, 'v'},
                {},
        };
        static const char *const mems[] = {[AFFINITY_MEM_BIND] = "bind", [AFFINITY_MEM_PREFERRED] = "preferred",
                                           [AFFINITY_MEM_NONE] = "none"};
        /* preferred by default: with two GPUs per NUMA node a strict bind gives each rank half the
         * node's memory, and the kernel OOM-kills before it would allocate elsewhere (numa(7)). */
        *o = (struct exec_opts){.gpu = -1, .node = -1, .policy = AFFINITY_NODE, .mem = AFFINITY_MEM_PREFERRED};
        int c;
        /* '+': stop at the command, whose options are its own. */
        while ((c = getopt_long(argc, argv, "+g:lN:p:m:P:snv", opts, NULL)) != -1) {
                uint64_t v;
                switch (c) {
                case 'g':
                case 'N':
                        if (parse_u64(optarg, &v) < 0 || v > 65535)
                                return cli_error("--%s needs a number, not '%s'", c == 'g' ? "gpu" : "node", optarg);
                        *(c == 'g' ? &o->gpu : &o->node) = (long)v;
                        break;
                case 'l': o->by_rank = true; break;
                case 'p':
                        if (affinity_policy_parse(optarg, &o->policy) < 0)
                                return cli_error("--policy: node, share or share-nosmt, not '%s'", optarg);
                        break;
                case 'm': {
                        size_t i = 0;
                        while (i < ARRAY_SIZE(mems) && !streq(optarg, mems[i]))
                                i++;
                        if (i == ARRAY_SIZE(mems))
                                return cli_error("--mem: bind, preferred or none, not '%s'", optarg);
                        o->mem = (enum affinity_mem)i;
                        break;
                }
                case 'P': o->profile = optarg; break;
                case 's': o->strict = true; break;
                case 'n': o->dry = true; break;
                case 'v': o->verbose = true; break;
                default: return cli_usage_error("exec");
                }
        }
        if ((o->gpu >= 0) + o->by_rank + (o->node >= 0) != 1)
                return cli_error("exec needs exactly one of --gpu N, --local-rank, --node N (see llmtune exec --help)");
        if (o->node >= 0 && o->policy != AFFINITY_NODE)
                return cli_error("--node binds to the whole node; --policy %s needs a GPU", affinity_policy_name(o->policy));
        if (optind >= argc)
                return cli_error("exec needs a command after the options (llmtune exec --gpu 0 -- CMD...)");
        o->cmd = optind;
        return EXIT_OK;
}

/* Under --root (or --dry-run): what would be done; the tree is not this machine. */
static void print_plan(const struct exec_opts *o, const struct binding *b, int argc, char **argv)
{
        if (b->unbound_why)
                printf("%s: would run unbound\n", b->unbound_why);
        else
                describe(stdout, b, o->policy, o->mem);
        printf("would run:");
        for (int i = o->cmd; i < argc; i++)
                printf(" %s", argv[i]);
        printf("\n");
}

/* Bind this process (memory first: a failed CPU binding can then be undone by resetting the
 * policy). Returns EXIT_OK, or EXIT_ERROR under --strict when binding fails. */
static int apply_binding(const struct exec_opts *o, const struct binding *b)
{
        if (b->unbound_why) {
                fprintf(stderr, "llmtune: %s: running unbound\n", b->unbound_why);
                return EXIT_OK;
        }
        int r = affinity_bind_memory(b->node, o->mem);
        if (r == 0) {
                r = affinity_bind_cpus(&b->set);
                if (r < 0)
                        affinity_reset_memory();
        }
        if (r < 0 && o->strict)
                return cli_error("%s: cannot bind: %s", b->what, strerror(-r));
        if (r < 0)
                fprintf(stderr, "llmtune: %s: cannot bind (%s): running unbound\n", b->what, strerror(-r));
        else if (o->verbose)
                describe(stderr, b, o->policy, o->mem);
        return EXIT_OK;
}

static int exec_cmd(struct cli *cli, int argc, char **argv)
{
        struct exec_opts o;
        int rc = parse_opts(argc, argv, &o);
        if (rc != EXIT_OK)
                return rc;
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        struct facts *f = cli_facts_new(cli);
        struct affinity_map m = {0};
        struct binding b;
        rc = resolve_binding(f, &o, &m, &b);
        if (rc == EXIT_OK && b.unbound_why && o.strict)
                rc = cli_error("%s (--strict: not running the command)", b.unbound_why);
        if (rc == EXIT_OK)
                memory_warning(cli, f, &o, &m, &b);
        bool run = rc == EXIT_OK && root_is_live(root) && !o.dry;
        if (rc == EXIT_OK && !run)
                print_plan(&o, &b, argc, argv);
        if (run)
                rc = apply_binding(&o, &b);
        binding_done(&b);
        affinity_map_done(&m);
        facts_free(f);
        if (!run || rc != EXIT_OK)
                return rc;
        fflush(NULL);
        execvp(argv[o.cmd], argv + o.cmd);
        int e = errno;
        cli_error("cannot run %s: %s", argv[o.cmd], strerror(e));
        /* The shell's convention (and env(1)'s): 127 not found, 126 found but not runnable. */
        return e == ENOENT ? 127 : 126;
}

const struct command cmd_exec = {
        .name = "exec",
        .summary = "run a command bound to a GPU's NUMA node (CPUs and memory)",
        .usage = "Usage: llmtune exec (--gpu N | --local-rank | --node N) [OPTIONS] -- CMD [ARG...]\n"
                 "\n"
                 "Run CMD with its CPUs and memory bound to the NUMA node of GPU N. The binding is inherited\n"
                 "by everything CMD starts. With torchrun:\n"
                 "    torchrun --nproc-per-node 8 --no-python llmtune exec --local-rank -- python train.py\n"
                 "\n"
                 "GPU numbering follows PCI bus order, the same as CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
                 "(set it in the job too, so that cuda:N and --gpu N name the same GPU).\n"
                 "\n"
                 "  -g, --gpu N          bind to GPU N's NUMA node (N counts NVIDIA GPUs in PCI bus order,\n"
                 "                       regardless of CUDA_VISIBLE_DEVICES)\n"
                 "  -l, --local-rank     the GPU is the local rank from LOCAL_RANK (torchrun) or else\n"
                 "                       SLURM_LOCALID (srun); with CUDA_VISIBLE_DEVICES, the rank-th entry\n"
                 "                       of that list: an index, a GPU UUID (GPU-..., or a unique prefix) or\n"
                 "                       an R470 MIG name (MIG-GPU-UUID/GI/CI), mapped through the GPUs'\n"
                 "                       UUIDs (nvml.N.uuid); a name that cannot be mapped (MIG-UUID, UUIDs\n"
                 "                       unknown) runs CMD unbound, saying why, unless --strict\n"
                 "  -N, --node N         bind to NUMA node N itself (no GPU; data loaders, NIC daemons)\n"
                 "  -p, --policy P       node: every CPU of the node (default; ranks on a node share them)\n"
                 "                       share: an exclusive equal share of the node's cores per GPU on\n"
                 "                       the node, with SMT siblings (no two ranks on one core)\n"
                 "                       share-nosmt: the same cores, one hardware thread each\n"
                 "  -m, --mem M          preferred (default: the node first, other nodes when it is full),\n"
                 "                       bind (the node only: with two GPUs per node each rank has half\n"
                 "                       the node's memory, and the kernel OOM-kills before it falls back),\n"
                 "                       none (leave the memory policy alone)\n"
                 "      --profile P      the profile whose ram_per_gpu x GPUs, over the NUMA nodes that hold\n"
                 "                       CPU memory, is the node's share (a warning on stderr when it holds\n"
                 "                       less; with --mem bind also when its memory per GPU is below\n"
                 "                       ram_per_gpu); default: pinned or detected\n"
                 "  -s, --strict         fail instead of running unbound when the locality is unknown\n"
                 "                       (numa_node -1), there is no such GPU, a CUDA_VISIBLE_DEVICES entry\n"
                 "                       cannot be mapped, or binding fails\n"
                 "  -n, --dry-run        print the binding and the command, run nothing\n"
                 "  -v, --verbose        print the binding on stderr before running CMD\n"
                 "\n"
                 "When a GPU's locality is unknown (its PCI numa_node is -1) exec says so on stderr and runs\n"
                 "CMD unbound, unless --strict. `llmtune affinity` prints every GPU's sets.\n"
                 "Under --root DIR the tree is not this machine: exec prints what it would bind and runs\n"
                 "nothing.\n"
                 "\n"
                 "Exit status: CMD's own (exec replaces llmtune); 1 usage error or, with --strict, no binding;\n"
                 "126 CMD cannot be run; 127 CMD not found.\n",
        .run = exec_cmd,
};
