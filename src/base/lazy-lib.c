/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dlopen(3) of libarchive, libxml2 and libsqlite3 at first use (lazy-lib.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "base/lazy-lib.h"
#include "base/util.h"

static struct {
        const char *soname;
        void *dl;
        char *why;
} libs[] = {
        [LAZY_ARCHIVE] = {LIBARCHIVE_SONAME, NULL, NULL},
        [LAZY_XML] = {LIBXML2_SONAME, NULL, NULL},
        [LAZY_SQLITE] = {LIBSQLITE3_SONAME, NULL, NULL},
};

bool lazy_lib_open(enum lazy_lib lib, const char **why)
{
        if (!libs[lib].dl && !libs[lib].why) {
                /* RTLD_LOCAL: nothing else resolves against them; RTLD_NOW: a broken install fails
                 * here, where it can be reported, not in the middle of reading an archive. */
                libs[lib].dl = dlopen(libs[lib].soname, RTLD_NOW | RTLD_LOCAL);
                if (!libs[lib].dl) {
                        const char *e = dlerror();
                        libs[lib].why = xasprintf("cannot load %s: %s", libs[lib].soname, e ? e : "dlopen failed");
                }
        }
        if (why)
                *why = libs[lib].why;
        return libs[lib].dl != NULL;
}

void *lazy_lib_sym(enum lazy_lib lib, const char *name)
{
        const char *why = NULL;
        void *p = lazy_lib_open(lib, &why) ? dlsym(libs[lib].dl, name) : NULL;
        if (!p) {
                fprintf(stderr, "llmtune: %s\n", why ? why : xasprintf("%s: no symbol %s", libs[lib].soname, name));
                exit(127);
        }
        return p;
}

void lazy_xml_free(void *p)
{
        static void (**deallocator)(void *);
        if (!deallocator)
                deallocator = lazy_lib_sym(LAZY_XML, "xmlFree");
        (*deallocator)(p);
}
