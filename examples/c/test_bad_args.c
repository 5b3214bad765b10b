/*
 * test_bad_args.c: the C API answers bad arguments with error codes and messages, never a
 * crash: NULL pointers, text that does not parse, closed writers, a missing directory, and
 * readers given NULLs, missing files and files that are not adz. Prints "N passed, N failed" and exits non-zero on a
 * failure.
 *
 * usage: test_bad_args DIR   (a writable directory for the files it creates)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "adz.h"

static int passed, failed;

static void expect(int got, int want, const char *what) {
    if (got == want) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: got %d (%s), want %d (%s); last error: %s\n", what, got,
                adz_error_name(got), want, adz_error_name(want), adz_last_error());
    }
}

static void expect_msg(const char *needle, const char *what) {
    if (strstr(adz_last_error(), needle)) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: message \"%s\" lacks \"%s\"\n", what, adz_last_error(), needle);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_bad_args DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/bad_args.adz", argv[1]);
    adz_writer *w = (adz_writer *)0x1; /* must be reset to NULL on failure */
    char data[100] = {0};

    expect(adz_writer_open(NULL, NULL, NULL, 0, &w), ADZ_E_ARG, "open NULL path");
    expect(w == NULL, 1, "open failure sets *out to NULL");
    expect_msg("path", "open NULL path message");
    expect(adz_writer_open(path, NULL, NULL, 0, NULL), ADZ_E_ARG, "open NULL out");
    expect(adz_writer_open(path, "fastest", NULL, 0, &w), ADZ_E_ARG, "open bad strategy");
    expect_msg("throughput", "bad strategy message lists the accepted forms");
    expect(adz_writer_open(path, NULL, "warp9", 0, &w), ADZ_E_ARG, "open bad link");
    expect(adz_writer_open("/nonexistent-adz-dir/x.adz", NULL, NULL, 1, &w), ADZ_E_IO,
           "open in a missing directory");
    expect(adz_writer_open("s3://bucket/x.adz", NULL, NULL, 1, &w), ADZ_E_ARG, "open a URL");

    expect(adz_writer_write(NULL, data, sizeof data), ADZ_E_ARG, "write NULL writer");
    expect(adz_writer_advise(NULL, 0, 10, "hot"), ADZ_E_ARG, "advise NULL writer");
    expect(adz_writer_wait_all(NULL), ADZ_E_ARG, "wait_all NULL writer");
    expect(adz_writer_close(NULL, NULL), ADZ_E_ARG, "close NULL writer");
    expect(adz_write_wait(NULL), ADZ_E_ARG, "wait NULL handle");
    expect(adz_write_done(NULL), ADZ_E_ARG, "done NULL handle");
    adz_writer_free(NULL);
    adz_write_free(NULL);
    adz_reader_free(NULL);

    expect(adz_writer_open(path, "static=zstd:1", NULL, 1, &w), ADZ_OK, "open");
    expect(adz_writer_write(w, NULL, 10), ADZ_E_ARG, "write NULL buffer");
    expect(adz_writer_write(w, NULL, 0), ADZ_OK, "write nothing");
    expect(adz_writer_advise(w, 0, 10, NULL), ADZ_E_ARG, "advise NULL hint");
    expect(adz_writer_advise(w, 0, 10, "lukewarm"), ADZ_E_ARG, "advise bad hint");
    expect(adz_writer_advise(w, 10, 10, "hot"), ADZ_E_ARG, "advise empty range");
    adz_write *h = (adz_write *)0x1;
    expect(adz_writer_write_async(w, NULL, 10, &h), ADZ_E_ARG, "write_async NULL buffer");
    expect(h == NULL, 1, "write_async failure sets *out to NULL");
    expect(adz_writer_write_async(w, data, sizeof data, NULL), ADZ_E_ARG, "write_async NULL out");
    expect(adz_writer_write(w, data, sizeof data), ADZ_OK, "write");
    expect(adz_writer_write_async(w, data, sizeof data, &h), ADZ_OK, "write_async");
    expect(adz_write_wait(h), ADZ_OK, "wait");
    expect(adz_write_wait(h), ADZ_OK, "wait twice");
    expect(adz_write_done(h), 1, "done after wait");
    adz_write_free(h);
    adz_summary s;
    expect(adz_writer_close(w, &s), ADZ_OK, "close");
    expect(s.raw_bytes == 2 * sizeof data, 1, "summary counts the bytes");
    expect(adz_writer_write(w, data, sizeof data), ADZ_E_CLOSED, "write after close");
    expect_msg("closed", "closed message");
    expect(adz_writer_advise(w, 1000, 2000, "hot"), ADZ_E_CLOSED, "advise after close");
    expect(adz_writer_write_async(w, data, sizeof data, &h), ADZ_E_CLOSED, "write_async after close");
    expect(adz_writer_wait_all(w), ADZ_E_CLOSED, "wait_all after close");
    expect(adz_writer_close(w, &s), ADZ_E_CLOSED, "close twice");
    adz_writer_free(w);

    /* A writer freed without close commits nothing. */
    char path2[4096];
    snprintf(path2, sizeof path2, "%s/abandoned.adz", argv[1]);
    expect(adz_writer_open(path2, NULL, NULL, 1, &w), ADZ_OK, "open second");
    expect(adz_writer_write(w, data, sizeof data), ADZ_OK, "write second");
    adz_writer_free(w);
    FILE *f = fopen(path2, "rb");
    expect(f == NULL, 1, "an abandoned writer leaves no file");
    if (f) fclose(f);

    /* Readers: bad arguments, missing and non-adz files, then the file written above. */
    adz_reader *r = (adz_reader *)0x1;
    expect(adz_reader_open(path2, &r), ADZ_E_NOT_FOUND, "reader_open a missing file");
    expect(r == NULL, 1, "reader_open failure sets *out to NULL");
    expect(adz_reader_open(NULL, &r), ADZ_E_ARG, "reader_open NULL path");
    expect(adz_reader_open(path, NULL), ADZ_E_ARG, "reader_open NULL out");
    size_t got;
    uint64_t size;
    expect(adz_reader_pread(NULL, data, 10, 0, &got), ADZ_E_ARG, "pread NULL reader");
    expect(adz_reader_size(NULL, &size), ADZ_E_ARG, "size NULL reader");
    char plain[4096];
    snprintf(plain, sizeof plain, "%s/plain.adz", argv[1]);
    f = fopen(plain, "wb");
    if (f) {
        for (int i = 0; i < 100; i++) fputs("not an adz file\n", f);
        fclose(f);
    }
    expect(adz_reader_open(plain, &r), ADZ_E_CORRUPT, "reader_open a file that is not adz");
    expect_msg("not an adz file", "not-adz message");
    expect(adz_reader_open(path, &r), ADZ_OK, "reader_open");
    expect(adz_reader_size(r, NULL), ADZ_E_ARG, "size NULL out");
    expect(adz_reader_size(r, &size), ADZ_OK, "size");
    expect(size == 2 * sizeof data, 1, "size is the raw size");
    expect(adz_reader_pread(r, NULL, 10, 0, &got), ADZ_E_ARG, "pread NULL buffer");
    expect(adz_reader_pread(r, data, 10, 0, NULL), ADZ_E_ARG, "pread NULL got");
    expect(adz_reader_pread(r, data, sizeof data, 150, &got), ADZ_OK, "pread at the end");
    expect((int)got, 50, "pread at the end is short");
    expect(adz_reader_pread(r, data, sizeof data, 1000, &got), ADZ_OK, "pread past the end");
    expect((int)got, 0, "pread past the end reads nothing");
    adz_reader_free(r);

    expect(strlen(adz_version()) > 0, 1, "version");
    expect(strcmp(adz_error_name(ADZ_E_CORRUPT), "ADZ_E_CORRUPT"), 0, "error name");

    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
