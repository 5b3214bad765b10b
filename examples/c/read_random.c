/*
 * read_random.c: random-access reads through the C API equal the original bytes. Opens an
 * adz file with adz_reader_open, checks adz_reader_size against the raw file, then reads
 * random ranges with adz_reader_pread from several threads at once (one shared reader) and
 * compares each with the same range of the raw file. Prints "N reads ok" and exits non-zero
 * on the first difference or error.
 *
 * usage: read_random FILE.adz RAW [READS] [THREADS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adz.h"

static const unsigned char *raw;
static uint64_t raw_len;
static adz_reader *reader;
static int reads_per_thread;

struct job {
    uint64_t seed;
    int bad;
};

static uint64_t next(uint64_t *x) {
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 17;
}

static void *worker(void *arg) {
    struct job *job = arg;
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        job->bad = 1;
        return NULL;
    }
    for (int i = 0; i < reads_per_thread && !job->bad; i++) {
        /* Mostly small reads (one or two frames), some large, some past the end. */
        uint64_t off = next(&job->seed) % (raw_len + 4096);
        size_t len = (i % 8 == 0) ? (size_t)(next(&job->seed) % cap)
                                  : (size_t)(next(&job->seed) % 8192);
        size_t got = (size_t)-1;
        int rc = adz_reader_pread(reader, buf, len, off, &got);
        size_t want = off >= raw_len ? 0 : (size_t)(raw_len - off < len ? raw_len - off : len);
        if (rc != ADZ_OK) {
            fprintf(stderr, "pread(%llu, %zu): %s: %s\n", (unsigned long long)off, len,
                    adz_error_name(rc), adz_last_error());
            job->bad = 1;
        } else if (got != want || (got && memcmp(buf, raw + off, got) != 0)) {
            fprintf(stderr, "pread(%llu, %zu): %zu bytes differ from the original (want %zu)\n",
                    (unsigned long long)off, len, got, want);
            job->bad = 1;
        }
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: read_random FILE.adz RAW [READS] [THREADS]\n");
        return 2;
    }
    int reads = argc > 3 ? atoi(argv[3]) : 400;
    int threads = argc > 4 ? atoi(argv[4]) : 4;
    if (reads < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "read_random: READS >= 1, THREADS 1..64\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        perror(argv[2]);
        return 1;
    }
    long n = ftell(f);
    rewind(f);
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "read_random: cannot read %s\n", argv[2]);
        return 1;
    }
    fclose(f);
    raw = data;
    raw_len = (uint64_t)n;

    int rc = adz_reader_open(argv[1], &reader);
    if (rc != ADZ_OK) {
        fprintf(stderr, "adz_reader_open %s: %s: %s\n", argv[1], adz_error_name(rc),
                adz_last_error());
        return 1;
    }
    uint64_t size = 0;
    rc = adz_reader_size(reader, &size);
    if (rc != ADZ_OK || size != raw_len) {
        fprintf(stderr, "adz_reader_size: %s, %llu bytes, want %llu\n", adz_error_name(rc),
                (unsigned long long)size, (unsigned long long)raw_len);
        return 1;
    }

    reads_per_thread = (reads + threads - 1) / threads;
    pthread_t tid[64];
    struct job jobs[64];
    for (int t = 0; t < threads; t++) {
        jobs[t].seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1);
        jobs[t].bad = 0;
        if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
            fprintf(stderr, "read_random: pthread_create failed\n");
            return 1;
        }
    }
    int bad = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        bad |= jobs[t].bad;
    }
    adz_reader_free(reader);
    free(data);
    if (bad) return 1;
    printf("%d reads ok\n", reads_per_thread * threads);
    return 0;
}
