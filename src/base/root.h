/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root handle: every file llmtune reads or writes is reached through one directory fd opened
 * on --root. Paths are resolved as if that directory were "/" (symlinks included), so nothing a
 * fixture tree or a hostile link contains can lead outside it. Reads are cached, so no file is read
 * twice in one run, and counted, so benchmarks can report how many files a command touched.
 */
#pragma once

#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"

/* An error of a read, listing or stat that means "not there": the path does not exist (ENOENT) or a
 * component of it is no directory (ENOTDIR). Any other error (EACCES, EIO, ELOOP, EISDIR, ...) means
 * something is there that could not be read: an unreadable fact, never "nothing there". */
static inline bool root_gone(int rc) { return rc == -ENOENT || rc == -ENOTDIR; }

/* Largest file read in one piece; bigger ones give -EFBIG ("bounded input"). */
#define ROOT_READ_MAX (8u << 20)

/* Errno for "not a regular file": a FIFO, socket or device where a file is read or written (a
 * FIFO reads as empty or blocks, a socket cannot be opened). Linux has no such errno; this one
 * never comes from the calls llmtune makes, and errno_name() and the apply messages spell it. */
#define ENOTREG EMEDIUMTYPE

struct root;

int root_new(const char *path, struct root **ret);
/* Like root_new, and when PATH is an archive made by `llmtune gather` that cannot be used, *ret_why
 * says why (caller frees). A regular file as PATH is taken as such an archive (archive-root.h): it
 * is vetted and unpacked into a private temporary directory that root_free removes. */
int root_new_why(const char *path, struct root **ret, char **ret_why);
/* Whether the root is an archive (read-only: commands that write refuse it). */
bool root_is_archive(const struct root *r);
/* The root was written from an lstopo XML export (--topology); also an archive root (read-only). */
bool root_is_topology(const struct root *r);
struct root *root_free(struct root *r);

/* The root as given ("/" for the live system), and whether it is the live system. */
const char *root_path(const struct root *r);
bool root_is_live(const struct root *r);
/* Whether the root's directory is the host's "/" (the live system, also when gather reads it as a
 * tree): libraries need no confinement to read it (sandbox.h). */
bool root_is_host(const struct root *r);
/* Whether the tree is of the kernel this process runs on: the live system, or a tree whose proc/ and
 * sys/ are mounts of procfs and sysfs (a container's view of its host, `--root /host` with the
 * host's "/" mounted there; a rescue system's chroot with /proc and /sys bound). The kernel shows
 * one machine only, so that machine's device nodes (RAID superblocks), kernel log (/dev/kmsg) and
 * GPUs (NVML) are the tree's own, and are read as on the live system; nothing else changes (the
 * tree is still a foreign root for apply, and libraries still read it confined). */
bool root_runs_here(const struct root *r);
/* The root's directory (O_PATH), for the sandbox's Landlock rule: never read through it. */
int root_dirfd(const struct root *r);

/* The host-read vet's verdict (host-vet.h), kept by the handle so the walk is made once. */
struct root_vet {
        bool done;
        char *why; /* NULL: fit */
};
struct root_vet *root_vet_state(struct root *r);

/* Host path of a path under the root, for the libraries that take a directory (libpci, hwloc,
 * libkmod). Caller frees. */
char *root_host_path(const struct root *r, const char *path);

/* openat-style open of PATH (absolute or relative, both taken from the root); returns fd or -errno. */
int root_open(struct root *r, const char *path, int flags, mode_t mode);

/* Like root_open, but no symbolic link may appear anywhere in PATH (-ELOOP): openat2's
 * RESOLVE_NO_SYMLINKS inside the root. Every write to a managed path goes through this, so a link
 * planted at the path or in a directory above it (/etc/sysctl.d -> /etc/shadow's directory) is
 * refused rather than followed. Reads (sysfs is all links) keep using root_open. */
int root_open_nolinks(struct root *r, const char *path, int flags, mode_t mode);

/* PATH opened for reading as root_read opens it, for a reader that must judge the very file it
 * reads (trust.h) before reading it: no FIFO, socket or device (-ENOTREG), and an archive's entry
 * held only by name gives its error. Not cached; recorded as a read (gather packs it). Returns the
 * descriptor or -errno. */
int root_open_input(struct root *r, const char *path);

/* Whole file, cached for the life of the handle (negative results too). *ret stays owned by the
 * handle and is NUL-terminated; embedded NULs are kept in *ret_len. Returns 0 or -errno. */
int root_read(struct root *r, const char *path, const char **ret, size_t *ret_len);
/* The first of the N PATHS that is there (a file and its fallbacks, in order), read as root_read
 * reads: its index in *ret_i, or -ENOENT when none is. A path that is there but cannot be read
 * ends the search: its -errno, *ret_i naming it. */
