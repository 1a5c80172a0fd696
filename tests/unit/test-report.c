/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/report/ on its own library (libllmtune-report.a, issue 32 item 4): audit documents in, the
 * CSV and HTML that a spreadsheet or a browser reads out, with what the audits carry kept as text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report-render.h"
#include "report/report.h"
#include "unit-main.h"

/* A fleet of one host whose one failing rule has a title that is a formula, a quote and a tag. */
static const char AUDIT[] = "{\"format\": 1, \"host\": \"node<1>\", \"results\": [{\"rule\": \"r1\", "
                            "\"status\": \"fail\", \"title\": \"=1+2, \\\"x\\\" <script>\"}]}";

static char *render(void (*print)(FILE *, const struct report *))
{
        struct report rp = {0};
        char *err = NULL, *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(report_add_json(&rp, "a.json", AUDIT, strlen(AUDIT), &err), 0);
        ck_assert_int_eq(report_finish(&rp, &err), 0);
        FILE *out = open_memstream(&text, &len);
        ck_assert_ptr_nonnull(out);
        print(out, &rp);
        fclose(out);
        report_done(&rp);
        return text;
}

static void csv_by_rule(FILE *out, const struct report *rp) { report_print_csv(out, rp, false); }

START_TEST(csv_keeps_a_title_text)
{
        char *text = render(csv_by_rule);
        /* Quoted for the comma, its quotes doubled, and a ' before the = so no formula runs. */
        ck_assert_msg(strstr(text, "r1,\"'=1+2, \"\"x\"\" <script>\",") != NULL, "%s", text);
        free(text);
}
END_TEST
DEFINE_TEST(csv_keeps_a_title_text, .description = "a rule title with a comma, quotes and a leading = is one CSV field of text", .root = "none");

START_TEST(html_escapes_what_audits_carry)
{
        char *text = render(report_print_html);
        ck_assert_msg(strstr(text, "<script>") == NULL, "%s", text);
        ck_assert_msg(strstr(text, "&lt;script&gt;") != NULL, "%s", text);
        ck_assert_msg(strstr(text, "node&lt;1&gt;") != NULL, "%s", text);
        free(text);
}
END_TEST
DEFINE_TEST(html_escapes_what_audits_carry, .description = "a host name and a title with < > are escaped in the HTML page", .root = "none");

UNIT_MAIN(.name = "report");
