// train.c: the native trainer. Trains the tiny Transformer (src/model) on a built-in task,
// prints progress, evaluates, and writes a safetensors checkpoint.
//   bash build.sh trainer && build/trainer --task reverse --attention softmax --steps 1500 --out r.safetensors
// (npm run train -- <the same flags>). --help lists every flag.
#include "../src/kernels/status.h"
#include "../src/model/checkpoint.h"
#include "../src/model/config.h"
#include "../src/model/transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/kernels/parallel.h"

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(void) {
    printf("usage: trainer [flags]\n"
           "  --task copy|reverse|sort|recall|translate|chars|repeat   (reverse)\n"
           "  --attention NAME      (softmax) one of the forms below with a causal form; short names\n"
           "              such as elu+1, taylor, dense, random work too\n"
           "  --<option> VALUE      the form's attentionOptions (listed with each form below);\n"
           "              --fixed is --trainable false\n"
           "  --length N --symbols N   task size (task defaults)\n"
           "  --vocab N --d-model N --heads N --layers N --d-ff N --max-len N   (model: 64 64 4 2 128 64)\n"
           "  --positional sinusoidal|learned  --norm pre|post  --arch decoder|encoder-decoder|gru|gru-attention\n"
           "              (gru archs: a GRU encoder-decoder, src/model/rnn.h; --layers defaults to 1 and must be 1)\n"
           "  --steps N (1000) --batch N (32) --lr X (2e-3) --warmup N (100) --weight-decay X (0.01) --clip X (1)\n"
           "  --block classic|llama --kv-heads N --norm-type layernorm|rmsnorm --ffn relu|swiglu --bias true|false\n"
           "  --tie-embeddings true|false --rope-theta X   (the block's switches; --positional also takes none|rope)\n"
           "  --text PATH           chars: this text instead of the built-in corpus: a file or a directory of files\n"
           "              (fortune's format: documents between lines of \"%%\"); every 10th document is held out\n"
           "  --bos                 with --text: windows start at a document's start, after a token 0\n"
           "  --repeats N           with --text: one training window in N repeats a passage of itself (12 to a\n"
           "              quarter of the window), text to learn induction from; held-out windows are left as they are\n"
           "  --threads N           (every core) threads; the same bits whatever N\n"
           "  --seed N (1) --eval-every N (100) --eval-batches N (8) --out file.safetensors --quiet\n");
    printf("attention forms (the registry, src/model/forms.c):\n");
    for (size_t i = 0; i < aw_form_count_all(); i++) {
        const aw_form *f = aw_form_at(i);
        printf("  %-26s %s%s\n", f->name, f->words.label,
               f->flags & AW_FORM_CAUSAL ? ""
               : f->decoder          ? " (no causal form: the encoder of --arch encoder-decoder)"
                                     : " (no causal form: not for a decoder)");
        for (size_t o = 0; o < f->n_options; o++)
            printf("      --%-12s (%s) %s\n", f->options[o].name, f->options[o].def ? f->options[o].def : "derived",
                   f->options[o].help);
    }
}

// The registry name of --attention: a full name, or the part after its ':' (elu+1, taylor, dense).
static const char *attention_name(const char *s) {
    if (aw_form_find(s)) return s;
    for (size_t i = 0; i < aw_form_count_all(); i++) {
        const char *colon = strchr(aw_form_at(i)->name, ':');
        if (colon && strcmp(colon + 1, s) == 0) return aw_form_at(i)->name;
    }
    return s; // an unknown name: the builder's message lists the forms
}

// 1 when some form of the registry has an option of this name.
static int is_form_option(const char *name) {
    for (size_t i = 0; i < aw_form_count_all(); i++)
        if (aw_option_find(aw_form_at(i), name) >= 0) return 1;
    return 0;
}

// --text: one file or a directory of files (fortune(6)'s format: documents separated by lines that
// hold only "%"; a file without such lines is one document). Every 10th document (the 10th, 20th,
// ... in file-name order) is held out, so no held-out text is seen in training, even in part.
typedef struct {
    char *train, *held;
    size_t n_train, n_held, cap_train, cap_held, docs, files;
} text_corpus;