int root_read_first(struct root *r, const char *const *paths, size_t n, size_t *ret_i, const char **ret);

/*
 * One value per file, as sysfs and procfs keep them (util-linux's ul_path_read_* are the model),
 * read through root_read (cached). Return 0, or -errno: -ENOENT..., -EBADMSG for NUL-bearing
 * content, -ENODATA for an empty one, and for the numbers -EINVAL/-ERANGE from parse_u64/i64.
 */
/* PATH as text: root_read, and -EBADMSG when it holds a NUL (a text file never does). */
int root_read_text(struct root *r, const char *path, const char **ret, size_t *ret_len);
/* PATH as one line, trailing white space trimmed. Caller frees. */
int root_read_line(struct root *r, const char *path, char **ret);
/* PATH as one integer ("42", "0x10de", "-1"). */
int root_read_u64(struct root *r, const char *path, uint64_t *ret);
int root_read_i64(struct root *r, const char *path, int64_t *ret);

/*
 * The same with the path given printf-style (util-linux's ul_path_readf_*), for a value of one of
 * many objects: root_readf_u64(r, &v, "/sys/devices/system/cpu/cpu%u/online", n). What a reader
 * that names its path again (a fact's source) needs is the path itself: root_read_* then.
 */
int root_readf_line(struct root *r, char **ret, const char *fmt, ...) _printf_(3, 4);
int root_readf_u64(struct root *r, uint64_t *ret, const char *fmt, ...) _printf_(3, 4);
int root_readf_i64(struct root *r, int64_t *ret, const char *fmt, ...) _printf_(3, 4);
/* The whole file as root_read gives it: cached, owned by the handle, NUL-terminated. */
int root_readf_str(struct root *r, const char **ret, const char *fmt, ...) _printf_(3, 4);

/* A sysfs value as the kernel means it: the bracketed word of a choice list ("always [madvise]
 * never" -> "madvise"), else the trimmed line. NULL when unreadable. Caller frees. */
char *root_read_active(struct root *r, const char *path);

/* The host the root is: ROOT/etc/hostname under a foreign root, gethostname() on the live one.
 * NULL when unknown. Caller frees. */
char *root_hostname(struct root *r);

/* Drop the cached content of PATH (after llmtune itself wrote it). */
void root_forget(struct root *r, const char *path);

/* From now on root_read(PATH) returns a copy of DATA (LEN bytes) as if the file held it, without
 * touching the tree: for the fuzz harnesses (tests/fuzz), which parse one input after another
 * and would otherwise spend most of their time writing each to a file and reading it back. */
void root_preload(struct root *r, const char *path, const void *data, size_t len);

/* Link target of PATH (the last component is not followed). Caller frees. */
int root_readlink(struct root *r, const char *path, char **ret);

/* PATH is a link to /dev/null: a masked systemd unit, udev rule or drop-in (systemd.unit(5),
 * udev(7), zram-generator.conf(5)). */
bool root_masked(struct root *r, const char *path);

/* Sorted entry names of a directory, without "." and "..". */
int root_list(struct root *r, const char *dir, struct strv *ret);

/* stat/lstat of PATH inside the root. */
int root_stat(struct root *r, const char *path, struct stat *st, bool follow);

/* Paths under the root matching a glob pattern (fnmatch per component, "*" never crosses "/"),
 * sorted. Hidden entries match only a pattern component that starts with '.'. */
int root_glob(struct root *r, const char *pattern, struct strv *ret);

/* How many files were opened for reading through the handle (benchmarks, tests). */
unsigned root_files_opened(const struct root *r);
/* How many directories root_readlink and root_stat (without following) looked up to reach an
 * entry: the handle keeps the last few open, so entries of one directory cost one (tests). */
unsigned root_dirs_resolved(const struct root *r);

/*
 * Recording, for `llmtune gather`: once started, the handle remembers every path it was asked
 * about (read, listed, stat'ed, readlink'ed) with the outcome, so that exactly the evidence the
 * probes used can be packed. Paths are kept as asked ("/sys/class/net/eth0/device/vendor"); the
 * links on the way are resolved by the gatherer.
 */
