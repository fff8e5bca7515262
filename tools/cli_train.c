/* cli_train.c - `rlx train`: trains a vision model with a training step
 * compiled by rlx_compile_train (SGD, momentum or Adam), shuffling each
 * epoch from the seed, shows progress on stderr (loading, compiling, every
 * --log-every steps of each epoch: step, elapsed time, samples/s and the
 * running loss; evaluating; one line updated in place on a terminal, plain
 * lines otherwise) and prints the settings, each epoch's summary and the
 * test accuracy on stdout.
 * mnist-cnn ([1,28,28]) and mnist-mlp ([784]) train on Fashion-MNIST (the
 * 28x28 images are laid out the same for both); cifar-cnn and resnet take
 * [3,32,32] inputs, for which there is no data here, so they train on a
 * fixed synthetic set (rlx_vision_synthetic_batch) and their accuracy only
 * shows that the loop runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define SYNTH_TRAIN 2048
#define SYNTH_TEST 512
#define SYNTH_MAX 65536 /* synthetic training samples at most (--limit) */
#define EVAL_BATCH 500
#define LOSS_EMA 0.05 /* weight of the newest step in the running loss */
#define PROGRESS_TTY_S 0.1 /* seconds between in-place updates on a terminal */

typedef struct {
  const char *model, *data_dir;
  long epochs, batch, limit;
  long log_every; /* a progress line every this many steps (0: a tenth of an epoch) */
  double lr; /* 0: the optimizer's default */
  rlx_optimizer_kind optimizer;
  int cosine; /* lr follows half a cosine from lr to 0 over all steps */
  uint64_t seed;
} train_opts;

/* Samples as the model takes them: count x sample_len floats, labels. */
typedef struct {
  int32_t count;
  size_t sample_len;
  float *x;
  int32_t *labels;
  rlx_dataset ds; /* owner when loaded from IDX files */
} sample_set;

static void set_free(sample_set *s) {
  if (s->ds.count) {
    rlx_dataset_free(&s->ds);
  } else {
    free(s->x);
    free(s->labels);
  }
  memset(s, 0, sizeof *s);
}

static const char *optimizer_name(rlx_optimizer_kind k) {
  return k == RLX_OPT_SGD ? "sgd" : k == RLX_OPT_MOMENTUM ? "momentum" : "adam";
}

#define DEFAULT_EPOCHS 2
#define DEFAULT_BATCH 16
#define DEFAULT_SEED 1
#define LR_SGD 0.1
#define LR_MOMENTUM 0.01
#define LR_ADAM 0.003

static double default_lr(rlx_optimizer_kind k) {
  return k == RLX_OPT_SGD ? LR_SGD : k == RLX_OPT_MOMENTUM ? LR_MOMENTUM : LR_ADAM;
}

