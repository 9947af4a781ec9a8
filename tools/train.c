// train.c: the native trainer. Trains the tiny Transformer (src/model) on a built-in task,
// prints progress, evaluates, and writes a safetensors checkpoint.
//   bash build.sh trainer && build/trainer --task reverse --attention softmax --steps 1500 --out r.safetensors
// (npm run train -- <the same flags>). --help lists every flag.
#include "../src/kernels/status.h"
#include "../src/model/checkpoint.h"
#include "../src/model/config.h"
#include "../src/model/transformer.h"
#include "tokenizer_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/kernels/parallel.h"
#include "native_threads.h"

#include <dirent.h>
#include <errno.h>
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
           "  --task copy|reverse|sort|recall|translate|chars|repeat|mqar   (reverse; mqar: multi-query recall)\n"
           "  --attention NAME      (softmax) one of the forms below with a causal form; short names\n"
           "              such as elu+1, taylor, dense, random work too\n"
           "  --layer-forms LIST    a form per layer, comma-separated (short names too), e.g.\n"
           "              gated-delta,gated-delta,gated-delta,softmax: layerForms (each with its defaults)\n"
           "  --<option> VALUE      the form's attentionOptions (listed with each form below);\n"
           "              --fixed is --trainable false\n"
           "  --length N --symbols N   task size (task defaults)\n"
           "  --vocab N --d-model N --heads N --layers N --d-ff N --max-len N   (model: 64 64 4 2 128 64)\n"
           "  --positional NAME     (sinusoidal) one of the positional encodings below\n"
           "  --norm pre|post  --arch decoder|encoder-decoder|gru|gru-attention\n"
           "              (gru archs: a GRU encoder-decoder, src/model/rnn.h; --layers defaults to 1 and must be 1)\n"
           "  --steps N (1000) --batch N (32) --lr X (2e-3) --warmup N (100) --weight-decay X (0.01) --clip X (1)\n"
           "  --block classic|llama --kv-heads N --norm-type layernorm|rmsnorm --ffn relu|swiglu --bias true|false\n"
           "  --tie-embeddings true|false --rope-theta X   (the block's switches; block llama: --positional rope)\n"
           "  --text PATH           chars: this text instead of the built-in corpus: a file or a directory of files\n"
           "              (fortune's format: documents between lines of \"%%\"); every 10th document is held out\n"
           "  --tokenizer FILE      with --text: read sub-word tokens of this byte-level BPE (tokenizer.json or\n"
           "              llama2.c's tokenizer.bin, as lib.trainTokenizer writes them) instead of characters\n"
           "  --vocab-size N        with --text: train such a BPE of N pieces (259..8192) on the training documents,\n"
           "              and write it beside --out as NAME.tokenizer.json; --vocab defaults to its size\n"
           "  --bos                 with --text: windows start at a document's start, after a token 0 (<s>: 1 with a BPE)\n"
           "  --repeats N           with --text: one training window in N repeats a passage of itself (12 to a\n"
           "              quarter of the window), text to learn induction from; held-out windows are left as they are\n"
           "  --twice N             with --text: one training window in N starts with a passage of 16 characters to\n"
           "              half the window read twice (so the distance back varies), then the text that followed it\n"
           "  --letters N           with --text: one training window in N starts with 8 to 24 distinct random\n"
           "              letters read twice, then the text (the repeat task in letters: only a copy predicts the second half)\n"
           "  --threads N           (every core) threads; the same bits whatever N\n"
           "  --init PATH           fine-tune: start from this checkpoint (its form, sizes and weights; no model\n"
           "              flags), with fresh AdamW moments and batches other than its first run's\n"
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
    printf("positional encodings (the table, src/model/positional.c):\n");
    for (int i = 0; i < AW_POSITIONAL_COUNT; i++) printf("  %-26s %s\n", AW_POSITIONALS[i].name, AW_POSITIONALS[i].label);
}

