/* Write a simulation-like HDF5 file through the adz filter plugin, read it back and compare.
 *
 *   h5cc -o hdf5_write examples/c/hdf5_write.c
 *   HDF5_PLUGIN_PATH=DIR_WITH_libadz_hdf5.so ./hdf5_write out.h5 [MODE]
 *
 * MODE: "static" (zstd:3, the default), "s1" (adaptive throughput at 1GbE) or "none" (no
 * filter: an input for h5repack). The file holds a 2-D float64 field and a 1-D int32 array,
 * both chunked with partly filled edge chunks. The program links HDF5 only; HDF5 loads the
 * plugin by its filter id (429) from HDF5_PLUGIN_PATH. Exit status 0: the data read back
 * equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <hdf5.h>

#define ADZ_FILTER_ID 429
#define NX 301
#define NY 203
#define NP 100003

/* cd_values, see docs/BINDINGS.md: version, mode, codec id, level, link kB/s, S3 factor x
 * 1000, filters (0 auto: shuffle by element size). */
static const unsigned CD_STATIC[7] = {1, 0, 3, 3, 0, 0, 0};
static const unsigned CD_S1[7] = {1, 1, 0, 0, 117000, 0, 0};

static int write_dataset(hid_t file, const char *name, hid_t type, int rank, const hsize_t *dims,
                         const hsize_t *chunk, const unsigned *cd, const void *data) {
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int ok = space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0;
    if (ok && cd != NULL) {
        ok = H5Pset_filter(dcpl, ADZ_FILTER_ID, H5Z_FLAG_MANDATORY, 7, cd) >= 0;
    }
    hid_t dset = ok ? H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    ok = dset >= 0 && H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    if (dset >= 0) H5Dclose(dset);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return ok;
}

static int read_dataset(hid_t file, const char *name, hid_t type, void *out) {
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    int ok = dset >= 0 && H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
    if (dset >= 0) H5Dclose(dset);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.h5 [static|s1|none]\n", argv[0]);
        return 2;
    }
    const char *mode = argc > 2 ? argv[2] : "static";
    const unsigned *cd = NULL;
    if (strcmp(mode, "static") == 0) {
        cd = CD_STATIC;
    } else if (strcmp(mode, "s1") == 0) {
        cd = CD_S1;
    } else if (strcmp(mode, "none") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    size_t nf = (size_t)NX * NY;
    double *field = malloc(nf * sizeof *field), *field_back = malloc(nf * sizeof *field);
    int *ids = malloc(NP * sizeof *ids), *ids_back = malloc(NP * sizeof *ids);
    if (!field || !field_back || !ids || !ids_back) return 1;
    /* A smooth field with a little structure, and particle ids in blocks, as in VPIC. */
    for (size_t i = 0; i < NX; i++)
        for (size_t j = 0; j < NY; j++)
            field[i * NY + j] = sin((double)i / 17.0) * cos((double)j / 11.0) + (double)(i % 7) / 64.0;
    for (int p = 0; p < NP; p++) ids[p] = p / 3 + (p % 3) * 1000000;

    if (cd != NULL && H5Zfilter_avail(ADZ_FILTER_ID) <= 0) {
        /* Not yet loaded: HDF5 loads plugins on first use. Not an error by itself. */
    }
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) return 1;
    hsize_t fdims[2] = {NX, NY}, fchunk[2] = {64, 50};
    hsize_t pdims[1] = {NP}, pchunk[1] = {16384};
    int ok = write_dataset(file, "/field", H5T_NATIVE_DOUBLE, 2, fdims, fchunk, cd, field) &&
             write_dataset(file, "/particle_id", H5T_NATIVE_INT, 1, pdims, pchunk, cd, ids);
    H5Fclose(file);
    if (!ok) {
        fprintf(stderr, "hdf5_write: writing %s failed (is the plugin on HDF5_PLUGIN_PATH?)\n",
                argv[1]);
        return 1;
    }
    if (cd != NULL && H5Zfilter_avail(ADZ_FILTER_ID) <= 0) {
        fprintf(stderr, "hdf5_write: the adz filter (%d) is not available\n", ADZ_FILTER_ID);
        return 1;
    }

    file = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    ok = file >= 0 && read_dataset(file, "/field", H5T_NATIVE_DOUBLE, field_back) &&
         read_dataset(file, "/particle_id", H5T_NATIVE_INT, ids_back);
    hsize_t stored = 0;
    if (ok) {
        hid_t d = H5Dopen2(file, "/field", H5P_DEFAULT);
        stored = H5Dget_storage_size(d);
        H5Dclose(d);
    }
    if (file >= 0) H5Fclose(file);
    if (!ok || memcmp(field, field_back, nf * sizeof *field) != 0 ||
        memcmp(ids, ids_back, NP * sizeof *ids) != 0) {
        fprintf(stderr, "hdf5_write: %s did not read back equal\n", argv[1]);
        return 1;
    }
    printf("hdf5_write: %s (%s): field %zu -> %llu bytes, read back equal\n", argv[1], mode,
           nf * sizeof *field, (unsigned long long)stored);
    free(field);
    free(field_back);
    free(ids);
    free(ids_back);
    return 0;
}
