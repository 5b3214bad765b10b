/*
 * jacobi_mpi.c: the Jacobi solver of jacobi.c split by rows over MPI ranks, writing ONE adz
 * dataset collectively: every N iterations each rank writes its rows of the snapshot as a
 * part of DATASET (adz_dataset_part_open at the rows' byte offset, asynchronously), and at the
 * end rank 0, after a barrier, commits the dataset once (adz_dataset_commit with the ids of
 * every rank's parts, so that a missing part fails the commit instead of leaving a gap).
 *
 * The dataset reads back (adz cat DATASET, adz_reader_open) as the serial solver's snapshots,
 * byte for byte: snapshot k is the whole N x N matrix at offset k x N x N x 8, rank 0's parts
 * hold the top boundary row too and the last rank's the bottom one. A Jacobi step reads only
 * the previous matrix, so the split changes no arithmetic.
 *
 * usage: mpirun -np P jacobi_mpi DATASET [-n SIZE] [-i ITERATIONS] [-e EVERY] [-s STRATEGY]
 *                                 [-t THREADS]
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

    const char *dataset = NULL, *strategy = NULL;
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
            default: if (rank == 0) fprintf(stderr, "jacobi_mpi: unknown option -%c\n", opt);
                MPI_Finalize(); return 2;
            }
        } else if (!dataset) {
            dataset = argv[i];
        }
    }
    if (!dataset || n < size + 2 || iterations < 1 || every < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: jacobi_mpi DATASET [-n SIZE>ranks+1] [-i ITER] [-e EVERY] "
                            "[-s STRATEGY] [-t THREADS]\n");
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

    /* This rank's span of each snapshot: its own rows, plus the boundary row above (rank 0)
     * or below (the last rank). */
    int lo = rank == 0 ? 0 : 1, hi = rank == size - 1 ? local : rows + 1;
    size_t span = (size_t)(hi - lo) * row_bytes, snap_bytes = (size_t)n * row_bytes;
    uint64_t span_offset = (uint64_t)(first - 1 + lo) * row_bytes;

    /* One part (writer) per snapshot; the one in flight on each matrix is closed before the
     * matrix is overwritten. */
    adz_writer *part[2] = {NULL, NULL};
    adz_write *pending[2] = {NULL, NULL};
    unsigned long long stored = 0;
    int rc, snapshots = 0;
    adz_summary s;
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int it = 1; it <= iterations; it++) {
        int src = (it - 1) % 2, dst = it % 2;
        double *a = m[src], *b = m[dst];
        /* Halos of the source matrix (only read while a snapshot of it may be compressed). */
        MPI_Sendrecv(a + (size_t)1 * n, n, MPI_DOUBLE, up, 0, a + (size_t)(local - 1) * n, n,
                     MPI_DOUBLE, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(a + (size_t)(local - 2) * n, n, MPI_DOUBLE, down, 1, a, n, MPI_DOUBLE, up,
                     1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (part[dst]) {
            if ((rc = adz_write_wait(pending[dst])) != ADZ_OK) die("wait", rc);
            adz_write_free(pending[dst]);
            pending[dst] = NULL;
            if ((rc = adz_writer_close(part[dst], &s)) != ADZ_OK) die("close", rc);
            stored += s.stored_bytes;
            adz_writer_free(part[dst]);
            part[dst] = NULL;
        }
        for (int li = 1; li <= rows; li++)
            for (int j = 1; j < n - 1; j++) {
                size_t c = (size_t)li * n + j;
                b[c] = 0.25 * (a[c - n] + a[c + n] + a[c - 1] + a[c + 1]);
            }
        if (it % every == 0 || it == iterations) {
            char id[64];
            snprintf(id, sizeof id, "r%d-s%d", rank, snapshots);
            uint64_t at = (uint64_t)snapshots * snap_bytes + span_offset;
            if ((rc = adz_dataset_part_open(dataset, id, at, strategy, NULL, threads, &part[dst])) !=
                ADZ_OK)
                die("part_open", rc);
            if ((rc = adz_writer_advise(part[dst], 0, UINT64_MAX, "dtype=f64")) != ADZ_OK)
                die("advise", rc);
            if ((rc = adz_writer_write_async(part[dst], b + (size_t)lo * n, span, &pending[dst])) !=
                ADZ_OK)
                die("write_async", rc);
            snapshots++;
        }
    }
    for (int k = 0; k < 2; k++) {
        if (!part[k]) continue;
        /* close waits for the asynchronous write. */
        if ((rc = adz_writer_close(part[k], &s)) != ADZ_OK) die("close", rc);
        stored += s.stored_bytes;
        adz_writer_free(part[k]);
        adz_write_free(pending[k]);
    }

    /* Every part is closed once every rank is past the barrier: rank 0 commits them all, by
     * id, as version N+1 of the dataset. */
    unsigned long long total = 0;
    MPI_Reduce(&stored, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        size_t nids = (size_t)size * snapshots;
        char (*names)[64] = malloc(nids * sizeof *names);
        const char **ids = malloc(nids * sizeof *ids);
        if (!names || !ids) die("out of memory", 0);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < snapshots; k++) {
                size_t i = (size_t)r * snapshots + k;
                snprintf(names[i], sizeof names[i], "r%d-s%d", r, k);
                ids[i] = names[i];
            }
        uint64_t version = 0;
        if ((rc = adz_dataset_commit(dataset, ids, nids, &version)) != ADZ_OK) die("commit", rc);
        printf("jacobi_mpi: %d ranks, %d x %d, %d iterations -> dataset %s version %llu: "
               "%d snapshots in %zu parts, %llu bytes stored\n",
               size, n, n, iterations, dataset, (unsigned long long)version, snapshots, nids,
               total);
        free(names);
        free(ids);
    }
    free(m[0]);
    free(m[1]);
    MPI_Finalize();
    return 0;
}
