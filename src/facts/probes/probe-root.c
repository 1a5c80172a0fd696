/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * root.*: how the machine llmtune reads is read.
 *   root.confinement   how the libraries that read a foreign tree by host path (hwloc, libkmod)
 *                      are kept inside it (sandbox.h): landlock, chroot, or vet where neither can
 *                      be had; none for the live system, whose tree is the host
 */
#include "facts/facts.h"
#include "facts/probes/probes.h"
#include "base/sandbox.h"

static int root_run(struct facts *f)
{
        fact_str(f, "sandbox", confinement_name(sandbox_confinement(facts_root(f))), "root.confinement");
        return 0;
}

const struct probe probe_root = {
        .name = "root",
        .prefixes = {"root."},
        .run = root_run,
};
