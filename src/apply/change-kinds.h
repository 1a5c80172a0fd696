/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kinds of change apply carries out: the one table, a line each, in the order `plan` shows
 * them. X(ENUM, MODULE) is the kind CHANGE_ENUM of enum change_type (plan.h), whose module
 * src/apply/change-MODULE.c defines `const struct change_kind change_kind_MODULE` (change-kind.h):
 * its name, plan section, confinement, how it is made, undone, read back, compared and shown.
 * src/meson.build builds the modules this table names, so a new kind is its module and its line.
 * Only the X(...) lines of the table go here (meson reads them).
 */
#pragma once

#define CHANGE_KINDS(X)     \
        X(FILE, file)       \
        X(SYMLINK, link)    \
        X(VALUE, value)     \
        X(SWAP, swap)       \
        X(MOUNTOPT, mount)  \
        X(COMMAND, command) \
        X(NOTE, note)
