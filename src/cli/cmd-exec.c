/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune exec: run a command bound to the CPUs and memory of a GPU's NUMA node (numa(7), NVIDIA
 * DeepLearningExamples gpu_affinity.py). The binding is sched_setaffinity(2) plus set_mempolicy(2),
 * both inherited across execve(2), so the command and everything it starts stay on the node.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "affinity.h"
#include "cli-data.h"
#include "commands.h"
#include "parse.h"

/* The local rank of a launcher: torchrun sets LOCAL_RANK, srun SLURM_LOCALID (torchrun under srun
 * sets both, and its LOCAL_RANK is the one that names the GPU). */
static int local_rank(unsigned *ret, const char **from)
{
        static const char *const vars[] = {"LOCAL_RANK", "SLURM_LOCALID"};
        for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
                const char *v = getenv(vars[i]);
                if (!v || !*v)
                        continue;
                uint64_t n;
                *from = vars[i];
                if (parse_u64(v, &n) < 0 || n > 65535)
                        return cli_error("%s=%s is not a local rank", vars[i], v);
                *ret = (unsigned)n;
                return 0;
        }
        return cli_error("--local-rank: neither LOCAL_RANK (torchrun) nor SLURM_LOCALID (srun) is set");
}

/* A local rank names the rank-th visible GPU; with CUDA_VISIBLE_DEVICES that is an entry of the list,
 * which must then be a plain index to be mapped to PCI order (UUIDs and MIG names are not). */
static int rank_to_gpu(unsigned rank, unsigned *ret)
{
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
        if (!cvd || !*cvd) {
                *ret = rank;
                return 0;
        }
        _cleanup_free_ char *copy = xstrdup(cvd);
        unsigned i = 0;
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++) {
                if (i != rank)
                        continue;
                uint64_t n;
                if (parse_u64(tok, &n) < 0 || n > 65535)
                        return cli_error("CUDA_VISIBLE_DEVICES=%s: entry %u (%s) is not a GPU index; use --gpu N",
                                         cvd, rank, tok);
                *ret = (unsigned)n;
                return 0;
        }
        return cli_error("local rank %u but CUDA_VISIBLE_DEVICES=%s lists only %u GPUs", rank, cvd, i);
}

static void describe(FILE *out, const char *what, const struct cpuset_list *s, int node, enum affinity_policy p,
                     enum affinity_mem mem)
{
        _cleanup_free_ char *l = format_cpulist(s->cpus, s->n);
        static const char *const memw[] = {"bound to", "preferred on", "not bound (left to"};
        fprintf(out, "%s: CPUs %s (%s), memory %s NUMA node %d%s\n", what, l, affinity_policy_name(p), memw[mem],
                node, mem == AFFINITY_MEM_NONE ? ")" : "");
}

