/* classifier.c - a small image classifier described in code with the RLX C
 * API (include/rlx.h), trained and then used for inference.
 *
 * The model, the same as examples/python/classifier.py:
 *   logits = relu(x W1 + b1) W2 + b2        x[B, 784] -> [B, 128] -> [B, 10]
 *   loss   = mean softmax cross-entropy of logits against the labels
 *
 * W1 is He-uniform, W2 and the biases start at zero, so every class starts
 * equally likely and the first loss is ln(10).  Training runs 100 Adam steps
 * (--steps) on batches of 64 Fashion-MNIST images ($RLX_DATA_DIR or
 * /usr/share/datasets/fashion-mnist; synthetic images when the files are
 * missing or with --synthetic); a second graph with a larger batch computes
 * the logits and the loss of 1000 held-out images, with the weights before
 * and after training.
 *
 * Checks (exit status 1 when one fails): the first loss is ln(10) +- 0.05,
 * and the loss fell: the held-out loss after training is at least 0.001
 * below the one before (true of a healthy run of any length, even one step;
 * never of a run that learned nothing, such as --lr 0).  Exit status 2 on a
 * library error or bad arguments.
 *
 * Build and run: make build/examples/classifier &&
 *                build/examples/classifier [--synthetic] [--steps N] [--lr LR] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx.h"
#include "rlx_models.h"

enum { IN = 784, HID = 128, OUT = 10, BATCH = 64, EVAL_BATCH = 1000, SYNTHETIC_POOL = 640 };
static const float LR = 1e-3f;     /* --lr */
static const double MIN_FALL = 0.001; /* how far the held-out loss must fall */
static const char *const USAGE = "usage: %s [--synthetic] [--steps N] [--lr LR]\n";

/* Exits with the library's message when a call fails. */
static void check(rlx_status st, const char *what) {
  if (st != RLX_OK) {
    fprintf(stderr, "rlx error in %s: %s (%s)\n", what, rlx_last_error(), rlx_status_name(st));
    exit(2);
  }
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- the model ----------------------------------------------------------- */
typedef struct {
  rlx_node logits, loss, params[4];
} classifier;

static const char *const param_names[4] = {"w1", "b1", "w2", "b2"};

/* Adds the classifier for a batch size to g. */
static classifier build_classifier(rlx_graph *g, int32_t batch) {
  classifier m;
  rlx_node x = rlx_input(g, "x", 2, (const int32_t[]){batch, IN}, RLX_F32);
  rlx_node labels = rlx_input(g, "labels", 1, &batch, RLX_I32);
  rlx_node w1 = rlx_param(g, "w1", 2, (const int32_t[]){IN, HID});
  rlx_node b1 = rlx_param(g, "b1", 1, (const int32_t[]){HID});
  rlx_node w2 = rlx_param(g, "w2", 2, (const int32_t[]){HID, OUT});
  rlx_node b2 = rlx_param(g, "b2", 1, (const int32_t[]){OUT});
  rlx_node hidden = rlx_relu(g, rlx_add(g, rlx_matmul(g, x, w1), b1));
  m.logits = rlx_add(g, rlx_matmul(g, hidden, w2), b2);
  const int32_t batch_axis = 0;
  m.loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, m.logits, labels), &batch_axis, 1, 0);
  m.params[0] = w1, m.params[1] = b1, m.params[2] = w2, m.params[3] = b2;
  /* Builders record their first error in the graph; one check covers all. */
  if (rlx_graph_status(g) != RLX_OK) {
    fprintf(stderr, "building the classifier: %s\n", rlx_graph_error(g));
    exit(2);
  }
  return m;
}

/* ---- numbers and data ------------------------------------------------------ */
/* The 32-bit LCG of the Python example, so both draw the same numbers. */
static float lcg_uniform(uint32_t *state) { /* [0, 1) */
  *state = *state * 1664525u + 1013904223u;
  return (float)((double)(*state >> 8) / 16777216.0);
}

static void he_uniform(uint32_t seed, int32_t fan_in, float *w, size_t n) {
  double bound = sqrt(6.0 / fan_in);
  for (size_t i = 0; i < n; i++) w[i] = (float)((2.0 * lcg_uniform(&seed) - 1.0) * bound);
}

typedef struct {
  const char *name;
  int32_t n_train;
  float *train_x, *eval_x;
  int32_t *train_y, *eval_y;
} data;

/* Ten random prototype images; sample i is the prototype of class i mod 10,
 * half-blended with uniform noise (training samples first, then held-out). */
