/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libxml2's API, opened at first use (lazy-lib.h says why). Every function llmtune calls is listed
 * here; one missing would be linked against nothing and fail the link. */
#pragma once

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "base/lazy-lib.h"

#define xmlDocGetRootElement LAZY_SYM(LAZY_XML, xmlDocGetRootElement)
#define xmlFreeDoc LAZY_SYM(LAZY_XML, xmlFreeDoc)
#define xmlGetLastError LAZY_SYM(LAZY_XML, xmlGetLastError)
#define xmlGetProp LAZY_SYM(LAZY_XML, xmlGetProp)
#define xmlNodeGetContent LAZY_SYM(LAZY_XML, xmlNodeGetContent)
#define xmlReadMemory LAZY_SYM(LAZY_XML, xmlReadMemory)
#define xmlResetLastError LAZY_SYM(LAZY_XML, xmlResetLastError)

/* xmlFree is a variable holding libxml2's deallocator (in some versions behind a macro calling
 * __xmlFree()): its value is read from the library. */
#undef xmlFree
#define xmlFree lazy_xml_free
