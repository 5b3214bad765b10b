/*
 * test_dataset.c: a dataset written by several part writers through the C API reads back as
 * one file, and bad arguments are error codes, never a crash. Four writers (threads, each
 * with its own part) write distinct bytes, three at their offsets and one appended at commit;
 * a commit that expects a fifth writer fails with ADZ_E_MISSING_PART and commits nothing; the
 * commit of the four succeeds; adz_dataset_open and adz_reader_open both read it, whole and
 * in random ranges across the parts. Writes DIR/ds (the dataset) and DIR/ds.raw (what it
 * should read as, for `adz cat DIR/ds`). Prints "N passed, N failed"; exits non-zero on a
 * failure.
 *
 * usage: test_dataset DIR   (a writable directory)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adz.h"

#define PARTS 4

static int passed, failed;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void expect(int got, int want, const char *what) {
    pthread_mutex_lock(&count_lock);
    if (got == want) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: got %d (%s), want %d (%s); last error: %s\n", what, got,
                adz_error_name(got), want, adz_error_name(want), adz_last_error());
    }
    pthread_mutex_unlock(&count_lock);
}

static void expect_msg(const char *needle, const char *what) {
    if (strstr(adz_last_error(), needle)) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: message \"%s\" lacks \"%s\"\n", what, adz_last_error(), needle);
    }
}

static char dataset[4096];
static unsigned char *data[PARTS];
static size_t lens[PARTS];

struct part {
    int rank;
    uint64_t offset;
};

/* One writer: its part, written in pieces (the last asynchronously), then closed. */
static void *write_part(void *arg) {
    struct part *p = arg;
    char id[16];
    snprintf(id, sizeof id, "r%d", p->rank);
    adz_writer *w;
    int rc = adz_dataset_part_open(dataset, id, p->offset, "static=zstd:1", NULL, 1, &w);
    expect(rc, ADZ_OK, "part_open");
    if (rc != ADZ_OK) return NULL;
    size_t half = lens[p->rank] / 2;
    expect(adz_writer_write(w, data[p->rank], half), ADZ_OK, "part write");
    adz_write *h;
    expect(adz_writer_write_async(w, data[p->rank] + half, lens[p->rank] - half, &h), ADZ_OK,
           "part write_async");
    adz_summary s;
    expect(adz_writer_close(w, &s), ADZ_OK, "part close");
    expect(s.raw_bytes == lens[p->rank], 1, "part summary");
    adz_write_free(h);
    adz_writer_free(w);
    return NULL;
}

static uint64_t next(uint64_t *x) {
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 17;
}

