/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune affinity: every GPU's NUMA node and CPU sets, in the gpu-affinity.conf format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "facts/readers/affinity.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "base/parse.h"

static int affinity_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"gpu", required_argument, NULL, 'g'},
                {"policy", required_argument, NULL, 'p'},
                {"installed", no_argument, NULL, 'i'},
                {},
        };
        long gpu = -1;
        bool installed = false, policy_given = false;
        enum affinity_policy policy = AFFINITY_NODE;
        int c;
        while ((c = getopt_long(argc, argv, "g:p:i", opts, NULL)) != -1) {
                uint64_t v;
                switch (c) {
                case 'g':
                        if (parse_u64(optarg, &v) < 0 || v > 65535)
                                return cli_error("--gpu needs a number, not '%s'", optarg);
                        gpu = (long)v;
                        break;
                case 'p':
                        if (affinity_policy_parse(optarg, &policy) < 0)
                                return cli_error("--policy: node, share or share-nosmt, not '%s'", optarg);
                        policy_given = true;
                        break;
                case 'i': installed = true; break;
                default: return cli_usage_error("affinity");
                }
        }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune affinity --help)", argv[optind]);
        if (policy_given && gpu < 0)
                return cli_error("--policy selects the set printed with --gpu N");
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;

        _cleanup_(affinity_map_done) struct affinity_map m = {0};
        _cleanup_free_ char *err = NULL;
        _cleanup_(facts_freep) struct facts *f = NULL;
        if (installed) {
                const char *data;
                size_t len;
                int r = root_read(root, AFFINITY_CONF, &data, &len);
                if (r < 0)
                        return cli_error("%s: %s", AFFINITY_CONF, strerror(-r));
                if (memchr(data, '\0', len))
                        return cli_error("%s: holds a NUL byte", AFFINITY_CONF);
                if (affinity_conf_parse(data, &m, &err) < 0)
                        return cli_error("%s: %s", AFFINITY_CONF, err);
        } else {
                f = cli_facts_new(cli);
                if (affinity_compute(f, &m, &err) < 0)
                        return cli_error("%s", err);
        }
        if (gpu < 0) {
                _cleanup_free_ char *s = affinity_map_render(&m);
                fputs(s, stdout);
                return EXIT_OK;
        }
        if ((size_t)gpu >= m.n)
                return cli_error("there is no GPU %ld (%zu NVIDIA GPUs)", gpu, m.n);
        if (!m.v[gpu].set[policy].n)
                return cli_error("GPU %ld: no %s set: %s", gpu, affinity_policy_name(policy),
                                 m.v[gpu].why ? m.v[gpu].why : "unknown locality");
        _cleanup_free_ char *l = format_cpulist(m.v[gpu].set[policy].cpus, m.v[gpu].set[policy].n);
        printf("%s\n", l);
        return EXIT_OK;
}

const struct command cmd_affinity = {
        .name = "affinity",
        .summary = "print each GPU's NUMA node and CPU sets (gpu-affinity.conf format)",
        .usage = "Usage: llmtune [--root DIR] affinity [--installed] [--gpu N [--policy P]]\n"
                 "\n"
                 "Print, for every NVIDIA GPU, its NUMA node and the CPU sets of the binding policies, in the\n"
                 "format of /etc/llmtune/gpu-affinity.conf (which `llmtune apply` writes for other launchers):\n"
                 "\n"
                 "    # comment lines start with '#'\n"
                 "    GPU ADDRESS NUMA_NODE NODE_CPUS SHARE_CPUS SHARE_NOSMT_CPUS\n"
                 "    0 0000:07:00.0 3 48-63,176-191 48-55,176-183 48-55\n"
                 "\n"
                 "GPU is CUDA's index with CUDA_DEVICE_ORDER=PCI_BUS_ID (PCI bus order). CPU sets are kernel\n"
                 "CPU lists, \"-\" when unknown (NUMA_NODE -1: the firmware does not say) or impossible (fewer\n"
                 "cores on the node than GPUs). NODE_CPUS: every CPU of the node; SHARE_CPUS: an exclusive\n"
                 "equal share of the node's cores per GPU on the node (the k-th GPU of the node in PCI order\n"
                 "takes the k-th share of its cores, leftover cores belong to no GPU), with SMT siblings;\n"
                 "SHARE_NOSMT_CPUS: the lowest-numbered thread of each core of that share.\n"
                 "\n"
                 "  -g, --gpu N        print only GPU N's CPU list (for taskset -c / numactl -C)\n"
                 "  -p, --policy P     with --gpu: node (default), share or share-nosmt\n"
                 "  -i, --installed    read and check ROOT/etc/llmtune/gpu-affinity.conf instead of\n"
                 "                     computing the sets from the hardware\n"
                 "\n"
                 "Exit status: 0, or 1 when there is no GPU, no such GPU or set, or the file is invalid.\n",
        .run = affinity_cmd,
};
