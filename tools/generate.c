// generate.c: the native yardstick for generation. Loads a safetensors checkpoint (the library's
// own format: bench/generate.bench.js writes the model it times in wasm, so both decode the same
// weights) and generates greedily with the KV cache through the same C sources as the wasm build
// (model_generate), built natively (bash build.sh generate: gcc -O3 -march=native, the pool's
// pthreads), then measures a copy and a read bandwidth: what a decoder that streams every weight
// once per token is bounded by. Prints one JSON line per measurement, for the benchmark to read:
//   {"round":r,"ttftMs":..,"tokPerSec":..,"threads":n,"workerItems":..,"first":[16 tokens]}   per round
//     (workerItems: items of parallel work the pool's workers, not the caller, ran in the timed calls)
//   {"copyGBs":..,"readGBs":..,"readAllGBs":..,"threads":n,"bytes":..}   with --copy-mib (readAllGBs: on n threads)
// Timing as the benchmark's measure(): a warm call of 4 tokens, the prompt alone (time to first
// token), then prompt + tokens, each `reps` times; tokens/s over the tokens after the first.
//   build/generate model.safetensors --threads 2 --prompt 32 --tokens 100 --rounds 3 --copy-mib 256
#include "../src/kernels/parallel.h"
#include "native_threads.h"
#include "../src/kernels/status.h"
#include "../src/model/checkpoint.h"
#include "../src/model/transformer.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int parse_long(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    const long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || errno || x < lo || x > hi)
        return fprintf(stderr, "generate: %s must be an integer in [%ld, %ld], got \"%s\"\n", flag, lo, hi, v ? v : ""), 2;
    return *out = x, 0;
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n)
            free(buf), buf = NULL;
        *len = n > 0 ? (size_t)n : 0;
    }
    fclose(f);
    return buf;
}

float aw_bench_stream(float *dst, const float *src, int32_t n, int32_t mode, int32_t reps); // src/api/api_bench.c

// Bandwidth in GB/s of aw_bench_stream's mode (0: memcpy, bytes copied per second, each read once
// and written once; 1: a read stream; 2: the read stream cut over the pool's threads) over two buffers of `bytes` each (well past the last-level
// cache): the best of `reps` passes, after one that faults the pages in. The same C code runs in
// the wasm build (bench/generate.bench.js), so the two columns compare like for like.
static double stream_gbs(size_t bytes, int mode, int reps) {
    const size_t n = bytes / sizeof(float);
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    if (!a || !b || n > 0x7fffffff) return free(a), free(b), 0.0;
    for (size_t i = 0; i < n; i++) a[i] = 1.0f, b[i] = 2.0f;
    double best = 0.0;
    volatile float sink = 0.0f; // the passes are used
    for (int r = 0; r < reps; r++) {
        const double t0 = now_ms();
        sink += aw_bench_stream(b, a, (int32_t)n, mode, 1);
        const double gbs = (double)bytes / ((now_ms() - t0) * 1e6);
        if (gbs > best) best = gbs;
    }
    free(a), free(b);
    return best;
}

// readAllGBs: the read stream cut over the pool's threads (mode 2), what a decoder on all of them can reach.
static void print_bandwidths(size_t bytes) {
    printf("{\"copyGBs\":%.3f,\"readGBs\":%.3f,\"readAllGBs\":%.3f,\"threads\":%zu,\"bytes\":%zu}\n", stream_gbs(bytes, 0, 5),
           stream_gbs(bytes, 1, 5), stream_gbs(bytes, 2, 5), aw_threads(), bytes);
}