static int append(char **buf, size_t *n, size_t *cap, const char *s, size_t len) {
    if (*n + len + 2 > *cap) {
        size_t c = *cap ? *cap : 1 << 16;
        while (c < *n + len + 2) c *= 2;
        char *p = realloc(*buf, c);
        if (!p) return 1;
        *buf = p, *cap = c;
    }
    memcpy(*buf + *n, s, len);
    *n += len;
    (*buf)[(*n)++] = '\n'; // documents end with a blank line
    (*buf)[(*n)++] = '\n';
    return 0;
}

static int add_file(text_corpus *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "trainer: cannot read %s\n", path), 1;
    char *data = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[1 << 16];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            char *p = realloc(data, cap);
            if (!p) return fclose(f), free(data), 1;
            data = p;
        }
        memcpy(data + n, chunk, got), n += got;
    }
    fclose(f);
    c->files++;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        const int end = i == n || (data[i] == '%' && (i == 0 || data[i - 1] == '\n') && (i + 1 == n || data[i + 1] == '\n'));
        if (!end) continue;
        size_t a = start, b = i; // trim the document's surrounding whitespace
        while (a < b && (data[a] == '\n' || data[a] == ' ' || data[a] == '\t')) a++;
        while (b > a && (data[b - 1] == '\n' || data[b - 1] == ' ' || data[b - 1] == '\t')) b--;
        if (b > a) {
            const int held = ++c->docs % 10 == 0;
            if (held ? append(&c->held, &c->n_held, &c->cap_held, data + a, b - a)
                     : append(&c->train, &c->n_train, &c->cap_train, data + a, b - a))
                return free(data), 1;
        }
        start = i + 2;
    }
    free(data);
    return 0;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int read_corpus(text_corpus *c, const char *path) {
    struct stat sb;
    if (stat(path, &sb)) return fprintf(stderr, "trainer: --text %s: no such file or directory\n", path), 1;
    if (!S_ISDIR(sb.st_mode)) return add_file(c, path);
    DIR *d = opendir(path);
    if (!d) return fprintf(stderr, "trainer: cannot list %s\n", path), 1;
    char *names[4096];
    size_t count = 0;
    for (struct dirent *e; (e = readdir(d)) && count < 4096;) {
        const size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 4 && (strcmp(e->d_name + len - 4, ".dat") == 0 || strcmp(e->d_name + len - 3, ".u8") == 0)))
            continue; // fortune's index files and its .u8 links to the same text
        names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, name_cmp);
    int st = 0;
    for (size_t i = 0; i < count; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        struct stat fs;
        if (!st && stat(full, &fs) == 0 && S_ISREG(fs.st_mode)) st = add_file(c, full);
        free(names[i]);
    }
    if (!st && (c->n_train == 0 || c->n_held == 0))
        return fprintf(stderr, "trainer: --text %s holds too few documents to hold every 10th out\n", path), 1;
    return st;
}

// --threads: the pool's workers (src/kernels/parallel.c), each in aw_threads_loop for good; the
// results are bit-identical whatever the count (the work is cut by sizes alone).
static void *worker(void *arg) {
    aw_threads_loop((int)(intptr_t)arg);
    return NULL;
}

