// train.c: the native trainer. Trains the tiny Transformer (src/model) on a built-in task,
// prints progress, evaluates, and writes a safetensors checkpoint.
//   bash build.sh trainer && build/trainer --task reverse --attention softmax --steps 1500 --out r.safetensors
// (npm run train -- <the same flags>). --help lists every flag.
#include "../src/kernels/status.h"
#include "../src/model/checkpoint.h"
#include "../src/model/transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const TASKS[] = {"copy", "reverse", "sort", "recall", "translate", "chars"};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(void) {
    printf("usage: trainer [flags]\n"
           "  --task copy|reverse|sort|recall|translate|chars   (reverse)\n"
           "  --attention softmax | linear:elu+1 | linear:relu | linear:taylor | synth:dense | synth:random |\n"
           "              synth:factorized-dense | synth:factorized-random | synth:mixture   (softmax)\n"
           "              (short names: elu+1, relu, taylor, dense, random, ...)\n"
           "  --fixed               synthesizer random tables not trained\n"
           "  --components a,b      mixture components (random,dot)\n"
           "  --length N --symbols N   task size (task defaults)\n"
           "  --vocab N --d-model N --heads N --layers N --d-ff N --max-len N   (model: 64 64 4 2 128 64)\n"
           "  --positional sinusoidal|learned  --norm pre|post  --arch decoder|encoder-decoder\n"
           "  --steps N (1000) --batch N (32) --lr X (2e-3) --warmup N (100) --weight-decay X (0.01) --clip X (1)\n"
           "  --seed N (1) --eval-every N (100) --eval-batches N (8) --out file.safetensors --quiet\n");
}