/* The reader `r` reads `all` whole and in 50 random ranges. */
static void check_reads(adz_reader *r, const unsigned char *all, size_t total, const char *how) {
    uint64_t size = 0;
    expect(adz_reader_size(r, &size), ADZ_OK, "size");
    expect(size == total, 1, "size is the sum of the parts");
    unsigned char *buf = malloc(total + 10);
    size_t got = 0;
    expect(adz_reader_pread(r, buf, total + 10, 0, &got), ADZ_OK, "pread whole");
    expect(got == total && memcmp(buf, all, total) == 0, 1, how);
    uint64_t x = 7;
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        uint64_t off = next(&x) % (total + 5);
        size_t len = (size_t)(next(&x) % 300000);
        int rc = adz_reader_pread(r, buf, len, off, &got);
        size_t want = off >= total ? 0 : (off + len > total ? total - off : len);
        if (rc != ADZ_OK || got != want || (want && memcmp(buf, all + off, want) != 0)) bad++;
    }
    expect(bad, 0, "50 random ranges equal the concatenation");
    free(buf);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_dataset DIR\n");
        return 2;
    }
    snprintf(dataset, sizeof dataset, "%s/ds", argv[1]);
    size_t total = 0;
    for (int r = 0; r < PARTS; r++) {
        lens[r] = 200000 + (size_t)r * 33333;
        data[r] = malloc(lens[r]);
        if (!data[r]) return 2;
        for (size_t i = 0; i < lens[r]; i++) data[r][i] = (unsigned char)((i / 9) * (r + 3));
        total += lens[r];
    }
    /* Ranks 0-2 at their displacements, rank 3 appended at commit. */
    struct part parts[PARTS];
    pthread_t threads[PARTS];
    uint64_t at = 0;
    for (int r = 0; r < PARTS; r++) {
        parts[r].rank = r;
        parts[r].offset = r == PARTS - 1 ? ADZ_PART_APPEND : at;
        at += lens[r];
        pthread_create(&threads[r], NULL, write_part, &parts[r]);
    }
    for (int r = 0; r < PARTS; r++) pthread_join(threads[r], NULL);
    unsigned char *all = malloc(total);
    size_t pos = 0;
    for (int r = 0; r < PARTS; r++) {
        memcpy(all + pos, data[r], lens[r]);
        pos += lens[r];
    }

    adz_reader *r = (adz_reader *)0x1;
    expect(adz_dataset_open(dataset, &r), ADZ_E_NOT_FOUND, "open before the commit");
    expect(r == NULL, 1, "a failed open sets *out to NULL");
    expect_msg("no committed dataset", "not-committed message");

    const char *ids[] = {"r0", "r1", "r2", "r3", "r4"};
    uint64_t version = 0;
    expect(adz_dataset_commit(dataset, ids, 5, &version), ADZ_E_MISSING_PART,
           "commit expecting a writer with no part");
    expect_msg("\"r4\"", "missing-part message names the writer");
    expect(adz_dataset_open(dataset, &r), ADZ_E_NOT_FOUND, "nothing committed by the failed commit");
    expect(adz_dataset_commit(dataset, ids, 4, &version), ADZ_OK, "commit the four writers");
    expect((int)version, 1, "first version");

    expect(adz_dataset_open(dataset, &r), ADZ_OK, "dataset_open");
    if (r) check_reads(r, all, total, "dataset_open reads the concatenation");
    adz_reader_free(r);
    expect(adz_reader_open(dataset, &r), ADZ_OK, "reader_open of a dataset name");
    if (r) check_reads(r, all, total, "reader_open reads the concatenation");
    adz_reader_free(r);

    /* Bad arguments: codes and messages, never a crash. */
    adz_writer *w = (adz_writer *)0x1;
    expect(adz_dataset_part_open(NULL, "r0", 0, NULL, NULL, 1, &w), ADZ_E_ARG, "part_open NULL dataset");
    expect(w == NULL, 1, "a failed part_open sets *out to NULL");
    expect(adz_dataset_part_open(dataset, NULL, 0, NULL, NULL, 1, &w), ADZ_E_ARG, "part_open NULL id");
    expect(adz_dataset_part_open(dataset, "r0", 0, NULL, NULL, 1, NULL), ADZ_E_ARG, "part_open NULL out");
    expect(adz_dataset_part_open(dataset, "../x", 0, NULL, NULL, 1, &w), ADZ_E_ARG, "part_open bad id");
    expect_msg("writer id", "bad id message");
    expect(adz_dataset_part_open(dataset, "r0", 0, "fastest", NULL, 1, &w), ADZ_E_ARG,
           "part_open bad strategy");
    expect(adz_dataset_commit(NULL, NULL, 0, NULL), ADZ_E_ARG, "commit NULL dataset");
    expect(adz_dataset_commit(dataset, NULL, 2, NULL), ADZ_E_ARG, "commit NULL ids with n_ids 2");
    expect(adz_dataset_commit(dataset, ids, 0, NULL), ADZ_E_ARG, "commit ids with n_ids 0");
    const char *with_null[] = {"r0", NULL};
    expect(adz_dataset_commit(dataset, with_null, 2, NULL), ADZ_E_ARG, "commit a NULL id");
    expect_msg("ids[1]", "NULL id message");
    expect(adz_dataset_open(NULL, &r), ADZ_E_ARG, "dataset_open NULL");
    expect(adz_dataset_open(dataset, NULL), ADZ_E_ARG, "dataset_open NULL out");
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no-such-dataset", argv[1]);
    expect(adz_dataset_open(missing, &r), ADZ_E_NOT_FOUND, "dataset_open a missing dataset");
    expect(adz_dataset_commit(missing, ids, 1, NULL), ADZ_E_MISSING_PART, "commit a missing part");
    /* Two parts over the same bytes: the commit refuses, naming them. */
    expect(adz_dataset_part_open(dataset, "late", 10, NULL, NULL, 1, &w), ADZ_OK, "overlapping part");
    expect(adz_writer_write(w, "overlap", 7), ADZ_OK, "overlapping write");
    expect(adz_writer_close(w, NULL), ADZ_OK, "overlapping close");
    adz_writer_free(w);
    expect(adz_dataset_commit(dataset, NULL, 0, &version), ADZ_E_OVERLAP, "commit with an overlap");
    expect_msg("late.at-10.adz", "overlap message names the part");
    expect(strcmp(adz_error_name(ADZ_E_CONFLICT), "ADZ_E_CONFLICT"), 0, "error name");

    /* What `adz cat DIR/ds` must print (version 1 is still the latest). */
    char raw[4200];
    snprintf(raw, sizeof raw, "%s.raw", dataset);
    FILE *f = fopen(raw, "wb");
    expect(f && fwrite(all, 1, total, f) == total, 1, "writing ds.raw");
    if (f) fclose(f);
    for (int i = 0; i < PARTS; i++) free(data[i]);
    free(all);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