static int generate(aw_model *m, const int32_t *prompt, size_t np, size_t max_new, int32_t *out, size_t *n) {
    const int st = model_generate(m, out, n, max_new, prompt, np, NULL, 0, 0.0f, 0, 1, -1, 1);
    if (st) fprintf(stderr, "generate: %s\n", aw_error_message());
    return st;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: generate [MODEL.safetensors] [--threads N (1)] [--prompt N (32)] [--tokens N (100)] [--rounds N (1)]\n"
               "                [--reps N (1): each timed call N times, for small models]\n"
               "                [--copy-mib N (0: no bandwidths; without a model, only they are measured)]\n");
        return argc < 2 ? 2 : 0;
    }
    const int have_model = strncmp(argv[1], "--", 2) != 0;
    long threads = 1, np = 32, tokens = 100, rounds = 1, reps = 1, copy_mib = 0;
    for (int i = have_model ? 2 : 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad;
        if (strcmp(a, "--threads") == 0) bad = parse_long(a, v, 1, 64, &threads);
        else if (strcmp(a, "--prompt") == 0) bad = parse_long(a, v, 1, 1 << 20, &np);
        else if (strcmp(a, "--tokens") == 0) bad = parse_long(a, v, 2, 1 << 20, &tokens);
        else if (strcmp(a, "--rounds") == 0) bad = parse_long(a, v, 1, 1000, &rounds);
        else if (strcmp(a, "--reps") == 0) bad = parse_long(a, v, 1, 100000, &reps);
        else if (strcmp(a, "--copy-mib") == 0) bad = parse_long(a, v, 0, 1 << 14, &copy_mib);
        else bad = (fprintf(stderr, "generate: unknown flag %s (--help lists them)\n", a), 2);
        if (bad) return bad;
    }
    if (!have_model) {
        if (copy_mib == 0) return fprintf(stderr, "generate: no model and no --copy-mib: nothing to measure\n"), 2;
        start_threads(threads);
        print_bandwidths((size_t)copy_mib << 20);
        return 0;
    }
    size_t len = 0;
    uint8_t *buf = read_file(argv[1], &len);
    if (!buf) return fprintf(stderr, "generate: cannot read %s\n", argv[1]), 1;
    aw_model *m = NULL;
    if (checkpoint_read_ex(&m, buf, len, 1)) {
        fprintf(stderr, "generate: %s: %s\n", argv[1], aw_error_message());
        free(buf);
        return 1;
    }
    free(buf);
    const int ran = start_threads(threads);
    if (ran != threads) fprintf(stderr, "generate: %ld threads asked, %d run\n", threads, ran);
    const size_t V = (size_t)m->cfg.vocab, L = (size_t)m->cfg.max_len;
    if ((size_t)np + (size_t)tokens > L + 1)
        return fprintf(stderr, "generate: prompt %ld + tokens %ld is past the model's maxLen %zu\n", np, tokens, L), 2;
    // the benchmark's prompt: 1 + (i * 7919) mod (vocab - 1)
    int32_t *prompt = malloc((size_t)np * sizeof(int32_t)), *out = malloc((size_t)tokens * sizeof(int32_t));
    if (!prompt || !out) return fprintf(stderr, "generate: out of memory\n"), 1;
    for (long i = 0; i < np; i++) prompt[i] = V > 1 ? (int32_t)(1 + ((size_t)i * 7919) % (V - 1)) : 0;
    int st = 0;
    for (long r = 0; r < rounds && !st; r++) {
        size_t n = 0;
        if ((st = generate(m, prompt, (size_t)np, 4, out, &n))) break; // warm
        const size_t items0 = aw_threads_worker_items();
        const double t0 = now_ms();
        for (long i = 0; i < reps && !st; i++) st = generate(m, prompt, (size_t)np, 1, out, &n);
        const double t1 = now_ms();
        for (long i = 0; i < reps && !st; i++) st = generate(m, prompt, (size_t)np, (size_t)tokens, out, &n);
        if (st) break;
        const double t2 = now_ms(), ttft = (t1 - t0) / (double)reps, all = (t2 - t1) / (double)reps;
        // the decode steps' time is the whole run's less the first token's; on a busy machine the two
        // timings can cross (a short run slowed more than the long one): then the whole run's rate
        const double decode = all > ttft ? all - ttft : all, steps = all > ttft ? (double)(tokens - 1) : (double)tokens;
        printf("{\"round\":%ld,\"ttftMs\":%.4f,\"tokPerSec\":%.3f,\"threads\":%d,\"workerItems\":%zu,\"first\":[", r,
               ttft, steps / (decode / 1000.0), ran, aw_threads_worker_items() - items0);
        for (size_t i = 0; i < n && i < 16; i++) printf("%s%d", i ? "," : "", (int)out[i]); // the first 16 tokens
        printf("]}\n");
        fflush(stdout);
    }
    if (!st && copy_mib > 0) print_bandwidths((size_t)copy_mib << 20);
    free(prompt), free(out);
    model_destroy(m);
    return st ? 1 : 0;
}
