/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Installed packages from the rpm database of a root: /var/lib/rpm/rpmdb.sqlite, the SQLite
 * backend rpm has used since 4.16 (RHEL 9, Fedora 33 and later). Its table Packages holds one row
 * per installed package, (hnum INTEGER PRIMARY KEY, blob BLOB), the blob being the package's header
 * as rpm keeps it (rpm lib/backend/sqlite.c; lib/header_internal.h): a big-endian count of index
 * entries and the size of the data that follows them, then the entries (tag, type, offset, count)
 * and the data. NAME is tag 1000, VERSION 1001, strings (type 6) ending in a NUL.
 *
 * The database may be larger than a root file is read whole (root.h, ROOT_READ_MAX) and is in WAL
 * mode, so rows committed since the last checkpoint are in rpmdb.sqlite-wal. Both files are opened
 * through the root handle (confined to the root), copied into a private temporary directory and
 * opened there with libsqlite3, which replays the WAL into its view; nothing is written under the
 * root and the copy is removed before returning.
 */
#pragma once

#include <stdbool.h>

#include "base/root.h"

#define RPMDB_SQLITE "/var/lib/rpm/rpmdb.sqlite"
#define RPMDB_BDB "/var/lib/rpm/Packages"

/*
 * The VERSION of the first installed package whose NAME MATCH accepts, into *ret_version, its name
 * into *ret_name (both caller frees). Returns 0; -ENOENT when the root has no rpm database in SQLite
 * form (*ret_why says whether it has one in Berkeley DB form, rpm before 4.16, which is not read);
 * -ESRCH when the database has no such package; another -errno when it cannot be read, with
 * *ret_why (caller frees).
 */
int rpmdb_package_version(struct root *r, bool (*match)(const char *name), char **ret_name, char **ret_version,
                          char **ret_why);

/* NAME and VERSION of one header blob (for the tests); -EBADMSG when it is not one. */
int rpmdb_header_nv(const unsigned char *blob, size_t len, char **ret_name, char **ret_version);
