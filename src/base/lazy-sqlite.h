/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libsqlite3's API, opened at first use (lazy-lib.h says why). Every function llmtune calls is listed
 * here; one missing would be linked against nothing and fail the link. */
#pragma once

#include <sqlite3.h>

#include "base/lazy-lib.h"

#define sqlite3_close LAZY_SYM(LAZY_SQLITE, sqlite3_close)
#define sqlite3_column_blob LAZY_SYM(LAZY_SQLITE, sqlite3_column_blob)
#define sqlite3_column_bytes LAZY_SYM(LAZY_SQLITE, sqlite3_column_bytes)
#define sqlite3_errmsg LAZY_SYM(LAZY_SQLITE, sqlite3_errmsg)
#define sqlite3_finalize LAZY_SYM(LAZY_SQLITE, sqlite3_finalize)
#define sqlite3_open_v2 LAZY_SYM(LAZY_SQLITE, sqlite3_open_v2)
#define sqlite3_prepare_v2 LAZY_SYM(LAZY_SQLITE, sqlite3_prepare_v2)
#define sqlite3_step LAZY_SYM(LAZY_SQLITE, sqlite3_step)
