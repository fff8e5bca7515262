/* grad_train.h - two small models (an MLP and a CNN) with fixed data, used
 * by the training-step tests natively and in wasm. */
#ifndef RLX_GRAD_TRAIN_H
#define RLX_GRAD_TRAIN_H

#include <stddef.h>
#include "rlx.h"

typedef struct {
  rlx_graph *g;
  rlx_node loss, params[4];
  int32_t n_params;
  size_t sizes[4];
  const char *names[4];
  int is_cnn;
} train_model;

train_model train_model_new(int is_cnn); /* mlp: x[8,6] -> 5 tanh -> 3 classes; cnn: x[4,1,8,8] */
void train_model_free(train_model *m);
/* Sets the fixed inputs, labels and initial params of m into s. */
rlx_status train_model_feed(rlx_session *s, const train_model *m);
/* The initial value of param i (n values). */
void train_model_init(const train_model *m, int32_t i, float *out);
/* Compiles a training step with opt, runs `steps` steps; the first and last
 * losses go to *first and *last. */
rlx_status train_model_run(int is_cnn, const rlx_optimizer *opt, int steps, float *first, float *last);

#endif
