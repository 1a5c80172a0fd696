/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main() for a unit test whose cases partly depend on this machine rather than on a tree (a NUMA
 * node whose CPUs are all allowed, permission to mknod). Check has no "skipped": a case that
 * returns early passes without testing anything. So such cases go into a suite of their own that
 * runs as a meson test of its own (NAME-live, the program run with the argument "live"), and that
 * test exits 77 (skipped) with the reason when the machine lacks what they need.
 *
 * BUILD(false) makes the suite of the tree-based cases, BUILD(true) the machine-dependent one;
 * LIVE_MISSING returns NULL when the machine has what the live cases need, else why not (freed
 * here). Returns the process exit status: 0, 1 (a case failed) or 77.
 */
#pragma once

#include <check.h>
#include <stdbool.h>

int unit_main(int argc, char **argv, Suite *(*build)(bool live), char *(*live_missing)(void));