static int parse_attention(const char *s, aw_model_config *c) {
    static const char *const FEATS[] = {"elu+1", "relu", "efficient", "taylor"};
    static const char *const VARS[] = {"dense", "random", "factorized-dense", "factorized-random", "mixture"};
    if (strcmp(s, "softmax") == 0) return c->attention = AW_FORM_SOFTMAX, 1;
    const char *name = s;
    if (strncmp(s, "linear:", 7) == 0) name = s + 7;
    else if (strncmp(s, "synth:", 6) == 0) name = s + 6;
    for (int i = 0; i < 4; i++)
        if (strcmp(name, FEATS[i]) == 0 && strncmp(s, "synth:", 6) != 0) return c->attention = AW_FORM_LINEAR, c->feature = i, 1;
    for (int i = 0; i < 5; i++)
        if (strcmp(name, VARS[i]) == 0 && strncmp(s, "linear:", 7) != 0)
            return c->attention = AW_FORM_SYNTHESIZER, c->synth.variant = i, 1;
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); // progress lines appear as they come, also through a pipe
    aw_model_config c = {0};
    c.vocab = 64, c.d_model = 64, c.heads = 4, c.layers = 2, c.d_ff = 128, c.max_len = 64, c.seed = 1;
    c.synth.trainable = 1, c.synth.k = 8;
    const char *attention = "softmax", *out = NULL, *components = "random,dot";
    int task = AW_TASK_REVERSE, quiet = 0;
    long length = -1, symbols = -1, steps = 1000, batch = 32, warmup = 100, eval_every = 100, eval_batches = 8;
    double lr = 2e-3, wd = 0.01, clip = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(name) (strcmp(a, name) == 0 && v && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(), 0;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (strcmp(a, "--fixed") == 0) c.synth.trainable = 0;
        else if (FLAG("--task")) {
            task = -1;
            for (int t = 0; t < AW_TASK_COUNT; t++)
                if (strcmp(v, TASKS[t]) == 0) task = t;
            if (task < 0) return fprintf(stderr, "trainer: unknown task %s\n", v), 2;
        } else if (FLAG("--attention")) attention = v;
        else if (FLAG("--components")) components = v;
        else if (FLAG("--length")) length = atol(v);
        else if (FLAG("--symbols")) symbols = atol(v);
        else if (FLAG("--vocab")) c.vocab = atoi(v);
        else if (FLAG("--d-model")) c.d_model = atoi(v);
        else if (FLAG("--heads")) c.heads = atoi(v);
        else if (FLAG("--layers")) c.layers = atoi(v);
        else if (FLAG("--d-ff")) c.d_ff = atoi(v);
        else if (FLAG("--max-len")) c.max_len = atoi(v);
        else if (FLAG("--positional")) c.positional = strcmp(v, "learned") == 0;
        else if (FLAG("--norm")) c.norm = strcmp(v, "post") == 0;
        else if (FLAG("--arch")) c.arch = strcmp(v, "encoder-decoder") == 0;
        else if (FLAG("--steps")) steps = atol(v);
        else if (FLAG("--batch")) batch = atol(v);
        else if (FLAG("--lr")) lr = atof(v);
        else if (FLAG("--warmup")) warmup = atol(v);
        else if (FLAG("--weight-decay")) wd = atof(v);
        else if (FLAG("--clip")) clip = atof(v);
        else if (FLAG("--seed")) c.seed = (uint32_t)atol(v);
        else if (FLAG("--eval-every")) eval_every = atol(v);
        else if (FLAG("--eval-batches")) eval_batches = atol(v);
        else if (FLAG("--out")) out = v;
        else return fprintf(stderr, "trainer: unknown or incomplete flag %s (see --help)\n", a), 2;
#undef FLAG
    }
    if (!parse_attention(attention, &c)) return fprintf(stderr, "trainer: unknown attention %s\n", attention), 2;
    if (c.attention == AW_FORM_SYNTHESIZER && c.synth.variant == AW_SYNTH_FACTORIZED_DENSE) { // a * b = max_len
        size_t a = 1;
        while ((a + 1) * (a + 1) <= (size_t)c.max_len) a++;
        while ((size_t)c.max_len % a) a--;
        c.synth.a = a, c.synth.b = (size_t)c.max_len / a;
    }
    if (c.attention == AW_FORM_SYNTHESIZER && c.synth.variant == AW_SYNTH_MIXTURE) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", components);
        for (char *t = strtok(buf, ","); t && c.synth.n_components < AW_SYNTH_MAX_COMPONENTS; t = strtok(NULL, ",")) {
            aw_model_config tmp = c;
            if (strcmp(t, "dot") == 0) c.synth.components[c.synth.n_components++] = AW_SYNTH_DOT;
            else if (parse_attention(t, &tmp) && tmp.attention == AW_FORM_SYNTHESIZER)
                c.synth.components[c.synth.n_components++] = tmp.synth.variant;
            else return fprintf(stderr, "trainer: unknown mixture component %s\n", t), 2;
        }
    }
    aw_task_spec spec = {task, 0, 0, 0};
    const long def_len[] = {16, 16, 16, 8, 4, 64}, def_sym[] = {10, 10, 10, 20, 0, 0};
    spec.length = (size_t)(length > 0 ? length : def_len[task]);
    spec.symbols = (size_t)(symbols > 0 ? symbols : def_sym[task]);
    if (task == AW_TASK_CHARS && length <= 0 && spec.length > (size_t)c.max_len) spec.length = (size_t)c.max_len;
    aw_model *m = NULL;
    int st = model_create(&m, &c);
    if (st) return fprintf(stderr, "trainer: the model config was rejected (status %d)\n", st), 1;
    size_t T, S;
    if (model_task_dims(m, &spec, &T, &S))
        return fprintf(stderr, "trainer: task %s (length %zu, symbols %zu) does not fit this model (vocab %d, max-len %d, arch)\n",
                       TASKS[task], spec.length, spec.symbols, c.vocab, c.max_len),
               model_destroy(m), 1;
    size_t params = m->n_params;
    for (size_t i = 0; i < m->n_synth; i++) params += m->synths[i]->n_params;
    printf("task %s (length %zu, symbols %zu: %zu positions%s), attention %s, %zu parameters, %ld steps of %ld\n",
           TASKS[task], spec.length, spec.symbols, T, S ? " + encoder" : "", attention, params, steps, batch);
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
            fprintf(stderr, "trainer: step %ld failed with status %d\n", s, st);
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
        if (checkpoint_size(m, &bytes) || !(buf = malloc(bytes)) || checkpoint_write(m, buf, bytes) ||
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