enum root_rec_kind {
        ROOT_REC_FILE = 1 << 0, /* root_read */
        ROOT_REC_DIR = 1 << 1,  /* root_list */
        ROOT_REC_STAT = 1 << 2, /* root_stat, root_glob */
        ROOT_REC_LINK = 1 << 3, /* root_readlink */
};
struct root_rec {
        const char *path; /* normalized: no leading "/" */
        unsigned kinds;   /* enum root_rec_kind bits */
        int err;          /* first failure seen (-errno), 0 when every access worked */
        const void *data; /* content recorded with root_record_data (NULL: use root_read) */
        size_t len;
};
void root_record_start(struct root *r);
/* Is the handle recording (gather)? A probe that reads a large file for a small part of it
 * records only that part (root_record_data), so the archive holds what the rules read. */
bool root_recording(const struct root *r);
/* Read the live system as if it were a tree (gather on "/"): probes then take the file paths an
 * archive root will take (/proc/net/route rather than getifaddrs), so those files get recorded. */
void root_view_as_tree(struct root *r);
/* Record an access made behind the handle's back (a library that reads by host path). */
void root_record(struct root *r, const char *path, unsigned kind, int err);
/* Record content read through an fd from root_open (a superblock region of a block device): the
 * gatherer stores exactly these bytes as a regular file at PATH. */
void root_record_data(struct root *r, const char *path, const void *data, size_t len);
/* The records in the order first seen; NULL/0 when recording never started. */
const struct root_rec *root_recorded(const struct root *r, size_t *ret_n);

/* Paths of an archive root that were gathered only as names (listed, never read): reading one
 * gives ERR, the error reading it gave on the gathered machine, or -ENODATA ("not gathered"),
 * never an empty file. A directory that could not be listed there: root_list gives ERR. */
void root_mark_unread(struct root *r, const char *path, int err);

/*
 * Writing files under the root (the change log's backups and head file, the applied changes). A
 * file is replaced atomically: written to ".BASE.llmtune-PID" beside it, given the replaced
 * file's mode, owner, extended attributes and chattr flags (MODE_IF_NEW for a new file; fileattr.h),
 * fsynced, renamed over it, and the directory fsynced. An immutable or append-only file is not
 * replaced: -EPERM before anything is written. A run killed on the way leaves only that temporary file, which
 * dir_remove_matching sweeps.
 */
/* PATH replaced with LEN bytes of DATA; no symbolic link may be at PATH or on the way to it
 * (root_open_nolinks). Returns 0 or -errno: -ELOOP for a link, -EISDIR, -ENOTREG for a FIFO,
 * socket or device at PATH, -EINVAL for a PATH that names no file. */
int root_write_file(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new)
        __attribute__((warn_unused_result));
/* The same for BASE in the open directory DFD (PATH names it for the test hooks, test-hooks.h).
 * With EXPECT_SET, BASE must still hold EXPECT (NULL: be absent) right before the rename, else
 * -ESTALE and nothing is replaced; when BASE could not be read then, *RET_READ_ERR (may be NULL)
 * says why (the errno), so the refusal is not told as "another process wrote it". */
int replace_file_at(int dfd, const char *base, const char *path, const char *data, size_t len, mode_t mode_if_new,
                    bool expect_set, const char *expect, int *ret_read_err) __attribute__((warn_unused_result));
/* Does BASE in DFD hold exactly EXPECT (NULL: no file there)? Read again right before a replace,
 * so what another process wrote since the plan read it is never overwritten (a lost update).
 * 1: it does, 0: it does not, -errno: something is there that cannot be read (ELOOP: a link in its
 * place, EISDIR: a directory), so whether it changed is not known. */
int file_at_holds(int dfd, const char *base, const char *expect);
/* All LEN bytes of DATA to FD (EINTR and short writes retried). Returns 0 or -errno. */
int write_all(int fd, const char *data, size_t len) __attribute__((warn_unused_result));

/* The directory NAME in DFD made with exactly MODE (fchmodat: not what the umask leaves of it);
 * one already there is left as it is. Returns 0 or -errno. */
int mkdirat_exact(int dfd, const char *name, mode_t mode) __attribute__((warn_unused_result));
/* mkdir -p of the absolute PATH under the root, one component at a time through the handle, no
 * symbolic link on the way; the directories made get exactly MODE. Returns 0 or -errno. */
int root_mkdirs(struct root *r, const char *path, mode_t mode) __attribute__((warn_unused_result));

/* Unlink the entries of the open directory DFD whose name MATCH(name, ARG) accepts, then fsync DFD
 * when any went: the sweep of temporary files a killed run left. DFD stays open. Returns how many
 * were removed, or -errno when DFD cannot be listed. */
int dir_remove_matching(int dfd, bool (*match)(const char *name, const void *arg), const void *arg);
/* Is NAME the string PREFIX followed by one or more decimal digits (a temporary name ending in a
 * PID, as replace_file_at makes them)? For dir_remove_matching. */
bool name_is_prefix_pid(const char *name, const void *prefix);
