/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Without libFuzzer: run a target over files and directories of inputs (seeds, reproducers). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "base/util.h"

static int run_file(const char *path)
{
        FILE *fp = fopen(path, "rb");
        if (!fp) {
                perror(path);
                return 1;
        }
        struct sbuf b = {0};
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
                sbuf_addn(&b, buf, n);
        fclose(fp);
        LLVMFuzzerTestOneInput((const uint8_t *)(b.s ? b.s : ""), b.len);
        free(b.s);
        return 0;
}

int main(int argc, char **argv)
{
        unsigned runs = 0;
        int bad = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0)
                        continue; /* no reproducers yet for this target */
                if (!S_ISDIR(st.st_mode)) {
                        bad |= run_file(argv[i]);
                        runs++;
                        continue;
                }
                struct dirent **names;
                int k = scandir(argv[i], &names, NULL, alphasort);
                for (int j = 0; j < k; j++) {
                        if (names[j]->d_name[0] != '.') {
                                char *p = xasprintf("%s/%s", argv[i], names[j]->d_name);
                                bad |= run_file(p);
                                runs++;
                                free(p);
                        }
                        free(names[j]);
                }
                free(names);
        }
        printf("%u inputs replayed\n", runs);
        return bad;
}
