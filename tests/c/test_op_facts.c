/* test_op_facts.c - the op table's facts (include/rlx_op_info.h,
 * include/rlx_attrs.def): every op's attributes have dense slots, names
 * that are identifiers and a known type; the builders' attribute counts
 * follow the table; shape rules refuse sizes that pass int32 instead of
 * wrapping (conv2d_grad_input channels, conv and pool output sizes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlx.h"
#include "rlx_op_info.h"

#include "assert_text.h"

static void attribute_slots_are_dense(void **state) {
  (void)state;
  for (int32_t op = 0; op < RLX_OP_COUNT; op++) {
    int32_t n = rlx_op_attr_count((rlx_op)op), ints = 0, floats = 0, list = 0;
    uint32_t int_slots = 0, float_slots = 0;
    assert_true(n >= 0);
    for (int32_t k = 0; k < n; k++) {
      const char *name = rlx_op_attr_name((rlx_op)op, k), *type = rlx_op_attr_type((rlx_op)op, k);
      int32_t slot = rlx_op_attr_slot((rlx_op)op, k);
      assert_non_null(name);
      assert_true(strspn(name, "abcdefghijklmnopqrstuvwxyz_0123456789") == strlen(name)); /* an identifier */
      assert_true(name[0] < '0' || name[0] > '9');
      for (int32_t j = 0; j < k; j++) assert_string_not_equal(name, rlx_op_attr_name((rlx_op)op, j));
      assert_true(slot >= 0 && slot < 32);
      if (strcmp(type, "float") == 0) {
        assert_false(float_slots & (1u << slot));
        float_slots |= 1u << slot, floats++;
      } else {
        assert_true(strstr("int bool axes enum ints", type) != NULL);
        assert_false(int_slots & (1u << slot));
        int_slots |= 1u << slot, ints++;
        list += strcmp(type, "ints") == 0;
      }
    }
    /* slots 0 .. count-1 of each kind, and an "ints" list is the only int attribute */
    assert_int_equal(int_slots, (1u << ints) - 1);
    assert_int_equal(float_slots, (1u << floats) - 1);
    assert_true(list == 0 || ints == 1);
    assert_null(rlx_op_attr_name((rlx_op)op, n));
    assert_int_equal(rlx_op_attr_slot((rlx_op)op, -1), -1);
  }
  assert_int_equal(rlx_op_attr_count(RLX_OP_COUNT), -1);
  assert_null(rlx_op_attr_type((rlx_op)-1, 0));
}

/* The names the builders and docs rely on, at the slots the builders fill. */
static void attribute_names_match_the_builders(void **state) {
  (void)state;
  assert_int_equal(rlx_op_attr_count(RLX_OP_MATMUL), 2);
  assert_string_equal(rlx_op_attr_name(RLX_OP_MATMUL, 1), "trans_b");
  assert_int_equal(rlx_op_attr_count(RLX_OP_FUSED_MATMUL), 5); /* matmul's two first */
  assert_string_equal(rlx_op_attr_name(RLX_OP_FUSED_MATMUL, 0), "trans_a");
  assert_int_equal(rlx_op_attr_count(RLX_OP_CONV2D_GRAD_WEIGHT), 9);
  assert_string_equal(rlx_op_attr_name(RLX_OP_CONV2D_GRAD_WEIGHT, 6), "groups");
  assert_string_equal(rlx_op_attr_type(RLX_OP_REDUCE_SUM, 0), "axes");
  /* a builder's node takes exactly the table's attributes: one int too many is refused */
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  int32_t too_many[3] = {1, 0, 0};
  assert_int_equal(rlx_op_node(g, RLX_OP_SOFTMAX, &x, 1, too_many, 2, NULL, 0), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "expects 1 integer and 0 float attributes, got 2 and 0");
  rlx_graph_free(g);
}

static rlx_node conv_grad_input(rlx_graph *g, int32_t groups) {
  rlx_node in[2] = {rlx_input(g, "dy", 4, (int32_t[]){1, 1, 1, 1}, RLX_F32), rlx_param(g, "w", 4, (int32_t[]){1, 2, 1, 1})};
  int32_t at[9] = {1, 1, 0, 0, 1, 1, groups, 1, 1};
  return rlx_op_node(g, RLX_OP_CONV2D_GRAD_INPUT, in, 2, at, 9, NULL, 0);
}

/* w->dims[1] * groups passed int32 before groups was checked. */
static void conv_grad_input_channels_never_wrap(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  assert_int_equal(conv_grad_input(g, 0x40000000), RLX_NO_NODE);
  assert_int_equal(rlx_graph_status(g), RLX_ERR_SHAPE);
  assert_contains(rlx_graph_error(g), "1073741824 groups of 2 channels pass 2147483647");
  rlx_graph_free(g);
  g = rlx_graph_new();
  assert_int_equal(conv_grad_input(g, 0), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "groups must be >= 1");
  rlx_graph_free(g);
}

/* A window's output size that passes int32 is refused, not wrapped. */
static void window_outputs_never_wrap(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 4, (int32_t[]){1, 1, INT32_MAX, 1}, RLX_F32);
  rlx_node w = rlx_param(g, "w", 4, (int32_t[]){1, 1, 1, 1});
  rlx_conv2d_params p = {.stride_h = 1, .stride_w = 1, .pad_h = INT32_MAX, .pad_w = 0, .dilation_h = 1,
                         .dilation_w = 1, .groups = 1};
  assert_int_equal(rlx_conv2d(g, x, w, &p), RLX_NO_NODE);
  assert_int_equal(rlx_graph_status(g), RLX_ERR_SHAPE);
  assert_contains(rlx_graph_error(g), "output height would pass 2147483647");
  rlx_graph_free(g);
  /* the largest output that fits is still accepted */
  g = rlx_graph_new();
  x = rlx_input(g, "x", 4, (int32_t[]){1, 1, INT32_MAX - 2, 1}, RLX_F32);
  w = rlx_param(g, "w", 4, (int32_t[]){1, 1, 1, 1});
  p.pad_h = 1;
  rlx_node y = rlx_conv2d(g, x, w, &p);
  assert_int_not_equal(y, RLX_NO_NODE);
  int32_t dims[RLX_MAX_RANK];
  assert_int_equal(rlx_node_shape(g, y, dims), 4);
  assert_int_equal(dims[2], INT32_MAX);
  rlx_graph_free(g);
  /* pooling: a huge padded input with stride 1 */
  g = rlx_graph_new();
  x = rlx_input(g, "x", 4, (int32_t[]){1, 1, INT32_MAX, 1}, RLX_F32);
  rlx_pool2d_params q = {.kernel_h = 3, .kernel_w = 1, .stride_h = 1, .stride_w = 1, .pad_h = 2, .pad_w = 0};
  assert_int_equal(rlx_max_pool2d(g, x, &q), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "output height would pass 2147483647");
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(attribute_slots_are_dense),
      cmocka_unit_test(attribute_names_match_the_builders),
      cmocka_unit_test(conv_grad_input_channels_never_wrap),
      cmocka_unit_test(window_outputs_never_wrap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