static int exec_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"gpu", required_argument, NULL, 'g'},
                {"local-rank", no_argument, NULL, 'l'},
                {"node", required_argument, NULL, 'N'},
                {"policy", required_argument, NULL, 'p'},
                {"mem", required_argument, NULL, 'm'},
                {"strict", no_argument, NULL, 's'},
                {"dry-run", no_argument, NULL, 'n'},
                {"verbose", no_argument, NULL, 'v'},
                {},
        };
        long gpu = -1, node = -1;
        bool by_rank = false, strict = false, dry = false, verbose = false;
        enum affinity_policy policy = AFFINITY_NODE;
        enum affinity_mem mem = AFFINITY_MEM_BIND;
        int c;
        /* '+': stop at the command, whose options are its own. */
        while ((c = getopt_long(argc, argv, "+g:lN:p:m:snv", opts, NULL)) != -1) {
                uint64_t v;
                switch (c) {
                case 'g':
                case 'N':
                        if (parse_u64(optarg, &v) < 0 || v > 65535)
                                return cli_error("--%s needs a number, not '%s'", c == 'g' ? "gpu" : "node", optarg);
                        *(c == 'g' ? &gpu : &node) = (long)v;
                        break;
                case 'l': by_rank = true; break;
                case 'p':
                        if (affinity_policy_parse(optarg, &policy) < 0)
                                return cli_error("--policy: node, share or share-nosmt, not '%s'", optarg);
                        break;
                case 'm':
                        if (streq(optarg, "bind"))
                                mem = AFFINITY_MEM_BIND;
                        else if (streq(optarg, "preferred"))
                                mem = AFFINITY_MEM_PREFERRED;
                        else if (streq(optarg, "none"))
                                mem = AFFINITY_MEM_NONE;
                        else
                                return cli_error("--mem: bind, preferred or none, not '%s'", optarg);
                        break;
                case 's': strict = true; break;
                case 'n': dry = true; break;
                case 'v': verbose = true; break;
                default: return cli_usage_error("exec");
                }
        }
        if ((gpu >= 0) + by_rank + (node >= 0) != 1)
                return cli_error("exec needs exactly one of --gpu N, --local-rank, --node N (see llmtune exec --help)");
        if (node >= 0 && policy != AFFINITY_NODE)
                return cli_error("--node binds to the whole node; --policy %s needs a GPU", affinity_policy_name(policy));
        if (optind >= argc)
                return cli_error("exec needs a command after the options (llmtune exec --gpu 0 -- CMD...)");
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        bool foreign = !root_is_live(root);
        if (by_rank) {
                unsigned rank = 0, g = 0;
                const char *from = NULL;
                if (local_rank(&rank, &from) != 0 || rank_to_gpu(rank, &g) != 0)
                        return EXIT_ERROR;
                gpu = g;
        }

        struct facts *f = cli_facts_new(cli);
        int rc = EXIT_OK;
        _cleanup_free_ char *what = NULL;
        struct cpuset_list set = {0};
        _cleanup_free_ unsigned *owned = NULL;
        int bind_node = -1;
        const char *unbound_why = NULL;
        _cleanup_free_ char *why_buf = NULL;
        struct affinity_map m = {0};
        if (gpu >= 0) {
                char *err = NULL;
                if (affinity_compute(f, &m, &err) < 0) {
                        why_buf = err;
                        unbound_why = why_buf;
                } else if ((size_t)gpu >= m.n) {
                        why_buf = xasprintf("there is no GPU %ld (%zu NVIDIA GPUs)", gpu, m.n);
                        unbound_why = why_buf;
                } else {
                        const struct gpu_affinity *g = &m.v[gpu];
                        what = xasprintf("GPU %ld (%s)", gpu, g->address);
                        set = g->set[policy];
                        bind_node = g->numa_node;
                        if (!set.n) {
                                why_buf = xasprintf("%s: %s", what, g->why ? g->why : "no CPU set");
                                unbound_why = why_buf;
                        }
                }
        } else {
                what = xasprintf("NUMA node %ld", node);
                _cleanup_free_ char *name = xasprintf("numa.node.%ld.cpus", node);
                const struct fact *fc = facts_get(f, name);
                int n = fc && fc->status == FACT_OK && *fc->str ? parse_cpulist(fc->str, &owned) : -ENOENT;
                if (n <= 0) {
                        why_buf = xasprintf("NUMA node %ld has no CPUs here (%s)", node, name);
                        unbound_why = why_buf;
                } else {
                        set = (struct cpuset_list){owned, (size_t)n};
                        bind_node = (int)node;
                }
        }

        if (unbound_why && strict) {
                rc = cli_error("%s (--strict: not running the command)", unbound_why);
                goto out;
        }
        if (foreign || dry) {
                /* Under --root the tree is not this machine: binding to its CPUs would be meaningless,
                 * so print what would be done and do not run anything. */
                if (unbound_why)
                        printf("%s: would run unbound\n", unbound_why);
                else
                        describe(stdout, what, &set, bind_node, policy, mem);
                printf("would run:");
                for (int i = optind; i < argc; i++)
                        printf(" %s", argv[i]);
                printf("\n");
                goto out;
        }
        if (unbound_why)
                fprintf(stderr, "llmtune: %s: running unbound\n", unbound_why);
        else {
                /* Memory first: a failed CPU binding can then be undone by resetting the policy. */
                int r = affinity_bind_memory(bind_node, mem);
                if (r == 0) {
                        r = affinity_bind_cpus(&set);
                        if (r < 0)
                                affinity_reset_memory();
                }
                if (r < 0) {
                        if (strict) {
                                rc = cli_error("%s: cannot bind: %s", what, strerror(-r));
                                goto out;
                        }
                        fprintf(stderr, "llmtune: %s: cannot bind (%s): running unbound\n", what, strerror(-r));
                } else if (verbose)
                        describe(stderr, what, &set, bind_node, policy, mem);
        }
        affinity_map_free(&m);
        facts_free(f);
        fflush(NULL);
        execvp(argv[optind], argv + optind);
        int e = errno;
        cli_error("cannot run %s: %s", argv[optind], strerror(e));
        /* The shell's convention (and env(1)'s): 127 not found, 126 found but not runnable. */
        return e == ENOENT ? 127 : 126;
out:
        affinity_map_free(&m);
        facts_free(f);
        return rc;
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
                 "                       SLURM_LOCALID (srun); when CUDA_VISIBLE_DEVICES lists GPU indexes,\n"
                 "                       the rank-th entry of that list\n"
                 "  -N, --node N         bind to NUMA node N itself (no GPU; data loaders, NIC daemons)\n"
                 "  -p, --policy P       node: every CPU of the node (default; ranks on a node share them)\n"
                 "                       share: an exclusive equal share of the node's cores per GPU on\n"
                 "                       the node, with SMT siblings (no two ranks on one core)\n"
                 "                       share-nosmt: the same cores, one hardware thread each\n"
                 "  -m, --mem M          bind (default: allocate on the node only), preferred (the node\n"
                 "                       first), none (leave the memory policy alone)\n"
                 "  -s, --strict         fail instead of running unbound when the locality is unknown\n"
                 "                       (numa_node -1), there is no such GPU, or binding fails\n"
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
