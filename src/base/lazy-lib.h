/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Libraries opened with dlopen(3) the first time they are used instead of being linked: libarchive
 * (archive roots, gather), libxml2 (nvidia-smi captures) and libsqlite3 (the rpm database). Linked, the dynamic loader mapped and
 * relocated them, and ICU, libstdc++, liblzma, libzstd, libbz2, liblz4, libnettle and libacl under
 * them, for every command: about 10 ms of CPU per run for the many that read neither
 * (docs/PERFORMANCE.md). The sonames are those of the development libraries found at build time
 * (meson.build); the packages still depend on the libraries (packaging/).
 *
 * Callers include lazy-archive.h or lazy-xml.h instead of the libraries' headers and call the
 * functions as usual: each name is a macro that resolves the function once per call site.
 */
#pragma once

#include <stdbool.h>

enum lazy_lib { LAZY_ARCHIVE, LAZY_XML, LAZY_SQLITE };

/* Opens the library (once); true when it is there, else false with *why saying why (static text). */
bool lazy_lib_open(enum lazy_lib lib, const char **why);

/* The address of NAME in LIB, opening LIB first. A library or symbol that cannot be had ends the
 * program with the loader's message, as a missing linked library did at start; callers that can
 * report the error ask lazy_lib_open() first. */
void *lazy_lib_sym(enum lazy_lib lib, const char *name);

/* libxml2's xmlFree (lazy-xml.h). */
void lazy_xml_free(void *p);

/* NAME's address with NAME's own type, looked up on the first call from this place in the code. */
#define LAZY_SYM(lib, name)                                                                   \
        (*({                                                                                 \
                static __typeof__(&name) lazy_p_;                                            \
                if (!lazy_p_)                                                                \
                        lazy_p_ = (__typeof__(&name))lazy_lib_sym(lib, #name);               \
                lazy_p_;                                                                     \
        }))
