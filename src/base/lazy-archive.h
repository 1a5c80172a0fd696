/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libarchive's API, opened at first use (lazy-lib.h says why). Every function llmtune calls is
 * listed here; one missing would be linked against nothing and fail the link. */
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "base/lazy-lib.h"

#define archive_entry_filetype LAZY_SYM(LAZY_ARCHIVE, archive_entry_filetype)
#define archive_entry_free LAZY_SYM(LAZY_ARCHIVE, archive_entry_free)
#define archive_entry_hardlink LAZY_SYM(LAZY_ARCHIVE, archive_entry_hardlink)
#define archive_entry_new LAZY_SYM(LAZY_ARCHIVE, archive_entry_new)
#define archive_entry_pathname LAZY_SYM(LAZY_ARCHIVE, archive_entry_pathname)
#define archive_entry_set_filetype LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_filetype)
#define archive_entry_set_gid LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_gid)
#define archive_entry_set_mtime LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_mtime)
#define archive_entry_set_pathname LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_pathname)
#define archive_entry_set_perm LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_perm)
#define archive_entry_set_size LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_size)
#define archive_entry_set_symlink LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_symlink)
#define archive_entry_set_uid LAZY_SYM(LAZY_ARCHIVE, archive_entry_set_uid)
#define archive_entry_size LAZY_SYM(LAZY_ARCHIVE, archive_entry_size)
#define archive_entry_size_is_set LAZY_SYM(LAZY_ARCHIVE, archive_entry_size_is_set)
#define archive_entry_symlink LAZY_SYM(LAZY_ARCHIVE, archive_entry_symlink)
#define archive_errno LAZY_SYM(LAZY_ARCHIVE, archive_errno)
#define archive_error_string LAZY_SYM(LAZY_ARCHIVE, archive_error_string)
#define archive_read_data LAZY_SYM(LAZY_ARCHIVE, archive_read_data)
#define archive_read_free LAZY_SYM(LAZY_ARCHIVE, archive_read_free)
#define archive_read_new LAZY_SYM(LAZY_ARCHIVE, archive_read_new)
#define archive_read_next_header LAZY_SYM(LAZY_ARCHIVE, archive_read_next_header)
#define archive_read_open_filename LAZY_SYM(LAZY_ARCHIVE, archive_read_open_filename)
#define archive_read_open_memory LAZY_SYM(LAZY_ARCHIVE, archive_read_open_memory)
#define archive_read_support_filter_gzip LAZY_SYM(LAZY_ARCHIVE, archive_read_support_filter_gzip)
#define archive_read_support_filter_zstd LAZY_SYM(LAZY_ARCHIVE, archive_read_support_filter_zstd)
#define archive_read_support_format_tar LAZY_SYM(LAZY_ARCHIVE, archive_read_support_format_tar)
#define archive_write_add_filter_gzip LAZY_SYM(LAZY_ARCHIVE, archive_write_add_filter_gzip)
#define archive_write_add_filter_zstd LAZY_SYM(LAZY_ARCHIVE, archive_write_add_filter_zstd)
#define archive_write_close LAZY_SYM(LAZY_ARCHIVE, archive_write_close)
#define archive_write_data LAZY_SYM(LAZY_ARCHIVE, archive_write_data)
#define archive_write_free LAZY_SYM(LAZY_ARCHIVE, archive_write_free)
#define archive_write_header LAZY_SYM(LAZY_ARCHIVE, archive_write_header)
#define archive_write_new LAZY_SYM(LAZY_ARCHIVE, archive_write_new)
#define archive_write_open_fd LAZY_SYM(LAZY_ARCHIVE, archive_write_open_fd)
#define archive_write_set_format_pax_restricted LAZY_SYM(LAZY_ARCHIVE, archive_write_set_format_pax_restricted)