enum { O_MODEL, O_EPOCHS, O_BATCH, O_LR, O_OPTIMIZER, O_SCHEDULE, O_SEED, O_LIMIT, O_DATA, O_LOG_EVERY, O_THREADS, O_END };
static const cli_option options[] = {
    [O_MODEL] = {"--model", "-m", "M", CLI_REQUIRED, "the vision model to train (rlx info lists them)"},
    [O_EPOCHS] = {"--epochs", NULL, "E", CLI_OPTIONAL, "passes over the training set (default "
                  CLI_STR(DEFAULT_EPOCHS) ")"},
    [O_BATCH] = {"--batch", NULL, "B", CLI_OPTIONAL, "samples per step (default " CLI_STR(DEFAULT_BATCH) ")"},
    [O_LR] = {"--lr", NULL, "LR", CLI_OPTIONAL, "the learning rate (default " CLI_STR(LR_SGD)
              " for sgd, " CLI_STR(LR_MOMENTUM) " for momentum, " CLI_STR(LR_ADAM) " for adam)"},
    [O_OPTIMIZER] = {"--optimizer", NULL, "sgd|momentum|adam", CLI_OPTIONAL, "the optimizer (default adam)"},
    [O_SCHEDULE] = {"--schedule", NULL, "cosine|constant", CLI_OPTIONAL,
                    "cosine: the learning rate falls along half a cosine to 0 over all steps; constant: it stays "
                    "(default cosine)"},
    [O_SEED] = {"--seed", NULL, "S", CLI_OPTIONAL, "seeds the initial weights and the shuffling (default "
                CLI_STR(DEFAULT_SEED) ")"},
    [O_LIMIT] = {"--limit", NULL, "N", CLI_OPTIONAL, "train on the first N samples only"},
    [O_DATA] = {"--data", NULL, "DIR", CLI_OPTIONAL, "the Fashion-MNIST files (default $RLX_DATA_DIR, else "
                DEFAULT_DATA_DIR ")"},
    [O_LOG_EVERY] = {"--log-every", NULL, "N", CLI_OPTIONAL, "a progress line every N steps (default: a tenth of "
                     "an epoch)"},
    [O_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [O_END] = {NULL},
};

static int cli_train(int argc, char **argv);
const cli_command cli_train_command = {
    "train", cli_train, "train a vision model and print its test accuracy",
    "Trains a vision model with a training step compiled by rlx_compile_train, shuffling each epoch from the "
    "seed, and prints the settings, each epoch's mean loss and the test accuracy on stdout; progress goes to "
    "stderr. mnist-cnn and mnist-mlp train on Fashion-MNIST; cifar-cnn and resnet take 3x32x32 images, for "
    "which there is no data here, so they train on a fixed synthetic set and their accuracy only shows that "
    "the loop runs.",
    options, NULL};

static int parse_train(int argc, char **argv, train_opts *o) {
  memset(o, 0, sizeof *o);
  o->epochs = DEFAULT_EPOCHS;
  o->batch = DEFAULT_BATCH;
  o->optimizer = RLX_OPT_ADAM;
  o->cosine = 1;
  o->seed = DEFAULT_SEED;
  const char *env = getenv("RLX_DATA_DIR");
  o->data_dir = env && env[0] ? env : DEFAULT_DATA_DIR;
  cli_args a;
  cli_args_init(&a, &cli_train_command, argc, argv);
  while (cli_args_next(&a)) {
    const char *v;
    int ok = 0;
    switch (a.opt) {
    case O_THREADS: ok = cli_opt_threads(&a); break;
    case O_MODEL: ok = cli_opt_string(&a, &o->model); break;
    case O_EPOCHS: ok = cli_opt_long(&a, 1, 1000, &o->epochs); break;
    case O_BATCH: ok = cli_opt_long(&a, 1, 4096, &o->batch); break;
    case O_LIMIT: ok = cli_opt_long(&a, 1, INT32_MAX, &o->limit); break;
    case O_LR: ok = cli_opt_float(&a, 0.0, 10.0, &o->lr); break;
    case O_SEED: ok = cli_opt_u64(&a, &o->seed); break;
    case O_LOG_EVERY: ok = cli_opt_long(&a, 1, INT32_MAX, &o->log_every); break;
    case O_DATA: ok = cli_opt_string(&a, &o->data_dir); break;
    case O_SCHEDULE:
      if ((ok = cli_opt_string(&a, &v))) {
        if (strcmp(v, "cosine") == 0) o->cosine = 1;
        else if (strcmp(v, "constant") == 0) o->cosine = 0;
        else return cli_usage_error("train", "unknown schedule '%s' (known: cosine, constant)", v);
      }
      break;
    case O_OPTIMIZER:
      if ((ok = cli_opt_string(&a, &v))) {
        if (strcmp(v, "sgd") == 0) o->optimizer = RLX_OPT_SGD;
        else if (strcmp(v, "momentum") == 0) o->optimizer = RLX_OPT_MOMENTUM;
        else if (strcmp(v, "adam") == 0) o->optimizer = RLX_OPT_ADAM;
        else return cli_usage_error("train", "unknown optimizer '%s' (known: sgd, momentum, adam)", v);
      }
      break;
    }
    if (!ok) return CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  if (o->lr == 0) o->lr = default_lr(o->optimizer);
  return -1;
}

/* ---- data -------------------------------------------------------------------- */

/* dir/name.gz, or dir/name when only the decompressed file is there. */
static void data_path(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s.gz", dir, name);
  if (access(buf, F_OK) != 0) {
    char plain[4096];
    snprintf(plain, sizeof plain, "%s/%s", dir, name);
    if (access(plain, F_OK) == 0) snprintf(buf, cap, "%s", plain);
  }
}

static int load_fashion(const char *dir, const char *split, sample_set *out) {
  char images[4096], labels[4096], name[64];
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", split);
  data_path(images, sizeof images, dir, name);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", split);
  data_path(labels, sizeof labels, dir, name);
  memset(out, 0, sizeof *out);
  if (rlx_dataset_load(images, labels, &out->ds) != RLX_OK) {
    cli_lib_error("train", CLI_USAGE, "cannot read the Fashion-MNIST data (set --data DIR)");
    return 0;
  }
  if (out->ds.rows != 28 || out->ds.cols != 28) {
    cli_usage_error("train", "'%s' holds %dx%d images; the MNIST models need 28x28", images, (int)out->ds.rows,
                    (int)out->ds.cols);
    rlx_dataset_free(&out->ds);
    return 0;
  }
  out->count = out->ds.count;
  out->sample_len = 784;
  out->x = out->ds.images;
  out->labels = out->ds.labels;
  return 1;
}

static int make_synthetic(const rlx_vision_info *info, uint64_t seed, int32_t count, sample_set *out) {
  memset(out, 0, sizeof *out);
  out->count = count;
  out->sample_len = info->input_len;
  out->x = malloc((size_t)count * info->input_len * sizeof(float));
  out->labels = malloc((size_t)count * sizeof(int32_t));
  if (!out->x || !out->labels) {
    set_free(out);
    fprintf(stderr, "rlx train: out of memory for %d synthetic samples\n", (int)count);
    return 0;
  }
  if (rlx_vision_synthetic_batch(info->slug, seed, count, out->x, (size_t)count * info->input_len, out->labels,
                                 (size_t)count) != RLX_OK) {
    set_free(out);
    cli_lib_error("train", CLI_FAILED, "synthetic data");
    return 0;
  }
  return 1;
}

/* ---- evaluation ---------------------------------------------------------------- */

/* Correct predictions of the model with flat params over the whole set, in
 * batches of EVAL_BATCH (the last one padded with zeros). -1 on error. */
static long evaluate(const rlx_vision_info *info, const float *params, const sample_set *set) {
  int32_t batch = set->count < EVAL_BATCH ? set->count : EVAL_BATCH;
  rlx_graph *g = rlx_graph_new();
  rlx_node logits, loss, pnodes[RLX_VISION_MAX_PARAMS];
  rlx_session *s = NULL;
  long correct = -1;
  float *x = calloc((size_t)batch * set->sample_len, sizeof(float));
  int32_t *labels = calloc((size_t)batch, sizeof(int32_t));
  if (!g || !x || !labels || !cli_build_model("train", g, info, batch, &logits, &loss, pnodes)) goto done;
  if (rlx_compile(g, &logits, 1, NULL, &s) != RLX_OK || cli_set_params(s, info, params) != RLX_OK) {
    cli_lib_error("train", CLI_FAILED, "compiling the evaluation");
    goto done;
  }
  correct = 0;
  for (int32_t start = 0; start < set->count; start += batch) {
    int32_t n = set->count - start < batch ? set->count - start : batch;
    memset(x, 0, (size_t)batch * set->sample_len * sizeof(float));
    memcpy(x, set->x + (size_t)start * set->sample_len, (size_t)n * set->sample_len * sizeof(float));
    memcpy(labels, set->labels + start, (size_t)n * sizeof(int32_t));
    if (rlx_session_set_input(s, "x", x, (size_t)batch * set->sample_len) != RLX_OK ||
        rlx_session_set_input_i32(s, "labels", labels, (size_t)batch) != RLX_OK || rlx_session_run(s) != RLX_OK) {
      cli_lib_error("train", CLI_FAILED, "evaluating");
      correct = -1;
      goto done;
    }
    const float *out = rlx_session_output(s, 0);
    for (int32_t i = 0; i < n; i++) {
      const float *row = out + (size_t)i * info->num_classes;
      int32_t best = 0;
      for (int32_t c = 1; c < info->num_classes; c++)
        if (row[c] > row[best]) best = c;
      correct += best == set->labels[start + i];
    }
  }
done:
  rlx_session_free(s);
  rlx_graph_free(g);
  free(x);
  free(labels);
  return correct;
}

/* ---- training ------------------------------------------------------------------ */

/* "epoch 1/2  step 375/3750  elapsed 4.1 s  9036 samples/s  loss 0.8123" on
 * stderr: elapsed since training began, samples/s of this epoch so far, the
 * running loss last.  keep: the line stays on a terminal. */
static void progress(int keep, long epoch, long epochs, long step, long steps, double elapsed, double samples_per_s,
                     double loss) {
  cli_progress(keep, "epoch %ld/%ld  step %ld/%ld  elapsed %.1f s  %.0f samples/s  loss %.4f", epoch, epochs, step,
               steps, elapsed, samples_per_s, loss);
}

/* Runs the epochs on the compiled step; 0 on failure (message printed). */
static int run_epochs(const train_opts *o, rlx_session *s, const sample_set *train, int32_t steps) {
  int32_t b = (int32_t)o->batch;
  size_t len = train->sample_len;
  int tty = cli_progress_get()->tty;
  float *x = malloc((size_t)b * len * sizeof(float));
  int32_t *labels = malloc((size_t)b * sizeof(int32_t));
  int32_t *order = malloc((size_t)train->count * sizeof(int32_t));
  int ok = x && labels && order;
  if (!ok) fprintf(stderr, "rlx train: out of memory\n");
  long every = o->log_every ? o->log_every : steps / 10 > 0 ? steps / 10 : 1;
  double t_train = cli_now();
  for (long e = 1; ok && e <= o->epochs; e++) {
    uint64_t rng = o->seed ^ (0x5851f42d4c957f2dull * (uint64_t)e);
    for (int32_t i = 0; i < train->count; i++) order[i] = i;
    for (int32_t i = train->count - 1; i > 0; i--) { /* Fisher-Yates */
      int32_t j = (int32_t)(cli_rand(&rng) % (uint64_t)(i + 1)), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    double t0 = cli_now(), last_print = t0, ema = 0, sum = 0, weight = 0;
    for (int32_t step = 0; step < steps; step++) {
      if (o->cosine) {
        double t = ((double)(e - 1) * steps + step) / ((double)o->epochs * steps);
        rlx_session_set_lr(s, (float)(o->lr * 0.5 * (1.0 + cos(3.14159265358979 * t))));
      }
      for (int32_t j = 0; j < b; j++) {
        int32_t k = order[(size_t)step * b + j];
        memcpy(x + (size_t)j * len, train->x + (size_t)k * len, len * sizeof(float));
        labels[j] = train->labels[k];
      }
      if (rlx_session_set_input(s, "x", x, (size_t)b * len) != RLX_OK ||
          rlx_session_set_input_i32(s, "labels", labels, (size_t)b) != RLX_OK || rlx_session_run(s) != RLX_OK) {
        cli_lib_error("train", CLI_FAILED, "training step");
        ok = 0;
        break;
      }
      double loss = rlx_session_output(s, 0)[0];
      if (!isfinite(loss)) {
        cli_progress_clear();
        fprintf(stderr, "rlx train: the loss became %g at epoch %ld step %d; try a lower --lr (now %g)\n", loss, e,
                (int)step + 1, o->lr);
        ok = 0;
        break;
      }
      sum += loss;
      ema = (1 - LOSS_EMA) * ema + LOSS_EMA * loss;
      weight = (1 - LOSS_EMA) * weight + LOSS_EMA; /* bias correction of the EMA */
      double now = cli_now();
      int last = step + 1 == steps;
      if (tty ? (now - last_print >= PROGRESS_TTY_S || last) : ((step + 1) % every == 0 || last)) {
        progress(last, e, o->epochs, step + 1, steps, now - t_train, (double)(step + 1) * b / (now - t0 + 1e-9),
                 ema / weight);
        last_print = now;
      }
    }
    if (!ok) break;
    double dt = cli_now() - t0;
    printf("epoch %ld/%ld done: mean loss %.4f, %.1f s, %.0f samples/s\n", e, o->epochs, sum / steps, dt,
           (double)steps * b / (dt + 1e-9));
    fflush(stdout);
  }
  free(x);
  free(labels);
  free(order);
  return ok;
}

static int train_model(const train_opts *o, const rlx_vision_info *info, const sample_set *train,
                       const sample_set *test) {
  int32_t steps = train->count / (int32_t)o->batch;
  printf("optimizer %s, lr %g%s, batch %ld, %ld epoch%s of %d steps", optimizer_name(o->optimizer), o->lr,
         o->cosine ? " (cosine to 0)" : "", o->batch,
         o->epochs, o->epochs == 1 ? "" : "s", (int)steps);
  if (train->count % o->batch) printf(" (the last %d samples of each shuffle are left out)", (int)(train->count % o->batch));
  printf(", seed %llu\n", (unsigned long long)o->seed);
  fflush(stdout);

  double t_start = cli_now();
  int rc = CLI_FAILED;
  rlx_graph *g = rlx_graph_new();
  rlx_session *s = NULL;
  rlx_node logits, loss, params[RLX_VISION_MAX_PARAMS];
  float *flat = malloc(info->param_flat_len * sizeof(float));
  if (!g || !flat) {
    fprintf(stderr, "rlx train: out of memory\n");
    goto done;
  }
  cli_progress(0, "compiling the training step (forward, backward, %s update)", optimizer_name(o->optimizer));
  if (!cli_build_model("train", g, info, (int32_t)o->batch, &logits, &loss, params)) goto done;
  rlx_optimizer opt = {o->optimizer, (float)o->lr, 0.9f, 0, 0, 0, 0};
  if (rlx_compile_train(g, loss, params, info->n_params, &opt, NULL, &s) != RLX_OK) {
    cli_lib_error("train", CLI_FAILED, "compiling the training step");
    goto done;
  }
  if (rlx_vision_init_params(info->slug, o->seed, flat, info->param_flat_len) != RLX_OK ||
      cli_set_params(s, info, flat) != RLX_OK) {
    cli_lib_error("train", CLI_FAILED, "initializing the params");
    goto done;
  }
  if (!run_epochs(o, s, train, steps)) goto done;
  double t_train = cli_now() - t_start;
  if (cli_get_params(s, info, flat) != RLX_OK) {
    cli_lib_error("train", CLI_FAILED, "reading the trained params");
    goto done;
  }
  double t_eval = cli_now();
  cli_progress(0, "evaluating on %d test samples", (int)test->count);
  long correct = evaluate(info, flat, test);
  if (correct < 0) goto done;
  t_eval = cli_now() - t_eval;
  cli_progress_clear();
  printf("test accuracy: %.2f%% (%ld/%d)\n", 100.0 * (double)correct / test->count, correct, (int)test->count);
  printf("time: training %.1f s, evaluation %.1f s\n", t_train, t_eval);
  rc = CLI_OK;
done:
  rlx_session_free(s);
  rlx_graph_free(g);
  free(flat);
  return rc;
}

static int cli_train(int argc, char **argv) {
  train_opts o;
  rlx_vision_info info;
  int code = parse_train(argc, argv, &o);
  if (code >= 0) return code;
  if (!cli_model_info("train", o.model, &info)) return CLI_USAGE;

  sample_set train, test;
  int fashion = info.input_len == 784;
  if (fashion) {
    cli_progress(0, "loading Fashion-MNIST from %.100s", o.data_dir);
    if (!load_fashion(o.data_dir, "train", &train)) return CLI_USAGE;
    if (!load_fashion(o.data_dir, "t10k", &test)) {
      set_free(&train);
      return CLI_USAGE;
    }
    if (o.limit && o.limit < train.count) train.count = (int32_t)o.limit;
  } else {
    if (o.limit > SYNTH_MAX)
      return cli_usage_error("train", "--limit %ld is above the %d synthetic samples %s can train on", o.limit,
                             SYNTH_MAX, info.slug);
    int32_t n = o.limit ? (int32_t)o.limit : SYNTH_TRAIN;
    if (!make_synthetic(&info, o.seed, n, &train)) return CLI_FAILED;
    if (!make_synthetic(&info, o.seed + 1, SYNTH_TEST, &test)) {
      set_free(&train);
      return CLI_FAILED;
    }
  }
  if (o.batch > train.count) {
    int32_t n = train.count;
    set_free(&train);
    set_free(&test);
    return cli_usage_error("train", "--batch %ld is larger than the %d training samples", o.batch, (int)n);
  }
  cli_progress_clear();
  printf("model %s (%s), %zu params\n", info.slug, info.title, info.param_flat_len);
  if (fashion)
    printf("data: Fashion-MNIST from %s: %d training samples%s, %d test samples\n", o.data_dir, (int)train.count,
           o.limit && o.limit <= train.count ? " (--limit)" : "", (int)test.count);
  else
    printf("data: %s takes [3,32,32] inputs and there is no such dataset here, so it trains on synthetic data "
           "(rlx_vision_synthetic_batch: uniform inputs, labels by index): %d training and %d test samples; "
           "its accuracy is about chance (10%%)\n",
           info.slug, (int)train.count, (int)test.count);
  int rc = train_model(&o, &info, &train, &test);
  set_free(&train);
  set_free(&test);
  return rc;
}
