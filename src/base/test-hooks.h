/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TEST HOOKS. Environment variables that make llmtune fail or stop at a chosen point, so the test
 * suite can show that faults and crashes never leave a machine half-changed (docs/RELIABILITY.md).
 * They are compiled only into the test programs: llmtune-test (the same objects as llmtune, linked
 * with the hooks on), the unit tests and the fuzz targets. The llmtune that is installed links the
 * copy without them, whatever the build options, and ignores every LLMTUNE_TEST_* variable
 * (LLMTUNE_TEST_POINTS appends to any path it is given; LLMTUNE_TEST_KILL_AT kills an apply).
 *
 *   LLMTUNE_TEST_FAULT=TARGET:ERRNO[,TARGET:ERRNO...]   changing TARGET fails with ERRNO (ENOSPC,
 *       EROFS, EACCES, EIO, EPERM, ...); TARGET is a path, swap device, mount point or command.
 *   LLMTUNE_TEST_FAIL_WRITE=TARGET                      the same with ENOSPC (older spelling).
 *   LLMTUNE_TEST_KILL_AT=N    raise SIGKILL at the Nth crash point of an apply or rollback
 *   LLMTUNE_TEST_STOP_AT=N    raise SIGSTOP there instead (the test sends SIGCONT)
 *   LLMTUNE_TEST_POINTS=FILE  append one line per crash point reached ("N what target")
 *   LLMTUNE_TEST_CONFINEMENT=chroot|vet  confine the libraries that read a tree by host path with
 *       a fallback of sandbox.h, as on a kernel without Landlock (weaker only, never stronger)
 *
 * Crash points are the moments between logging a change's intent and logging its outcome: right
 * after the intent record, inside a file replacement between writing the temporary file and
 * renaming it over the target, and after the change is made but before its outcome is logged;
 * and right after an outcome is logged ("outcome-logged"), between two changes of a run (or
 * between its last change and its run-end record).
 */
#pragma once

/* The injected error for changing TARGET (-errno), or 0. */
int test_fault(const char *target);

/* A crash point: WHAT names the step, TARGET the change (for LLMTUNE_TEST_POINTS). */
void test_point(const char *what, const char *target);

/* Crash points inside file replacement count only while a change is being carried out (not for
 * the change log's own backups). */
void test_points_in_action(int on);
int test_points_active(void);

/* LLMTUNE_TEST_CONFINEMENT ("chroot", "vet"), or NULL. */
const char *test_confinement(void);
