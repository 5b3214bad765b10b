/*
 * jacobi_mpi.c: the Jacobi solver of jacobi.c split by rows over MPI ranks. Each rank writes
 * its own rows to its own adz file (PREFIX.RANK.adz) every N iterations, asynchronously, and
 * rank 0 writes a manifest (PREFIX.manifest) naming the files and the rows each holds.
 *
 * The result is the same as the serial solver's: a Jacobi step reads only the previous
 * matrix, so the split changes no arithmetic. Rank r's file holds, per snapshot, rows
 * first..last of the serial matrix.
 *
 * usage: mpirun -np P jacobi_mpi PREFIX [-n SIZE] [-i ITERATIONS] [-e EVERY] [-s STRATEGY]
 *                                [-t THREADS] [-r RAW_PREFIX]
 *   -r writes the same snapshots uncompressed to RAW_PREFIX.RANK.raw, for checking.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adz.h"

static void die(const char *what, int rc) {
    fprintf(stderr, "jacobi_mpi: %s: %s (%s)\n", what, adz_last_error(), adz_error_name(rc));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *prefix = NULL, *strategy = NULL, *raw_prefix = NULL;
    int n = 256, iterations = 200, every = 20;
    unsigned threads = 1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && argv[i][0] == '-' && argv[i][1] && !argv[i][2]) {
            char opt = argv[i][1];
            const char *v = argv[++i];
            switch (opt) {
            case 'n': n = atoi(v); break;
            case 'i': iterations = atoi(v); break;
            case 'e': every = atoi(v); break;
            case 's': strategy = v; break;
            case 't': threads = (unsigned)atoi(v); break;
            case 'r': raw_prefix = v; break;
            default: if (rank == 0) fprintf(stderr, "jacobi_mpi: unknown option -%c\n", opt);
                MPI_Finalize(); return 2;
            }
        } else if (!prefix) {
            prefix = argv[i];
        }
    }
    if (!prefix || n < size + 2 || iterations < 1 || every < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: jacobi_mpi PREFIX [-n SIZE>ranks+1] [-i ITER] [-e EVERY] "
                            "[-s STRATEGY] [-t THREADS] [-r RAW_PREFIX]\n");
        MPI_Finalize();
        return 2;
    }

    /* Interior rows 1..n-2 are split; each rank also holds one halo row above and below. */
    int interior = n - 2, base = interior / size, extra = interior % size;
    int first = 1 + rank * base + (rank < extra ? rank : extra);
    int rows = base + (rank < extra ? 1 : 0);
    int local = rows + 2;
    size_t cells = (size_t)local * n, row_bytes = (size_t)n * sizeof(double);
    double *m[2] = {calloc(cells, sizeof(double)), calloc(cells, sizeof(double))};
    if (!m[0] || !m[1]) die("out of memory", 0);
    for (int k = 0; k < 2; k++)
        for (int li = 0; li < local; li++) {
            int gi = first - 1 + li; /* global row */
            double h = 1.0 - (double)gi / (n - 1);
            m[k][(size_t)li * n] = h;
            if (gi == n - 1) /* the bottom row, computed exactly as jacobi.c does */
                for (int i = 0; i < n; i++)
                    m[k][(size_t)li * n + (n - 1 - i)] = 1.0 - (double)i / (n - 1);
        }

    char path[4096];
    snprintf(path, sizeof path, "%s.%d.adz", prefix, rank);
    FILE *raw = NULL;
    if (raw_prefix) {
        char rp[4096];
        snprintf(rp, sizeof rp, "%s.%d.raw", raw_prefix, rank);
        if (!(raw = fopen(rp, "wb"))) die("cannot create the raw file", 0);
    }
    adz_writer *w;
    int rc = adz_writer_open(path, strategy, NULL, threads, &w);
    if (rc != ADZ_OK) die("open", rc);
    if ((rc = adz_writer_advise(w, 0, UINT64_MAX, "dtype=f64")) != ADZ_OK) die("advise", rc);

    adz_write *pending[2] = {NULL, NULL};
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int it = 1; it <= iterations; it++) {
        int src = (it - 1) % 2, dst = it % 2;
        double *a = m[src], *b = m[dst];
        /* Halos of the source matrix (only read while a snapshot of it may be compressed). */
        MPI_Sendrecv(a + (size_t)1 * n, n, MPI_DOUBLE, up, 0, a + (size_t)(local - 1) * n, n,
                     MPI_DOUBLE, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(a + (size_t)(local - 2) * n, n, MPI_DOUBLE, down, 1, a, n, MPI_DOUBLE, up,
                     1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (pending[dst]) {
            if ((rc = adz_write_wait(pending[dst])) != ADZ_OK) die("wait", rc);
            adz_write_free(pending[dst]);
            pending[dst] = NULL;
        }
        for (int li = 1; li <= rows; li++)
            for (int j = 1; j < n - 1; j++) {
                size_t c = (size_t)li * n + j;
                b[c] = 0.25 * (a[c - n] + a[c + n] + a[c - 1] + a[c + 1]);
            }
        if (it % every == 0 || it == iterations) {
            const double *own = b + (size_t)n; /* this rank's rows, without halos */
            if ((rc = adz_writer_write_async(w, own, rows * row_bytes, &pending[dst])) != ADZ_OK)
                die("write_async", rc);
            if (raw && fwrite(own, row_bytes, rows, raw) != (size_t)rows)
                die("cannot write the raw file", 0);
        }
    }
    if ((rc = adz_writer_wait_all(w)) != ADZ_OK) die("wait_all", rc);
    for (int k = 0; k < 2; k++) adz_write_free(pending[k]);
    adz_summary s;
    if ((rc = adz_writer_close(w, &s)) != ADZ_OK) die("close", rc);
    adz_writer_free(w);
    if (raw) fclose(raw);

    /* Rank 0 writes the manifest once every rank's file is committed. */
    int ranges[2] = {first, rows};
    int *all = rank == 0 ? malloc(sizeof(int) * 2 * size) : NULL;
    unsigned long long stored = s.stored_bytes, total = 0;
    MPI_Gather(ranges, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Reduce(&stored, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char mp[4096];
        snprintf(mp, sizeof mp, "%s.manifest", prefix);
        FILE *mf = fopen(mp, "w");
        if (!mf) die("cannot create the manifest", 0);
        fprintf(mf, "# adz jacobi_mpi manifest: %d x %d doubles, %d iterations, every %d\n", n, n,
                iterations, every);
        fprintf(mf, "# file first_row rows\n");
        for (int r = 0; r < size; r++)
            fprintf(mf, "%s.%d.adz %d %d\n", prefix, r, all[2 * r], all[2 * r + 1]);
        if (fclose(mf) != 0) die("cannot write the manifest", 0);
        printf("jacobi_mpi: %d ranks, %d x %d, %d iterations -> %d files, %llu bytes, manifest %s\n",
               size, n, n, iterations, size, total, mp);
        free(all);
    }
    free(m[0]);
    free(m[1]);
    MPI_Finalize();
    return 0;
}
