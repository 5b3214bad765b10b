/*
 * adz.h: the adz C API. Write adz files (adaptive compression on the storage I/O path) from
 * C, C++ and Fortran programs, with the thesis' jobs: lwrite, lwrite_async, lwait, ladvise.
 *
 * Link with target/release/libadz_capi.a -lpthread -ldl -lm (or libadz_capi.so).
 * tests/header.rs checks that this header declares exactly what the library exports.
 *
 * Conventions
 *  - Every function that can fail returns ADZ_OK (0) or a negative ADZ_E_* code, and leaves
 *    a message for adz_last_error() (per thread).
 *  - NULL where a pointer is required is ADZ_E_ARG, never a crash; no panic crosses into C.
 *  - A closed writer answers ADZ_E_CLOSED until it is freed with adz_writer_free.
 *  - Handles are not safe to free twice or to use after free.
 *
 * Example
 *     adz_writer *w;
 *     if (adz_writer_open("out.adz", "keep-pace", "1GbE", 0, &w) != ADZ_OK) {
 *         fprintf(stderr, "adz: %s\n", adz_last_error());
 *         return 1;
 *     }
 *     adz_writer_advise(w, 0, UINT64_MAX, "dtype=f64");
 *     adz_write *h;
 *     adz_writer_write_async(w, matrix, bytes, &h);   // returns at once
 *     compute();                                        // matrix must stay unchanged
 *     adz_write_wait(h); adz_write_free(h);             // matrix may change again
 *     adz_summary s;
 *     adz_writer_close(w, &s);                          // commits out.adz
 *     adz_writer_free(w);
 */
#ifndef ADZ_H
#define ADZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define ADZ_OK 0
#define ADZ_E_ARG (-1)          /* NULL pointer, text that does not parse, impossible value */
#define ADZ_E_CLOSED (-2)       /* the writer was closed: only adz_writer_free is allowed */
#define ADZ_E_IO (-3)           /* reading or writing storage failed */
#define ADZ_E_CORRUPT (-4)      /* the file is damaged or not an adz file */
#define ADZ_E_WRITE_FAILED (-5) /* the write failed; nothing was committed */
#define ADZ_E_UNSUPPORTED (-6)  /* not supported by this build (reserved; nothing returns it now) */
#define ADZ_E_NOT_FOUND (-7)    /* no such file or object */
#define ADZ_E_INTERNAL (-99)    /* a bug in adz (a caught panic); the message says where */

typedef struct AdzWriter adz_writer; /* an open writer */
typedef struct AdzWrite adz_write;   /* an asynchronous write in progress */
typedef struct AdzReader adz_reader; /* a random-access reader */

/* What a write did, filled in by adz_writer_close. */
typedef struct adz_summary {
    uint64_t raw_bytes;        /* raw bytes written by the application */
    uint64_t stored_bytes;     /* bytes of the adz file */
    uint64_t frames;           /* frames (blocks) in the file */
    double seconds;            /* wall time from open to close */
    double link_bytes_per_sec; /* link speed used at the end (given or measured); 0 = unknown */
    double sink_seconds;       /* time the storage was busy */
} adz_summary;

/* Open a writer on path. strategy: NULL for "throughput", or "keep-pace", "prolong=1.5",
 * "archive", "static=zstd:3", ...; link: NULL for "auto", or "1GbE", "10GbE", "500MB/s", ...;
 * threads: 0 for one per core. Nothing appears under path until adz_writer_close succeeds. */
int adz_writer_open(const char *path, const char *strategy, const char *link, uint32_t threads,
                    adz_writer **out);

/* Hint for raw bytes start..end not yet written: "no-compress", "write-once", "hot",
 * "dtype=f64" (f32, i8..i64, u8..u64). adz_writer_advise(w, 0, UINT64_MAX, "dtype=f64")
 * before the first write covers the whole file. */
int adz_writer_advise(adz_writer *w, uint64_t start, uint64_t end, const char *hint);

/* Write len bytes; returns once they are buffered (buf may be reused at once). */
int adz_writer_write(adz_writer *w, const void *buf, size_t len);

/* Write len bytes asynchronously; returns at once with *out. buf is compressed in place (no
 * copy): keep it valid and unchanged until adz_write_wait (or adz_writer_wait_all, or
 * adz_writer_close) returns. Free *out with adz_write_free. */
int adz_writer_write_async(adz_writer *w, const void *buf, size_t len, adz_write **out);

/* Wait until the asynchronous write h is compressed; its buffer is free again. */
int adz_write_wait(adz_write *h);

/* 1 if the asynchronous write h is finished, 0 if not, or a negative code. Never blocks. */
int adz_write_done(adz_write *h);

/* Free an asynchronous write handle (the write itself goes on). NULL is ignored. */
void adz_write_free(adz_write *h);

/* Wait for every asynchronous write of w issued so far. */
int adz_writer_wait_all(adz_writer *w);

/* Finish: last block, index, wait for storage, commit. Fills *summary unless NULL. The
 * writer is closed afterwards whatever the result; free it with adz_writer_free. */
int adz_writer_close(adz_writer *w, adz_summary *summary);

/* Free a writer; one not closed is aborted: nothing is committed, no temporary file is left.
 * NULL is ignored. */
void adz_writer_free(adz_writer *w);

/* Random-access reading. adz_reader_open reads and checks the file's trailer (one request);
 * a file whose trailer is missing or damaged (its writer died) is ADZ_E_CORRUPT and the
 * message names `adz recover`, which salvages its complete frames. *out is NULL on failure. */
int adz_reader_open(const char *path, adz_reader **out);

/* The raw (decompressed) size of the file. */
int adz_reader_size(const adz_reader *r, uint64_t *size);

/* Read up to len raw bytes at offset into buf; *got = bytes read (fewer only at the end of
 * the data, 0 at or past it). Decodes only the frames the range overlaps and checks every
 * checksum; on ADZ_E_CORRUPT *got is 0 and buf is not to be used. Several threads may pread
 * on one reader at once. */
int adz_reader_pread(const adz_reader *r, void *buf, size_t len, uint64_t offset, size_t *got);

/* Free a reader. NULL is ignored. */
void adz_reader_free(adz_reader *r);

/* The message of the last failed call on this thread ("" after a success); valid until the
 * next adz call on this thread. */
const char *adz_last_error(void);

/* The name of a return code ("ADZ_E_ARG"), or "unknown". */
const char *adz_error_name(int code);

/* The library version, e.g. "0.1.0". */
const char *adz_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ADZ_H */