static void synthetic_data(data *d) {
  uint32_t rng = 7;
  static float protos[OUT][IN];
  for (int c = 0; c < OUT; c++)
    for (int k = 0; k < IN; k++) protos[c][k] = lcg_uniform(&rng);
  d->name = "synthetic";
  d->n_train = SYNTHETIC_POOL;
  d->train_x = xmalloc((size_t)SYNTHETIC_POOL * IN * sizeof(float));
  d->train_y = xmalloc((size_t)SYNTHETIC_POOL * sizeof(int32_t));
  d->eval_x = xmalloc((size_t)EVAL_BATCH * IN * sizeof(float));
  d->eval_y = xmalloc((size_t)EVAL_BATCH * sizeof(int32_t));
  for (int part = 0; part < 2; part++) {
    int32_t n = part ? EVAL_BATCH : SYNTHETIC_POOL;
    float *x = part ? d->eval_x : d->train_x;
    int32_t *y = part ? d->eval_y : d->train_y;
    for (int32_t i = 0; i < n; i++) {
      for (int k = 0; k < IN; k++)
        x[(size_t)i * IN + k] = (float)(0.5 * protos[i % OUT][k] + 0.5 * lcg_uniform(&rng));
      y[i] = i % OUT;
    }
  }
}

/* Fashion-MNIST: training images from its training set, held-out ones from
 * its test set.  Returns 0 when the files are not there. */
static int fashion_mnist(data *d, int32_t n_train) {
  static char name[600];
  char img[512], lab[512];
  const char *dir = getenv("RLX_DATA_DIR");
  if (!dir || !dir[0]) dir = "/usr/share/datasets/fashion-mnist";
  snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
  FILE *f = fopen(img, "rb");
  if (!f) return 0;
  fclose(f);
  rlx_dataset train, test;
  snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte.gz", dir);
  check(rlx_dataset_load(img, lab, &train), "loading the training set");
  snprintf(img, sizeof img, "%s/t10k-images-idx3-ubyte.gz", dir);
  snprintf(lab, sizeof lab, "%s/t10k-labels-idx1-ubyte.gz", dir);
  check(rlx_dataset_load(img, lab, &test), "loading the test set");
  if (n_train > train.count / BATCH * BATCH) n_train = train.count / BATCH * BATCH;
  if (train.rows * train.cols != IN || test.rows * test.cols != IN || test.count < EVAL_BATCH) {
    fprintf(stderr, "%s: unexpected image size or count\n", dir);
    exit(2);
  }
  d->n_train = n_train;
  d->train_x = xmalloc((size_t)n_train * IN * sizeof(float));
  d->train_y = xmalloc((size_t)n_train * sizeof(int32_t));
  d->eval_x = xmalloc((size_t)EVAL_BATCH * IN * sizeof(float));
  d->eval_y = xmalloc((size_t)EVAL_BATCH * sizeof(int32_t));
  memcpy(d->train_x, train.images, (size_t)n_train * IN * sizeof(float));
  memcpy(d->train_y, train.labels, (size_t)n_train * sizeof(int32_t));
  memcpy(d->eval_x, test.images, (size_t)EVAL_BATCH * IN * sizeof(float));
  memcpy(d->eval_y, test.labels, (size_t)EVAL_BATCH * sizeof(int32_t));
  rlx_dataset_free(&train);
  rlx_dataset_free(&test);
  snprintf(name, sizeof name, "Fashion-MNIST (%s)", dir);
  d->name = name;
  return 1;
}

static double now_s(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC); /* C11 */
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Copies the training session's params into the inference session, runs it
 * on the held-out images and returns their loss (the logits stay readable
 * as output 0); *ms: the run's time. */
static float heldout_loss(rlx_session *infer, const rlx_session *step, float *buf, double *ms) {
  const size_t sizes[4] = {(size_t)IN * HID, HID, (size_t)HID * OUT, OUT};
  for (int p = 0; p < 4; p++) {
    check(rlx_session_get_param(step, param_names[p], buf, sizes[p]), "get_param");
    check(rlx_session_set_param(infer, param_names[p], buf, sizes[p]), "set_param");
  }
  double t0 = now_s();
  check(rlx_session_run(infer), "inference");
  *ms = 1e3 * (now_s() - t0);
  float loss;
  check(rlx_session_read_output(infer, 1, &loss, 1), "reading the held-out loss");
  return loss;
}

/* Reports a bad argument (what, and the value) with the usage; returns 2. */
static int bad_argument(const char *prog, const char *what, const char *value) {
  fprintf(stderr, "%s: %s (got '%s')\n", prog, what, value);
  fprintf(stderr, USAGE, prog);
  return 2;
}