static int start_threads(long n) {
    if (!aw_threads_built()) return 1;
    for (long i = 0; i + 1 < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)i)) return (int)(i + 1);
        pthread_detach(t);
    }
    aw_threads_set((int)n);
    for (int i = 0; i < 1000 && aw_threads() < (size_t)n; i++) usleep(1000); // the workers enter the pool
    return (int)aw_threads();
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); // progress lines appear as they come, also through a pipe
    // the model's fields go to the config builder under the names users write elsewhere
    aw_config_builder cb;
    config_builder_init(&cb);
    // the trainer's default width of the FFN (the library's is 4 dModel); a GRU has no FFN, and an
    // option it does not read is an Error, so it gets none
    int rnn = 0;
    for (int i = 1; i + 1 < argc; i++) rnn |= strcmp(argv[i], "--arch") == 0 && strncmp(argv[i + 1], "gru", 3) == 0;
    if (!rnn) config_builder_set(&cb, "dFF", "128");
    static const char *const MODEL_FLAGS[][2] = {
        {"--vocab", "vocab"}, {"--d-model", "dModel"}, {"--heads", "heads"}, {"--layers", "layers"}, {"--d-ff", "dFF"},
        {"--max-len", "maxLen"}, {"--positional", "positional"}, {"--norm", "norm"}, {"--arch", "arch"},
        {"--seed", "seed"}, {"--block", "block"}, {"--kv-heads", "kvHeads"}, {"--norm-type", "normType"},
        {"--ffn", "ffn"}, {"--bias", "bias"}, {"--tie-embeddings", "tieEmbeddings"}, {"--rope-theta", "ropeTheta"}};
    const char *text_path = NULL;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    int bos = 0;
    long repeats = 0;
    const char *attention = aw_form_at(0)->name, *out = NULL; // the registry's first form, the default
    int task = AW_TASK_REVERSE, quiet = 0, st = AW_OK;
    long length = -1, symbols = -1, steps = 1000, batch = 32, warmup = 100, eval_every = 100, eval_batches = 8;
    double lr = 2e-3, wd = 0.01, clip = 1.0;
    for (int i = 1; i < argc && !st; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int model_flag = 0;
        for (size_t f = 0; f < sizeof MODEL_FLAGS / sizeof MODEL_FLAGS[0] && v; f++)
            if (strcmp(a, MODEL_FLAGS[f][0]) == 0) st = config_builder_set(&cb, MODEL_FLAGS[f][1], v), model_flag = 1, i++;
        if (model_flag) continue;
        if (v && a[0] == '-' && a[1] == '-' && is_form_option(a + 2)) { // a form's option
            char key[64];
            snprintf(key, sizeof key, "attentionOptions.%s", a + 2);
            st = config_builder_set(&cb, key, v), i++;
            continue;
        }
#define FLAG(name) (strcmp(a, name) == 0 && v && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(), 0;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (strcmp(a, "--fixed") == 0) st = config_builder_set(&cb, "attentionOptions.trainable", "false");
        else if (FLAG("--task")) {
            if ((task = task_find(v)) < 0) return fprintf(stderr, "trainer: unknown task %s\n", v), 2;
        } else if (FLAG("--attention")) st = config_builder_set(&cb, "attention", attention = attention_name(v));
        else if (FLAG("--length")) length = atol(v);
        else if (FLAG("--symbols")) symbols = atol(v);
        else if (FLAG("--steps")) steps = atol(v);
        else if (FLAG("--batch")) batch = atol(v);
        else if (FLAG("--lr")) lr = atof(v);
        else if (FLAG("--warmup")) warmup = atol(v);
        else if (FLAG("--weight-decay")) wd = atof(v);
        else if (FLAG("--clip")) clip = atof(v);
        else if (FLAG("--eval-every")) eval_every = atol(v);
        else if (FLAG("--eval-batches")) eval_batches = atol(v);
        else if (FLAG("--out")) out = v;
        else if (FLAG("--text")) text_path = v;
        else if (FLAG("--threads")) threads = atol(v);
        else if (strcmp(a, "--bos") == 0) bos = 1;
        else if (FLAG("--repeats")) repeats = atol(v);
        else return fprintf(stderr, "trainer: unknown or incomplete flag %s (see --help)\n", a), 2;
#undef FLAG
    }
    aw_model_config c;
    if (st || (st = config_builder_finish(&cb, &c))) return fprintf(stderr, "trainer: %s\n", aw_error_message()), 2;
    aw_task_spec spec = {task, 0, 0, 0};
    const long def_len[] = {16, 16, 16, 8, 4, 64, 12}, def_sym[] = {10, 10, 10, 20, 0, 0, 24};
    spec.length = (size_t)(length > 0 ? length : def_len[task]);
    spec.symbols = (size_t)(symbols > 0 ? symbols : def_sym[task]);
    if (task == AW_TASK_CHARS && length <= 0 && spec.length > (size_t)c.max_len) spec.length = (size_t)c.max_len;
    if (threads < 1 || threads > 64) return fprintf(stderr, "trainer: --threads must be in [1, 64], got %ld\n", threads), 2;
    threads = start_threads(threads);
    text_corpus corpus = {0};
    if (repeats && !text_path) return fprintf(stderr, "trainer: --repeats goes with --text\n"), 2;
    if (text_path) {
        if (task != AW_TASK_CHARS) return fprintf(stderr, "trainer: --text is the chars task's text; add --task chars\n"), 2;
        if (read_corpus(&corpus, text_path)) return 1;
        if (task_set_text(corpus.train, corpus.n_train, corpus.held, corpus.n_held))
            return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
        task_set_text_bos(bos);
        if (repeats < 0 || repeats > 1000000)
            return fprintf(stderr, "trainer: --repeats must be 0 (none) or N in [1, 1000000], got %ld\n", repeats), 2;
        task_set_text_repeats((uint32_t)repeats);
        printf("text %s: %zu files, %zu documents; training %zu B (%zu documents), held out %zu B (every 10th "
               "document, %zu)\n", text_path, corpus.files, corpus.docs, corpus.n_train, corpus.docs - corpus.docs / 10,
               corpus.n_held, corpus.docs / 10);
    }
    aw_model *m = NULL;
    if ((st = model_create(&m, &c))) return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
    size_t T, S;
    if (model_task_dims(m, &spec, &T, &S)) return fprintf(stderr, "trainer: %s\n", aw_error_message()), model_destroy(m), 1;
    const size_t params = m->n_params;
    printf("task %s (length %zu, symbols %zu: %zu positions%s), attention %s, %zu parameters, %ld steps of %ld, "
           "%ld thread%s\n", task_name(task), spec.length, spec.symbols, T, S ? " + encoder" : "", attention, params, steps,
           batch, threads, threads > 1 ? "s" : "");
    aw_train_config tc = {(float)lr, 0.9f, 0.98f, 1e-8f, (float)wd, (float)clip};
    const double t0 = now_ms();
    double ema = -1.0, acc_ema = 0.0;
    aw_metrics mt, ev = {0};
    for (long s = 1; s <= steps; s++) {
        // linear warmup, then cosine decay to a tenth
        const double p = s <= warmup ? (double)s / (double)warmup
                                     : 0.1 + 0.9 * 0.5 * (1.0 + cos(M_PI * (double)(s - warmup) / (double)(steps - warmup + 1)));
        tc.lr = (float)(lr * p);
        if ((st = model_train_step(m, &spec, (size_t)batch, &tc, &mt))) {
            fprintf(stderr, "trainer: step %ld: %s\n", s, aw_error_message());
            model_destroy(m);
            return 1;
        }
        ema = ema < 0 ? mt.loss : 0.95 * ema + 0.05 * mt.loss;
        acc_ema = 0.95 * acc_ema + 0.05 * mt.accuracy;
        if (s % eval_every == 0 || s == steps) {
            model_evaluate(m, &spec, 64, (size_t)eval_batches, 12345, &ev);
            if (!quiet)
                printf("step %5ld  loss %.4f  acc %.4f  | eval loss %.4f acc %.4f%s  | %.2f ms/step\n", s, ema, acc_ema,
                       ev.loss, ev.accuracy, task == AW_TASK_CHARS ? "" : "", (now_ms() - t0) / (double)s);
        }
    }
    const double ms = (now_ms() - t0) / (double)steps;
    printf("final: eval loss %.4f (%.3f bits/token), accuracy %.4f, %.3f ms/step, %.1f s\n", ev.loss, ev.loss / log(2.0),
           ev.accuracy, ms, ms * (double)steps / 1e3);
    if (out) {
        size_t bytes = 0;
        uint8_t *buf = NULL;
        FILE *f = NULL;
        if (checkpoint_size(m, 0, &bytes) || !(buf = malloc(bytes)) || checkpoint_write(m, 0, buf, bytes) ||
            !(f = fopen(out, "wb")) || fwrite(buf, 1, bytes, f) != bytes) {
            fprintf(stderr, "trainer: could not write %s\n", out);
            if (f) fclose(f);
            free(buf), model_destroy(m);
            return 1;
        }
        fclose(f);
        free(buf);
        printf("wrote %s (%zu bytes)\n", out, bytes);
    }
    model_destroy(m);
    return 0;
}
