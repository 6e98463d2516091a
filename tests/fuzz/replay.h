/* replay.h - run a libFuzzer harness over saved inputs without libFuzzer.
 * Built when RLOCK_LIBFUZZER is not defined (gcc, valgrind, CI replays of
 * the seed corpora): each file named, or each file in each directory named,
 * goes once through LLVMFuzzerTestOneInput. Include after the harness's
 * LLVMFuzzerTestOneInput, from its main(). */
#ifndef RLOCK_FUZZ_REPLAY_H
#define RLOCK_FUZZ_REPLAY_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static int fuzz_replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (!f) { perror(path); return 1; }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (unsigned char *)malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) { fclose(f); free(buf); return 1; }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

/* Replays argv[1..]; prints "<name> replay: N passed, N failed". */
static int fuzz_replay_main(const char *name, int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) { bad += fuzz_replay_file(argv[i]); files++; continue; }
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            char path[4096];
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad += fuzz_replay_file(path);
            files++;
        }
        closedir(d);
    }
    printf("%s replay: %d passed, %d failed\n", name, files - bad, bad);
    return bad ? 1 : 0;
}
#endif