// ", 2.345 bits/char" for the chars task: per token for characters, scaled by the held-out text's
// characters per token for sub-word tokens; "" for the other tasks.
static const char *bits_note(int task, double loss, double chars_per_token) {
    static char buf[64];
    if (task != AW_TASK_CHARS) return "";
    snprintf(buf, sizeof buf, ", %.3f bits/char", loss / log(2.0) / chars_per_token);
    return buf;
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

// A flag's number: all of v, in range, or a message naming the flag (atol would read "abc" as 0).
static int parse_long(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return fprintf(stderr, "trainer: %s must be an integer in [%ld, %ld], got \"%s\"\n", flag, lo, hi, v), 2;
    return *out = x, 0;
}

static int parse_double(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    const double x = strtod(v, &end);
    if (end == v || *end || errno || !(x >= lo && x <= hi))
        return fprintf(stderr, "trainer: %s must be a number in [%g, %g], got \"%s\"\n", flag, lo, hi, v), 2;
    return *out = x, 0;
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
    const char *text_path = NULL, *tok_path = NULL;
    long vocab_size = 0; // --vocab-size: train a BPE of this many pieces
    int vocab_given = 0;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    int bos = 0;
    long repeats = 0, twice = 0, letters = 0;
    const char *attention = aw_form_at(0)->name, *out = NULL; // the registry's first form, the default
    int task = AW_TASK_REVERSE, quiet = 0, st = AW_OK, bad = 0, model_flags = 0;
    const char *init = NULL;
    long length = -1, symbols = -1, steps = 1000, batch = 32, warmup = 100, eval_every = 100, eval_batches = 8;
    enum { MAX_FORM_FLAGS = 16 };
    const char *form_opt[MAX_FORM_FLAGS][2]; // the form's options given (--name value)
    int n_form_opts = 0;
    double lr = 2e-3, wd = 0.01, clip = 1.0;
    for (int i = 1; i < argc && !st; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int model_flag = 0;
        for (size_t f = 0; f < sizeof MODEL_FLAGS / sizeof MODEL_FLAGS[0] && v; f++)
            if (strcmp(a, MODEL_FLAGS[f][0]) == 0)
                st = config_builder_set(&cb, MODEL_FLAGS[f][1], v), model_flag = 1, model_flags++, i++,
                vocab_given |= f == 0;
        if (model_flag) continue;
        if (v && a[0] == '-' && a[1] == '-' && is_form_option(a + 2)) { // a form's option
            // the config takes them after the loop, or --init's model (the ones a built form can change)
            if (n_form_opts == MAX_FORM_FLAGS) return fprintf(stderr, "trainer: more than %d form options\n", MAX_FORM_FLAGS), 2;
            form_opt[n_form_opts][0] = a + 2, form_opt[n_form_opts++][1] = v, i++;
            continue;
        }
#define FLAG(name) (strcmp(a, name) == 0 && v && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(), 0;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (strcmp(a, "--fixed") == 0) st = config_builder_set(&cb, "attentionOptions.trainable", "false");
        else if (FLAG("--task")) {
            if ((task = task_find(v)) < 0) return fprintf(stderr, "trainer: unknown task %s\n", v), 2;
        } else if (FLAG("--attention")) st = config_builder_set(&cb, "attention", attention = attention_name(v)), model_flags++;
        else if (FLAG("--layer-forms")) { // layerForms: its length, then each layer's form (the builder checks them)
            char list[512], key[48], count[16];
            snprintf(list, sizeof list, "%s", v);
            int n = 0;
            for (char *name = strtok(list, ","); name && !st; name = strtok(NULL, ","), n++) {
                snprintf(key, sizeof key, "layerForms.%d.attention", n);
                st = config_builder_set(&cb, key, attention_name(name));
            }
            snprintf(count, sizeof count, "%d", n);
            if (!st) st = config_builder_set(&cb, "layerForms", count);
            attention = v, model_flags++;
        }
        else if (FLAG("--length")) bad = parse_long(a, v, 1, 1 << 20, &length);
        else if (FLAG("--symbols")) bad = parse_long(a, v, 1, 1 << 20, &symbols);
        else if (FLAG("--steps")) bad = parse_long(a, v, 1, 1L << 30, &steps);
        else if (FLAG("--batch")) bad = parse_long(a, v, 1, 1 << 16, &batch);
        else if (FLAG("--lr")) bad = parse_double(a, v, 0, 10, &lr);
        else if (FLAG("--warmup")) bad = parse_long(a, v, 0, 1L << 30, &warmup);
        else if (FLAG("--weight-decay")) bad = parse_double(a, v, 0, 10, &wd);
        else if (FLAG("--clip")) bad = parse_double(a, v, 0, 1e9, &clip);
        else if (FLAG("--eval-every")) bad = parse_long(a, v, 1, 1L << 30, &eval_every);
        else if (FLAG("--eval-batches")) bad = parse_long(a, v, 1, 1 << 16, &eval_batches);
        else if (FLAG("--out")) out = v;
        else if (FLAG("--init")) init = v;
        else if (FLAG("--text")) text_path = v;
        else if (FLAG("--tokenizer")) tok_path = v;
        else if (FLAG("--vocab-size")) bad = parse_long(a, v, AW_BPE_VOCAB_MIN, AW_BPE_VOCAB_MAX, &vocab_size);
        else if (FLAG("--threads")) bad = parse_long(a, v, 1, 64, &threads);
        else if (strcmp(a, "--bos") == 0) bos = 1;
        else if (FLAG("--repeats")) bad = parse_long(a, v, 0, 1000000, &repeats);
        else if (FLAG("--twice")) bad = parse_long(a, v, 0, 1000000, &twice);
        else if (FLAG("--letters")) bad = parse_long(a, v, 0, 1000000, &letters);
        else return fprintf(stderr, "trainer: unknown or incomplete flag %s (see --help)\n", a), 2;
#undef FLAG
        if (bad) return bad;
    }
    // --tokenizer / --vocab-size: the text as a byte-level BPE's ids (src/model/bpe.h), read or trained on
    // the training documents before the model, whose vocab defaults to the tokenizer's size
    text_corpus corpus = {0};
    bpe_vocab bpe = {0};
    int32_t *train_ids = NULL, *held_ids = NULL;
    size_t n_train_ids = 0, n_held_ids = 0;
    double chars_per_token = 1.0; // held-out characters per held-out token: bits/char = bits/token / this
    if (tok_path || vocab_size) {
        char why[512];
        if (tok_path && vocab_size) return fprintf(stderr, "trainer: give --tokenizer FILE or --vocab-size N, not both\n"), 2;
        if (!text_path || task != AW_TASK_CHARS)
            return fprintf(stderr, "trainer: --tokenizer and --vocab-size tokenize --text; add --task chars --text PATH\n"), 2;
        if (read_corpus(&corpus, text_path)) return 1;
        const double tb = now_ms();
        if (tok_path && bpe_vocab_read(&bpe, tok_path, why, sizeof why))
            return fprintf(stderr, "trainer: --tokenizer %s: %s\n", tok_path, why), 1;
        if (vocab_size) {
            int32_t *pairs = malloc(2 * sizeof *pairs * (size_t)vocab_size);
            size_t n_merges = 0;
            if (!pairs || aw_bpe_train(pairs, &n_merges, (const uint8_t *)corpus.train, corpus.n_train, (size_t)vocab_size) ||
                bpe_vocab_from_merges(&bpe, pairs, n_merges))
                return fprintf(stderr, "trainer: --vocab-size: %s\n", pairs ? aw_error_message() : "out of memory"), 1;
            free(pairs);
        }
        aw_bpe_encoder enc;
        int32_t byte_id[256];
        for (int b = 0; b < 256; b++) byte_id[b] = AW_BPE_FIRST_BYTE + b;
        train_ids = malloc(sizeof *train_ids * (corpus.n_train + 1));
        held_ids = malloc(sizeof *held_ids * (corpus.n_held + 1));
        if (!train_ids || !held_ids || aw_bpe_encoder_init(&enc, byte_id, bpe.merges, bpe.n - AW_BPE_FIRST_MERGE, bpe.n))
            return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
        st = aw_bpe_encode(train_ids, &n_train_ids, (const uint8_t *)corpus.train, corpus.n_train, &enc);
        if (!st) st = aw_bpe_encode(held_ids, &n_held_ids, (const uint8_t *)corpus.held, corpus.n_held, &enc);
        aw_bpe_encoder_free(&enc);
        if (st) return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
        size_t held_chars = 0; // UTF-8 characters: the bytes that start one
        for (size_t i = 0; i < corpus.n_held; i++) held_chars += ((unsigned char)corpus.held[i] & 0xc0) != 0x80;
        chars_per_token = (double)held_chars / (double)n_held_ids;
        printf("tokenizer %s: %zu pieces (%.1f ms); training %zu tokens, held out %zu tokens for %zu characters "
               "(%.3f characters a token)\n", tok_path ? tok_path : "trained (--vocab-size)", bpe.n, now_ms() - tb,
               n_train_ids, n_held_ids, held_chars, chars_per_token);
        if (!vocab_given && !init) {
            char num[32];
            snprintf(num, sizeof num, "%zu", bpe.n);
            st = config_builder_set(&cb, "vocab", num);
        }
    }
    for (int o = 0; o < n_form_opts && !init && !st; o++) {
        char key[64];
        snprintf(key, sizeof key, "attentionOptions.%s", form_opt[o][0]);
        st = config_builder_set(&cb, key, form_opt[o][1]);
    }
    aw_model_config c;
    if (st || (st = config_builder_finish(&cb, &c))) return fprintf(stderr, "trainer: %s\n", aw_error_message()), 2;
    if (init && model_flags)
        return fprintf(stderr, "trainer: --init takes the model (its form and sizes) from the checkpoint; drop the model's "
                               "flags\n"), 2;
    aw_model *m = NULL;
    if (init) { // a fine-tune: the checkpoint's config and weights, fresh AdamW moments, batches of its own
        FILE *f = fopen(init, "rb");
        uint8_t *buf = NULL;
        long len = -1;
        if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)len)) ||
            fread(buf, 1, (size_t)len, f) != (size_t)len) {
            if (f) fclose(f);
            free(buf);
            return fprintf(stderr, "trainer: --init %s: cannot read the file\n", init), 1;
        }
        fclose(f);
        st = checkpoint_read_ex(&m, buf, (size_t)len, 0);
        free(buf);
        if (st) return fprintf(stderr, "trainer: --init %s: %s\n", init, aw_error_message()), 1;
        // the form's options given: those it can change once built (DSA's --stage), else an Error
        for (int o = 0; o < n_form_opts; o++)
            if (model_set_attention_option(m, form_opt[o][0], form_opt[o][1]))
                return fprintf(stderr, "trainer: --init %s: --%s: %s\n", init, form_opt[o][0], aw_error_message()),
                       model_destroy(m), 2;
        c = m->cfg;
        attention = aw_form_at((size_t)c.form)->name;
        printf("init %s: step %ld, its weights; AdamW starts afresh\n", init, m->step);
        aw_rng_seed(&m->data_rng, ((uint64_t)c.seed << 32) ^ 0xF17Eu ^ ((uint64_t)m->step << 8));
        m->step = 0;
    }
    aw_task_spec spec = {task, 0, 0, 0};
    const long def_len[AW_TASK_COUNT] = {16, 16, 16, 8, 4, 64, 12, 8}, def_sym[AW_TASK_COUNT] = {10, 10, 10, 20, 0, 0, 24, 20};
    spec.length = (size_t)(length > 0 ? length : def_len[task]);
    spec.symbols = (size_t)(symbols > 0 ? symbols : def_sym[task]);
    if (task == AW_TASK_CHARS && length <= 0 && spec.length > (size_t)c.max_len) spec.length = (size_t)c.max_len;
    if (threads > 64) threads = 64; // the default, every core
    threads = start_threads(threads);
    if ((repeats || twice || letters) && !text_path)
        return fprintf(stderr, "trainer: --repeats, --twice and --letters go with --text\n"), 2;
    if (text_path) {
        if (task != AW_TASK_CHARS) return fprintf(stderr, "trainer: --text is the chars task's text; add --task chars\n"), 2;
        if (!corpus.train && read_corpus(&corpus, text_path)) return 1;
        if (task_set_text(corpus.train, corpus.n_train, corpus.held, corpus.n_held) ||
            (train_ids && task_set_text_tokens(train_ids, n_train_ids, held_ids, n_held_ids, (int32_t)bpe.n,
                                               AW_BPE_FIRST_BYTE + '\n', 1, AW_BPE_FIRST_BYTE + 'a')))
            return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
        task_set_text_bos(bos);
        task_set_text_repeats((uint32_t)repeats);
        task_set_text_twice((uint32_t)twice);
        task_set_text_letters((uint32_t)letters);
        printf("text %s: %zu files, %zu documents; training %zu B (%zu documents), held out %zu B (every 10th "
               "document, %zu)\n", text_path, corpus.files, corpus.docs, corpus.n_train, corpus.docs - corpus.docs / 10,
               corpus.n_held, corpus.docs / 10);
    }
    if (!m && (st = model_create(&m, &c))) return fprintf(stderr, "trainer: %s\n", aw_error_message()), 1;
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
            char side[48] = ""; // a form's own side loss this step (DSA's indexer KL), when it has one
            if (mt.side_loss > 0.0) snprintf(side, sizeof side, "  side loss %.4f", mt.side_loss);
            if (!quiet)
                printf("step %5ld  loss %.4f  acc %.4f%s  | eval loss %.4f acc %.4f%s  | %.2f ms/step\n", s, ema, acc_ema,
                       side, ev.loss, ev.accuracy, bits_note(task, ev.loss, chars_per_token), (now_ms() - t0) / (double)s);
        }
    }
    const double ms = (now_ms() - t0) / (double)steps;
    printf("final: eval loss %.4f (%.3f bits/token), accuracy %.4f, %.3f ms/step, %.1f s\n", ev.loss, ev.loss / log(2.0),
           ev.accuracy, ms, ms * (double)steps / 1e3);
    if (task == AW_TASK_CHARS) // one scale for characters and sub-word tokens (scripts read the line above as it was)
        printf("final: held out %.4f bits/char (%.4f bits/token, %.4f characters a token)\n",
               ev.loss / log(2.0) / chars_per_token, ev.loss / log(2.0), chars_per_token);
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
        if (vocab_size) { // the trained tokenizer beside the model: NAME.safetensors -> NAME.tokenizer.json
            char path[4096];
            size_t len = strlen(out);
            if (len > 12 && strcmp(out + len - 12, ".safetensors") == 0) len -= 12;
            snprintf(path, sizeof path, "%.*s.tokenizer.json", (int)len, out);
            if (bpe_vocab_write_json(&bpe, path)) fprintf(stderr, "trainer: could not write %s\n", path);
            else printf("wrote %s (%zu pieces)\n", path, bpe.n);
        }
    }
    model_destroy(m);
    bpe_vocab_free(&bpe);
    free(train_ids), free(held_ids);
    return 0;
}
