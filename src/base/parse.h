/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strict parsers for the values the kernel prints in sysfs and procfs. Each takes untrusted text
 * and either returns a value or a negative errno: -ENODATA (empty), -EINVAL (garbage),
 * -ERANGE (overflow). No parser accepts trailing junk: "12abc" is an error, never 12.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

/* Decimal integer with optional sign (and a 0x prefix for hex); surrounding whitespace allowed. */
int parse_integer(const char *s, bool *neg, uint64_t *mag);
int parse_u64(const char *s, uint64_t *ret);
int parse_i64(const char *s, int64_t *ret);

/* A CPU list ("0-3,8,10-11"). Returns the number of CPUs or a negative errno; when ret is not
 * NULL, *ret gets the sorted CPU numbers (caller frees). Numbers and lengths bounded to 65,536
 * (parse.c: CPULIST_MAX). */
int parse_cpulist(const char *s, unsigned **ret);

/* Render a sorted set of CPU numbers as a CPU list. */
char *format_cpulist(const unsigned *cpus, size_t n);

/* "always [madvise] never": the bracketed word and all choices. */
int parse_bracketed(const char *s, char **ret_active, struct strv *ret_all);

/* PCIe link speed "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> MT/s (16000). "Unknown" -> -ENODATA. */
int parse_link_speed(const char *s, unsigned *ret_mts);

/* Decode the \ooo octal escapes of /proc/swaps and /proc/mounts in place. */
char *unescape_octal(char *s);

/* Size with an optional k/m/g/t/% suffix as tmpfs takes it ("size=64m"); percent of *base. */
int parse_size(const char *s, uint64_t base, uint64_t *ret);

/* A PCI function's address as the kernel names it under /sys/bus/pci/devices: "DDDD:BB:DD.F",
 * hexadecimal digits only (no sign, no 0x, no white space), a domain of 4 to 8 digits (Intel VMD's
 * 10000), device below 32, function below 8. NVML's "00000000:18:00.0" is one. */
/* NAME is PREFIX and an index as the kernel names its objects ("cpu12", "node1", "policy0"): decimal
 * digits only, no sign, space or leading zero (the kernel prints them with %d/%u), fitting an
 * unsigned int. */
bool parse_name_index(const char *name, const char *prefix, unsigned *ret);

struct pci_addr {
        unsigned dom, bus, dev, fn;
};
bool pci_addr_parse(const char *s, struct pci_addr *ret);
/* By domain, bus, device, function: the kernel's enumeration order. */
int pci_addr_cmp(const struct pci_addr *a, const struct pci_addr *b);
/* "infinity" (UNLIMITED true) or a size with K M G T P E (1024-based): 0, or -EINVAL/-ERANGE. */
int rlimit_value_parse(const char *s, bool *unlimited, uint64_t *ret);
struct rlimit_pair {
        bool soft_unlimited, hard_unlimited;
        uint64_t soft, hard;
};
/* systemd.exec(5)'s "SOFT:HARD" or one value for both: 0, or -EINVAL. */
int rlimit_pair_parse(const char *value, struct rlimit_pair *ret);
