/*
 * jacobi.c: a Jacobi solver for the Laplace equation (the partdiff pattern) that writes its
 * matrix through adz every N iterations, asynchronously, while it goes on computing.
 *
 * Two matrices alternate as source and target. After an iteration that writes a snapshot, the
 * matrix just computed is handed to adz_writer_write_async and is only read by the next
 * iteration; before the iteration after that overwrites it, the program waits for the write
 * (adz_write_wait). So compression overlaps one iteration of computation and no copy is made.
 *
 * usage: jacobi OUT.adz [-n SIZE] [-i ITERATIONS] [-e EVERY] [-s STRATEGY] [-l LINK]
 *               [-t THREADS] [-r RAW_OUT]
 *   -r writes the same snapshots uncompressed to RAW_OUT, for checking the adz file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adz.h"

static void die(const char *what, int rc) {
    fprintf(stderr, "jacobi: %s: %s (%s)\n", what, adz_last_error(), adz_error_name(rc));
    exit(1);
}

int main(int argc, char **argv) {
    const char *out = NULL, *strategy = NULL, *link = NULL, *raw_out = NULL;
    int n = 256, iterations = 200, every = 20;
    unsigned threads = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && argv[i][0] == '-' && argv[i][1] && !argv[i][2]) {
            char opt = argv[i][1];
            const char *v = argv[++i];
            switch (opt) {
            case 'n': n = atoi(v); break;
            case 'i': iterations = atoi(v); break;
            case 'e': every = atoi(v); break;
            case 's': strategy = v; break;
            case 'l': link = v; break;
            case 't': threads = (unsigned)atoi(v); break;
            case 'r': raw_out = v; break;
            default: fprintf(stderr, "jacobi: unknown option -%c\n", opt); return 2;
            }
        } else if (!out) {
            out = argv[i];
        } else {
            fprintf(stderr, "usage: jacobi OUT.adz [-n SIZE] [-i ITER] [-e EVERY] [-s STRATEGY] "
                            "[-l LINK] [-t THREADS] [-r RAW_OUT]\n");
            return 2;
        }
    }
    if (!out || n < 3 || iterations < 1 || every < 1) {
        fprintf(stderr, "usage: jacobi OUT.adz [-n SIZE>=3] [-i ITER>=1] [-e EVERY>=1] ...\n");
        return 2;
    }

    size_t cells = (size_t)n * (size_t)n, bytes = cells * sizeof(double);
    double *m[2] = {calloc(cells, sizeof(double)), calloc(cells, sizeof(double))};
    if (!m[0] || !m[1]) {
        fprintf(stderr, "jacobi: out of memory\n");
        return 1;
    }
    /* Boundary as in partdiff's second interference function: a ramp on the left and bottom
     * edges, 0 elsewhere; both matrices carry it. */
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            double h = 1.0 - (double)i / (n - 1);
            m[k][(size_t)i * n] = h;
            m[k][(size_t)(n - 1) * n + (n - 1 - i)] = h;
        }

    FILE *raw = NULL;
    if (raw_out && !(raw = fopen(raw_out, "wb"))) {
        perror(raw_out);
        return 1;
    }

    adz_writer *w;
    int rc = adz_writer_open(out, strategy, link, threads, &w);
    if (rc != ADZ_OK) die("open", rc);
    if ((rc = adz_writer_advise(w, 0, UINT64_MAX, "dtype=f64")) != ADZ_OK) die("advise", rc);

    adz_write *pending[2] = {NULL, NULL}; /* the write in flight on each matrix */
    int snapshots = 0;
    for (int it = 1; it <= iterations; it++) {
        int src = (it - 1) % 2, dst = it % 2;
        /* dst is about to be overwritten: its snapshot must be compressed by now. */
        if (pending[dst]) {
            if ((rc = adz_write_wait(pending[dst])) != ADZ_OK) die("wait", rc);
            adz_write_free(pending[dst]);
            pending[dst] = NULL;
        }
        double *a = m[src], *b = m[dst];
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                size_t c = (size_t)i * n + j;
                b[c] = 0.25 * (a[c - n] + a[c + n] + a[c - 1] + a[c + 1]);
            }
        if (it % every == 0 || it == iterations) {
            if ((rc = adz_writer_write_async(w, b, bytes, &pending[dst])) != ADZ_OK)
                die("write_async", rc);
            if (raw && fwrite(b, 1, bytes, raw) != bytes) {
                perror(raw_out);
                return 1;
            }
            snapshots++;
        }
    }
    if ((rc = adz_writer_wait_all(w)) != ADZ_OK) die("wait_all", rc);
    for (int k = 0; k < 2; k++) adz_write_free(pending[k]);

    adz_summary s;
    if ((rc = adz_writer_close(w, &s)) != ADZ_OK) die("close", rc);
    adz_writer_free(w);
    if (raw && fclose(raw) != 0) {
        perror(raw_out);
        return 1;
    }
    printf("jacobi: %d x %d, %d iterations, %d snapshots -> %s: %llu -> %llu bytes "
           "(ratio %.2f), %llu frames\n",
           n, n, iterations, snapshots, out, (unsigned long long)s.raw_bytes,
           (unsigned long long)s.stored_bytes,
           s.stored_bytes ? (double)s.raw_bytes / (double)s.stored_bytes : 0.0,
           (unsigned long long)s.frames);
    free(m[0]);
    free(m[1]);
    return 0;
}
