/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the facts of a test's tree and asserting on them, one way for every unit test: a missing
 * fact, a wrong status or a wrong value fails the case with the fact's name, what it was (its value
 * or its reason) and what was wanted.
 */
#pragma once

#include "facts/facts.h"

/* The facts of the tree at DIR (NULL: the case's tmptree), on a root of their own that
 * close_facts releases with them. */
struct facts *open_facts(const char *dir);
void close_facts(struct facts *f);

/* NAME, which must be there (any status). */
const struct fact *get(struct facts *f, const char *name);
/* NAME, which must have status ST. */
const struct fact *get_as(struct facts *f, const char *name, enum fact_status st);
/* NAME is a value equal to VALUE. */
void eq(struct facts *f, const char *name, const char *value);
/* NAME has status ST, a source and, when WHY is not NULL, a reason containing WHY. */
void has_status(struct facts *f, const char *name, enum fact_status st, const char *why);
/* NAME is absent (unreadable) with a reason containing WHY. */
void absent(struct facts *f, const char *name, const char *why);
void unreadable(struct facts *f, const char *name, const char *why);