int main(int argc, char **argv) {
  int synthetic = 0, steps = 100;
  float lr = LR;
  for (int i = 1; i < argc; i++) {
    const char *value = i + 1 < argc ? argv[i + 1] : "";
    char *end;
    if (strcmp(argv[i], "--synthetic") == 0) {
      synthetic = 1;
    } else if (strcmp(argv[i], "--steps") == 0) {
      long n = strtol(value, &end, 10);
      if (end == value || *end || n < 1 || n > 1000000)
        return bad_argument(argv[0], "--steps must be 1 to 1000000", value);
      steps = (int)n, i++;
    } else if (strcmp(argv[i], "--lr") == 0) {
      lr = strtof(value, &end);
      if (end == value || *end || !(lr >= 0) || !isfinite(lr))
        return bad_argument(argv[0], "--lr must be a number >= 0", value);
      i++;
    } else {
      return bad_argument(argv[0], "unknown argument", argv[i]);
    }
  }
  data d;
  if (synthetic || !fashion_mnist(&d, steps * BATCH)) synthetic_data(&d);
  printf("data: %s, %d training images; model 784 -> 128 relu -> 10, Adam lr %g, batch %d\n", d.name,
         (int)d.n_train, (double)lr, BATCH);

  /* ---- the graphs: a training step, and the same model for a bigger batch */
  rlx_graph *g = rlx_graph_new();
  if (!g) check(RLX_ERR_NO_MEMORY, "rlx_graph_new");
  classifier m = build_classifier(g, BATCH);
  rlx_optimizer adam = {RLX_OPT_ADAM, lr, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f};
  rlx_session *step;
  check(rlx_compile_train(g, m.loss, m.params, 4, &adam, NULL, &step), "compiling the training step");
  rlx_graph_free(g); /* the session keeps what it needs */
  float *w1 = xmalloc((size_t)IN * HID * sizeof(float));
  he_uniform(42, IN, w1, (size_t)IN * HID);
  check(rlx_session_set_param(step, "w1", w1, (size_t)IN * HID), "set_param w1"); /* w2, b1, b2 stay zero */

  g = rlx_graph_new();
  if (!g) check(RLX_ERR_NO_MEMORY, "rlx_graph_new");
  classifier e = build_classifier(g, EVAL_BATCH);
  rlx_session *infer;
  check(rlx_compile(g, (const rlx_node[]){e.logits, e.loss}, 2, NULL, &infer), "compiling the inference graph");
  rlx_graph_free(g);
  check(rlx_session_set_input(infer, "x", d.eval_x, (size_t)EVAL_BATCH * IN), "set_input x");
  check(rlx_session_set_input_i32(infer, "labels", d.eval_y, EVAL_BATCH), "set_input labels");
  float *buf = xmalloc((size_t)IN * HID * sizeof(float));
  double infer_ms;
  float before = heldout_loss(infer, step, buf, &infer_ms);

  /* ---- training ---------------------------------------------------------- */
  float *losses = xmalloc((size_t)steps * sizeof(float));
  double t0 = now_s();
  for (int i = 0; i < steps; i++) {
    int32_t start = (int32_t)(((int64_t)i * BATCH) % d.n_train);
    check(rlx_session_set_input(step, "x", d.train_x + (size_t)start * IN, (size_t)BATCH * IN), "set_input x");
    check(rlx_session_set_input_i32(step, "labels", d.train_y + start, BATCH), "set_input labels");
    check(rlx_session_run(step), "training step");
    check(rlx_session_read_output(step, 0, &losses[i], 1), "reading the loss");
    if (i == 0 || (i + 1) % 10 == 0) printf("step %3d  loss %.6f\n", i + 1, (double)losses[i]);
  }
  double train_s = now_s() - t0;
  printf("first loss %.6f (ln 10 = %.6f); %d steps in %.3f s (%.2f ms/step)\n", (double)losses[0], log(10.0),
         steps, train_s, 1e3 * train_s / steps);

  /* ---- inference: the held-out images with the trained weights ------------ */
  float after = heldout_loss(infer, step, buf, &infer_ms);
  const float *logits = rlx_session_output(infer, 0);
  int correct = 0, predicted[8];
  for (int r = 0; r < EVAL_BATCH; r++) {
    int best = 0;
    for (int c = 1; c < OUT; c++)
      if (logits[r * OUT + c] > logits[r * OUT + best]) best = c;
    correct += best == d.eval_y[r];
    if (r < 8) predicted[r] = best;
  }
  printf("inference: %d held-out images in %.2f ms, loss %.6f (%.6f before training), accuracy %.1f%%; "
         "first predictions [", EVAL_BATCH, infer_ms, (double)after, (double)before, 100.0 * correct / EVAL_BATCH);
  for (int r = 0; r < 8; r++) printf(r ? ", %d" : "%d", predicted[r]);
  printf("], labels [");
  for (int r = 0; r < 8; r++) printf(r ? ", %d" : "%d", (int)d.eval_y[r]);
  printf("]\n");
  rlx_session_free(infer);
  rlx_session_free(step);

  /* ---- checks ---------------------------------------------------------- */
  int failed = 0;
  if (fabs(losses[0] - log(10.0)) > 0.05) {
    fprintf(stderr, "FAIL: the first loss %.6f is not ln(10) = %.6f +- 0.05\n", (double)losses[0], log(10.0));
    failed = 1;
  }
  if (!(after <= before - MIN_FALL)) {
    fprintf(stderr, "FAIL: the loss did not fall: held-out loss %.6f after %d steps vs %.6f before training "
            "(needs to fall by %g)\n", (double)after, steps, (double)before, MIN_FALL);
    failed = 1;
  }
  if (!failed)
    printf("OK: first loss is ln(10); the held-out loss fell from %.6f to %.6f\n", (double)before, (double)after);
  free(w1), free(buf), free(losses);
  free(d.train_x), free(d.train_y), free(d.eval_x), free(d.eval_y);
  return failed;
}
