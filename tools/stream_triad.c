/* A native STREAM-style referee for roofline's bandwidth ceiling.
 * Usage: stream_triad [total_bytes] [runs]
 * Prints one line: "copy <best GB/s> triad <best GB/s> read <best GB/s> ...", bytes counted as STREAM
 * does (2 arrays for copy, 3 for triad; 2 for read, s = b.c, which writes none: the suite's roof).
 * Build: cc -O3 -march=native -fopenmp. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char **argv) {
    long long total = argc > 1 ? atoll(argv[1]) : 2013265920LL;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    long long n = total / (3 * (long long)sizeof(double));
    if (n < 1024 || runs < 1) { fprintf(stderr, "stream_triad: bad size or runs\n"); return 2; }
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    if (!a || !b || !c) { fprintf(stderr, "stream_triad: out of memory\n"); return 2; }
    const double q = 3.0;
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0 + (double)(i % 7); c[i] = 0.5 * (double)(i % 5); }
    double best_copy = 1e30, best_triad = 1e30, best_read = 1e30, dot = 0.0;
    for (int r = 0; r <= runs; r++) {
        double t0 = now();
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < n; i++) a[i] = b[i];
        double t1 = now();
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < n; i++) a[i] = b[i] + q * c[i];
        double t2 = now(), s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
        for (long long i = 0; i < n; i++) s += b[i] * c[i];
        double t3 = now();
        dot = s;
        if (r > 0) {  /* the first pass is the warm-up */
            if (t1 - t0 < best_copy) best_copy = t1 - t0;
            if (t2 - t1 < best_triad) best_triad = t2 - t1;
            if (t3 - t2 < best_read) best_read = t3 - t2;
        }
    }
    double want = 0.0;
    for (long long i = 0; i < n; i++) want += b[i] * c[i];
    if (dot < want * (1 - 1e-9) || dot > want * (1 + 1e-9)) { fprintf(stderr, "stream_triad: wrong read sum\n"); return 1; }
    for (long long i = 0; i < n; i += n / 97 + 1)
        if (a[i] != b[i] + q * c[i]) { fprintf(stderr, "stream_triad: wrong result at %lld\n", i); return 1; }
    printf("copy %.3f triad %.3f read %.3f threads %d bytes %lld\n", 2.0 * n * sizeof(double) / best_copy / 1e9,
           3.0 * n * sizeof(double) / best_triad / 1e9, 2.0 * n * sizeof(double) / best_read / 1e9,
           omp_get_max_threads(), 3 * n * (long long)sizeof(double));
    return 0;
}
