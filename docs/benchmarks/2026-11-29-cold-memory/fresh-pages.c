/* Touch N MiB of fresh anonymous memory, one write per 4 KiB page, and time it; then a fixed
 * integer loop, which needs no memory, as a check that the CPU itself is not slower.
 * usage: fresh-pages MIB HUGE   (HUGE=1: 2 MiB-aligned, madvise(MADV_HUGEPAGE)) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MIB HUGE\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)atoi(argv[1]) << 20, align = 2 << 20;
    int huge = atoi(argv[2]);
    double t0 = now();
    char *m = mmap(0, n + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    char *p = (char *)(((size_t)m + align - 1) & ~(align - 1));
    if (huge) madvise(p, n, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    double t1 = now();
    volatile unsigned x = 1;
    for (long i = 0; i < 50000000; i++) x = x * 1664525u + 1013904223u;
    double t2 = now();
    printf("%s %zu MiB: touch %.1f ms (%.2f us per 4 KiB), compute %.1f ms\n",
           huge ? "huge" : "4k  ", n >> 20, (t1 - t0) * 1e3, (t1 - t0) * 1e6 / (n / 4096),
           (t2 - t1) * 1e3);
    return 0;
}
