"""test_rlx.py - the Python bindings (python/rlx) against build/librlx.so.

Graphs give the numbers of a pure-Python computation; gradients match finite
differences; training lowers the loss with every optimizer; the model entry
points (vision, MLP, transformer, dataset) have the documented sizes and
shapes; every failure raises an RlxError carrying the library's message;
handles are freed on close and on garbage collection.  Standard library only
(numpy input is tested too when numpy is importable).

Run: make test-python   (PYTHONPATH=python python3 -m unittest discover -s tests/python -v)
"""

import array
import ctypes
import gc
import math
import os
import random
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rlx  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

FASHION = "/usr/share/datasets/fashion-mnist"


def close_to(a, b, rel=1e-5, abs_=1e-6):
    return abs(a - b) <= abs_ + rel * abs(b)


class Case(unittest.TestCase):
    def assertAllClose(self, got, want, rel=1e-5, abs_=1e-6, what="value"):
        got, want = list(got), list(want)
        self.assertEqual(len(got), len(want), "%s: lengths differ" % what)
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertTrue(close_to(g, w, rel, abs_), "%s[%d]: got %r, want %r" % (what, i, g, w))

    def assertRlx(self, cls, fn, *fragments):
        """fn() raises cls (an RlxError) whose message holds every fragment."""
        with self.assertRaises(cls) as cm:
            fn()
        err = cm.exception
        self.assertIsInstance(err, rlx.RlxError)
        self.assertLess(err.status, 0)
        self.assertTrue(str(err))
        for f in fragments:
            self.assertIn(f, str(err))
        return err


# x[2,3] . w[3,4] + b[4] -> relu, as in tests/node/api.test.mjs
X = [1, -2, 3, 0.5, 0, -1]
W = [0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, -0.9, 1.0, 1.1, -1.2]
B = [0.05, -0.1, 0.2, -3]


def small_expected():
    y = []
    for i in range(2):
        for j in range(4):
            acc = B[j] + sum(X[i * 3 + k] * W[k * 4 + j] for k in range(3))
            y.append(max(acc, 0.0))
    return y


def small_graph():
    g = rlx.Graph()
    x = g.input("x", (2, 3))
    w = g.param("w", (3, 4))
    b = g.param("b", (4,))
    return g, (x @ w + b).relu()


class TestGraphs(Case):
    def test_threads(self):
        # a product large enough to be split: the same bits on 1 and 3
        # threads; bad counts refused with the reason
        g = rlx.Graph()
        a, b = g.input("a", (96, 200)), g.input("b", (200, 160))
        y = (a @ b).tanh()
        av = [((i * 7) % 13 - 6) / 7.0 for i in range(96 * 200)]
        bv = [((i * 5) % 11 - 5) / 9.0 for i in range(200 * 160)]
        outs = []
        for t in (1, 3):
            with g.compile(y, threads=t) as s:
                s.set_input("a", av)
                s.set_input("b", bv)
                s.run()
                outs.append(list(s.output(0)))
        self.assertEqual(outs[0], outs[1])
        for bad in (-1, 257):
            with self.assertRaises(rlx.RlxInvalidArgument) as cm:
                g.compile(y, threads=bad)
            self.assertIn("threads", str(cm.exception))
        with self.assertRaises(rlx.RlxError):
            g.compile(y, threads=1.5)
        g.close()

    def test_small_graph_matches_python(self):
        g, y = small_graph()
        self.assertEqual(y.shape, (2, 4))
        self.assertEqual(y.op, "relu")
        with g.compile(y) as s:
            g.close()  # the session keeps its own copy
            s.set_param("w", W)
            s.set_param("b", array.array("f", B))
            s.set_input("x", [[1, -2, 3], [0.5, 0, -1]])  # nested lists are flattened
            s.run()
            self.assertEqual(s.output_count, 1)
            self.assertEqual(s.output_shape(0), (2, 4))
            self.assertAllClose(s.output(0), small_expected())
            self.assertAllClose(s.get_param("b"), B)
            self.assertEqual(sorted(s.param_names), ["b", "w"])
            self.assertEqual(s.input_names, ["x"])
            self.assertEqual(s.input_shape("x"), (2, 3))
            self.assertGreaterEqual(s.arena_bytes, 0)
            self.assertGreaterEqual(s.step_count, 1)

    def test_operators_and_ops(self):
        g = rlx.Graph()
        a = g.input("a", (2, 3))
        b = g.input("b", (3,))
        outs = [a + b, a - b, a * b, a / b, -a, 2.0 * a - 1, 1 - a, a ** 2.0,
                g.reduce_sum(a, axes=1), g.reduce_mean(a, axes=0, keepdim=True), g.reduce_max(a),
                g.softmax(a, axis=-1), a.exp(), a.sigmoid(), g.transpose(a), a.reshape((3, 2)),
                g.concat([a, a], axis=0), g.narrow(a, 1, 1, 2), g.where(g.gt(a, 0.0), a, b)]
        av = [0.5, -1.0, 2.0, 3.0, 0.25, -0.75]
        bv = [1.5, -2.0, 4.0]
        A = [av[0:3], av[3:6]]

        def rows(f):
            return [f(i, j) for i in range(2) for j in range(3)]
        sm = []
        for r in A:
            e = [math.exp(v - max(r)) for v in r]
            sm += [v / sum(e) for v in e]
        want = [
            rows(lambda i, j: A[i][j] + bv[j]), rows(lambda i, j: A[i][j] - bv[j]),
            rows(lambda i, j: A[i][j] * bv[j]), rows(lambda i, j: A[i][j] / bv[j]),
            [-v for v in av], [2 * v - 1 for v in av], [1 - v for v in av], [v * v for v in av],
            [sum(r) for r in A], [(A[0][j] + A[1][j]) / 2 for j in range(3)], [max(av)],
            sm, [math.exp(v) for v in av], [1 / (1 + math.exp(-v)) for v in av],
            [A[i][j] for j in range(3) for i in range(2)], av, av + av,
            [A[i][j] for i in range(2) for j in (1, 2)], rows(lambda i, j: A[i][j] if A[i][j] > 0 else bv[j]),
        ]
        self.assertEqual(outs[9].shape, (1, 3))
        self.assertEqual(outs[10].shape, ())
        self.assertEqual(outs[14].shape, (3, 2))
        s = g.compile(outs)
        s.run({"a": av, "b": bv})
        for k, w in enumerate(want):
            self.assertAllClose(s.output(k), w, rel=1e-5, abs_=1e-6, what="output %d" % k)
        s.close()
        s.close()  # double close is harmless
        g.close()
        g.close()

    def test_node_methods_and_generic_op(self):
        g = rlx.Graph()
        x = g.input("x", (2, 3))
        y = g.op("softmax", [x], ints=[1])
        z = x.softmax(axis=1)
        self.assertEqual(y.shape, z.shape)
        s = g.compile([y, z])
        s.set_input("x", [1, 2, 3, 4, 5, 6])
        s.run()
        self.assertAllClose(s.output(0), s.output(1))
        self.assertIn("matmul", rlx.op_names())
        self.assertIn("relu", dir(rlx.Graph))
        self.assertIn("relu(x)", rlx.Graph.relu.__doc__)

    def test_simple_op_arity_comes_from_the_library(self):
        from rlx import graph
        # The names of each simple method's inputs agree with the op table.
        for name, (args, _doc) in graph._SIMPLE_OPS.items():
            lo, hi = graph.op_arity(name)
            self.assertTrue(lo <= len(args.split()) <= hi, name)
        self.assertEqual(graph.op_arity("add"), (2, 2))
        g = rlx.Graph()
        x = g.input("x", (2,))
        with self.assertRaisesRegex(TypeError, r"add\(a, b\) takes 2 inputs, got 1"):
            g.add(x)
        # A library whose table said add takes 1 to 3 inputs moves the check.
        real = graph.lib

        class Library:
            def __getattr__(self, attr):
                return getattr(real(), attr)

            def rlx_op_max_inputs(self, op):
                return 3 if op == graph.op_id("add") else real().rlx_op_max_inputs(op)

            def rlx_op_min_inputs(self, op):
                return 1 if op == graph.op_id("add") else real().rlx_op_min_inputs(op)
        graph._arities.clear()
        graph.lib = Library
        try:
            with self.assertRaisesRegex(TypeError, r"takes 1 to 3 inputs, got 4"):
                g.add(x, x, x, x)
        finally:
            graph.lib = real
            graph._arities.clear()

    def test_every_elementwise_op_of_the_library_is_a_method(self):
        from rlx import graph
        names = graph.elementwise_ops()
        self.assertIn("relu", names)
        self.assertIn("where", names)
        self.assertNotIn("gelu_grad", names)
        self.assertNotIn("matmul", names)
        g = rlx.Graph()
        x = g.input("x", (3,))
        for name in names:
            lo, hi = graph.op_arity(name)
            self.assertEqual(getattr(g, name)(*[x] * lo).op, name)
        # An op the library marks elementwise but the binding does not document.
        real = graph.lib
        gelu_grad = graph.op_id("gelu_grad")

        class Library:
            def __getattr__(self, attr):
                return getattr(real(), attr)

            def rlx_op_is_elementwise(self, op):
                return 1 if op == gelu_grad else real().rlx_op_is_elementwise(op)
        graph.lib = Library
        try:
            self.assertEqual(g.gelu_grad(x, x).op, "gelu_grad")
            self.assertEqual(x.gelu_grad(x).op, "gelu_grad")
        finally:
            graph.lib = real
        with self.assertRaises(AttributeError):
            g.gelu_grad

    def test_named_attributes_come_from_the_library(self):
        from rlx import graph
        self.assertEqual(rlx.op_attrs("narrow"), [("axis", "int", 0), ("start", "int", 1), ("length", "int", 2)])
        self.assertEqual(rlx.op_attrs("rms_norm"), [("eps", "float", 0)])
        self.assertEqual(rlx.op_attrs("relu"), [])
        g = rlx.Graph()
        x = g.input("x", (2, 3))
        by_name = [g.op("softmax", [x], axis=0), g.op("narrow", [x], axis=1, start=1, length=2),
                   g.op("matmul", [x, x], trans_b=True), g.op("reduce_sum", [x], axes=0b10, keepdim=True)]
        typed = [g.softmax(x, 0), g.narrow(x, 1, 1, 2), g.matmul(x, x, trans_b=True), g.reduce_sum(x, 1, True)]
        s = g.compile(by_name + typed)
        s.set_input("x", [1, -2, 3, 0.5, 5, -6])
        s.run()
        for k in range(4):
            self.assertAllClose(s.output(k), s.output(4 + k))
        with self.assertRaisesRegex(rlx.RlxError, r"has no attribute 'axes' \(its attributes: axis\)"):
            g.op("softmax", [x], axes=1)
        with self.assertRaisesRegex(rlx.RlxError, r"attribute length \(int\) is missing"):
            g.op("narrow", [x], axis=1, start=0)
        with self.assertRaisesRegex(rlx.RlxError, r"not both"):
            g.op("softmax", [x], ints=[0], axis=0)
        # A library whose table swaps narrow's start and length places them there.
        real = graph.lib
        narrow = graph.op_id("narrow")

        class Library:
            def __getattr__(self, attr):
                return getattr(real(), attr)

            def rlx_op_attr_slot(self, op, k):
                return 3 - k if op == narrow and k > 0 else real().rlx_op_attr_slot(op, k)
        graph._attr_tables.clear()
        graph.lib = Library
        try:
            h = rlx.Graph()
            y = h.input("y", (2, 3))
            with self.assertRaisesRegex(rlx.RlxError, r"range start 1 length 0"):
                h.op("narrow", [y], axis=1, start=0, length=1)
        finally:
            graph.lib = real
            graph._attr_tables.clear()

    def test_i32_ids_through_gather(self):
        g = rlx.Graph()
        table = g.param("table", (3, 2))
        ids = g.input("ids", (4,), dtype="i32")
        self.assertEqual(ids.dtype, "i32")
        s = g.compile(g.gather(table, ids))
        s.set_param("table", [0, 1, 10, 11, 20, 21])
        self.assertEqual(s.input_dtype("ids"), "i32")
        for ids_value in ([2, 0, 1, 2], array.array("i", [2, 0, 1, 2]), [2.0, 0.0, 1.0, 2.0]):
            s.set_input("ids", ids_value)
            s.run()
            self.assertEqual(list(s.output(0)), [20, 21, 0, 1, 10, 11, 20, 21])

    def test_conv_pool_attention_shapes(self):
        g = rlx.Graph()
        x = g.input("x", (2, 3, 9, 9))
        w = g.param("w", (4, 3, 3, 3))
        c = g.conv2d(x, w, stride=2, padding=1)
        self.assertEqual(c.shape, (2, 4, 5, 5))
        self.assertEqual(g.conv2d(x, g.param("wg", (6, 1, 3, 3)), groups=3, dilation=(2, 1)).shape,
                         (2, 6, 5, 7))
        self.assertEqual(g.max_pool2d(c, 2).shape, (2, 4, 2, 2))
        self.assertEqual(g.avg_pool2d(c, (3, 3), stride=1, padding=1).shape, (2, 4, 5, 5))
        self.assertEqual(g.global_avg_pool(c).shape, (2, 4))
        q = g.input("q", (1, 2, 5, 4))
        k = g.input("k", (1, 2, 7, 4))
        v = g.input("v", (1, 2, 7, 3))
        self.assertEqual(g.attention(q, k, v, mask="causal").shape, (1, 2, 5, 3))
        self.assertEqual(g.attention(q, k, v, mask="sliding", window=2).shape, (1, 2, 5, 3))
        pad = g.input("pad", (1, 7))
        self.assertEqual(g.attention(q, k, v, mask="padding", mask_tensor=pad, scale=0.5).shape, (1, 2, 5, 3))
        self.assertEqual(g.rope(q).shape, (1, 2, 5, 4))
        self.assertEqual(g.rms_norm(q, g.param("rw", (4,))).shape, (1, 2, 5, 4))

    def test_attention_matches_python(self):
        rnd = random.Random(3)
        S, D = 3, 2
        qv = [rnd.uniform(-1, 1) for _ in range(S * D)]
        kv = [rnd.uniform(-1, 1) for _ in range(S * D)]
        vv = [rnd.uniform(-1, 1) for _ in range(S * D)]
        g = rlx.Graph()
        q, k, v = (g.input(n, (1, 1, S, D)) for n in "qkv")
        s = g.compile(g.attention(q, k, v, mask="causal"))
        s.run({"q": qv, "k": kv, "v": vv})
        want = []
        for i in range(S):
            sc = [sum(qv[i * D + d] * kv[j * D + d] for d in range(D)) / math.sqrt(D) for j in range(i + 1)]
            e = [math.exp(a - max(sc)) for a in sc]
            want += [sum(e[j] * vv[j * D + d] for j in range(i + 1)) / sum(e) for d in range(D)]
        self.assertAllClose(s.output(0), want, rel=1e-4, abs_=1e-5)


class TestInputs(Case):
    """Values in: lists, array('f'), memoryview, __array_interface__, numpy."""

    def run_small(self, x_value, w_value=W):
        g, y = small_graph()
        with g, g.compile(y) as s:
            s.set_param("w", w_value)
            s.set_param("b", B)
            s.set_input("x", x_value)
            s.run()
            return s.output(0)

    def test_buffers(self):
        want = small_expected()
        self.assertAllClose(self.run_small(tuple(X)), want)
        self.assertAllClose(self.run_small(array.array("f", X)), want)
        self.assertAllClose(self.run_small(memoryview(array.array("f", X))), want)
        self.assertAllClose(self.run_small(array.array("d", X)), want)
        two_d = memoryview(array.array("f", X)).cast("B").cast("f", (2, 3))
        self.assertAllClose(self.run_small(two_d), want)
        read_only = memoryview(bytes(array.array("f", X))).cast("f")  # copied, not written
        self.assertAllClose(self.run_small(read_only), want)
        self.assertAllClose(self.run_small(iter(X)), want)

    def test_array_interface_without_copy(self):
        class Fake:
            """An object exposing float32 memory like numpy does."""

            def __init__(self, values, typestr="<f4", ctype=ctypes.c_float):
                self.mem = (ctype * len(values))(*values)
                self.__array_interface__ = {"shape": (len(values),), "typestr": typestr,
                                            "data": (ctypes.addressof(self.mem), False), "version": 3}
        self.assertAllClose(self.run_small(Fake(X)), small_expected())
        # labels through an int32 array interface
        g = rlx.Graph()
        logits = g.input("logits", (2, 3))
        labels = g.input("labels", (2,), dtype="i32")
        s = g.compile(g.softmax_cross_entropy(logits, labels))
        s.run({"logits": Fake([0, 0, 0, 1, 2, 3]), "labels": Fake([1, 2], "<i4", ctypes.c_int32)})
        want = [math.log(3), math.log(sum(math.exp(v) for v in (1, 2, 3))) - 3]
        self.assertAllClose(s.output(0), want, rel=1e-5)
        # out= writes into a caller's buffer in place
        out = Fake([0.0, 0.0])
        self.assertIs(s.output(0, out=out), out)
        self.assertAllClose(list(out.mem), want, rel=1e-5)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_numpy(self):
        want = small_expected()
        self.assertAllClose(self.run_small(numpy.array(X, dtype=numpy.float32).reshape(2, 3)), want)
        self.assertAllClose(self.run_small(numpy.array(X, dtype=numpy.float64)), want)
        wt = numpy.array(W, dtype=numpy.float32).reshape(3, 4)
        self.assertAllClose(self.run_small(X, numpy.asfortranarray(wt)), want)  # non-contiguous is copied
        g, y = small_graph()
        s = g.compile(y)
        s.set_param("w", numpy.array(W, dtype=numpy.float32))
        s.set_param("b", B)
        s.set_input("x", X)
        s.run()
        out = s.output(0, as_numpy=True)
        self.assertEqual(out.shape, (2, 4))
        self.assertAllClose(out.ravel().tolist(), want)
        buf = numpy.zeros(4, dtype=numpy.float32)
        s.get_param("b", out=buf)
        self.assertAllClose(buf.tolist(), B)
        self.assertEqual(s.get_param("b", as_numpy=True).dtype, numpy.float32)
        # labels of any integer dtype; params updated in place (float32) or written back (float64)
        m = rlx.VisionModel("mnist-mlp")
        x, labels = m.synthetic_batch(seed=0, batch=4)
        p32 = numpy.array(m.init_params(seed=1), dtype=numpy.float32)
        p64 = p32.astype(numpy.float64)
        before = p32.copy()
        l32 = m.train_step(numpy.array(x, dtype=numpy.float32).reshape(4, 784), numpy.array(labels, dtype=numpy.int32),
                           p32, lr=0.1)
        l64 = m.train_step(x, numpy.array(labels, dtype=numpy.int64), p64, lr=0.1)
        self.assertTrue(close_to(l32, l64, 1e-6))
        self.assertFalse(numpy.array_equal(p32, before))
        self.assertTrue(numpy.allclose(p32, p64, atol=1e-6))
        logits = m.forward(numpy.array(x, dtype=numpy.float32), p32)
        self.assertEqual(len(logits), 40)

    def test_get_param_out_list(self):
        g, y = small_graph()
        s = g.compile(y)
        s.set_param("b", B)
        out = [0.0] * 4
        s.get_param("b", out=out)
        self.assertAllClose(out, B)


# ---- gradients ----------------------------------------------------------------
def tiny_mlp_loss(xv, labels, params, dims):
    """Mean softmax cross-entropy of tanh(x w1 + b1) w2 + b2, in double."""
    rows, n_in, hid, n_out = dims
    w1, b1, w2, b2 = params
    total = 0.0
    for r in range(rows):
        h = [math.tanh(b1[j] + sum(xv[r * n_in + k] * w1[k * hid + j] for k in range(n_in))) for j in range(hid)]
        z = [b2[o] + sum(h[j] * w2[j * n_out + o] for j in range(hid)) for o in range(n_out)]
        m = max(z)
        total += m + math.log(sum(math.exp(v - m) for v in z)) - z[labels[r]]
    return total / rows


def mlp_sse(xv, t, params, dims):
    """Sum of squared errors of relu(x w1 + b1) w2 + b2, in double."""
    rows, n_in, hid, n_out = dims
    w1, b1, w2, b2 = params
    total = 0.0
    for r in range(rows):
        h = [max(0.0, b1[j] + sum(xv[r * n_in + k] * w1[k * hid + j] for k in range(n_in))) for j in range(hid)]
        for o in range(n_out):
            y = b2[o] + sum(h[j] * w2[j * n_out + o] for j in range(hid))
            total += (y - t[r * n_out + o]) ** 2
    return total


def finite_differences(f, params, eps=1e-5):
    grads = []
    for p in params:
        gp = []
        for i in range(len(p)):
            keep = p[i]
            p[i] = keep + eps
            up = f(params)
            p[i] = keep - eps
            down = f(params)
            p[i] = keep
            gp.append((up - down) / (2 * eps))
        grads.append(gp)
    return grads


def f32_round(values):
    return list(array.array("f", values))


class TestGradients(Case):
    def test_grad_with_loss_vs_finite_differences(self):
        rows, n_in, hid, n_out = dims = (3, 4, 5, 3)
        rnd = random.Random(7)
        xv = f32_round(rnd.uniform(-1, 1) for _ in range(rows * n_in))
        labels = [2, 0, 1]
        shapes = [(n_in, hid), (hid,), (hid, n_out), (n_out,)]
        params = [f32_round(rnd.uniform(-0.8, 0.8) for _ in range(math.prod(s))) for s in shapes]

        g = rlx.Graph()
        x = g.input("x", (rows, n_in))
        y = g.input("labels", (rows,), dtype="i32")
        p = [g.param(n, s) for n, s in zip(("w1", "b1", "w2", "b2"), shapes)]
        logits = (x @ p[0] + p[1]).tanh() @ p[2] + p[3]
        loss = g.reduce_mean(g.softmax_cross_entropy(logits, y))
        outs = g.grad_with_loss(loss, p)
        self.assertEqual(len(outs), 5)
        self.assertEqual([o.shape for o in outs[1:]], [n.shape for n in p])
        s = g.compile(outs)
        for n, v in zip(("w1", "b1", "w2", "b2"), params):
            s.set_param(n, v)
        s.run({"x": xv, "labels": labels, "d_output": [1.0]})
        self.assertTrue(close_to(s.output(0)[0], tiny_mlp_loss(xv, labels, params, dims), 1e-5))
        want = finite_differences(lambda ps: tiny_mlp_loss(xv, labels, ps, dims), params)
        for k in range(4):
            self.assertAllClose(s.output(1 + k), want[k], rel=1e-3, abs_=1e-5, what="grad %d" % k)
        # grad() gives the same without the loss
        grads = g.grad(loss, p[2:])
        self.assertEqual(len(grads), 2)

    def test_mlp_entry_points_vs_finite_differences(self):
        rows, n_in, hid, n_out = dims = (2, 3, 4, 2)
        rnd = random.Random(11)
        xv = f32_round(rnd.uniform(-1, 1) for _ in range(rows * n_in))
        t = f32_round(rnd.uniform(-1, 1) for _ in range(rows * n_out))
        params = [f32_round(rnd.uniform(-1, 1) for _ in range(n)) for n in (n_in * hid, hid, hid * n_out, n_out)]
        y = rlx.mlp_forward(xv, n_in, hid, n_out, *params)
        self.assertEqual(len(y), rows * n_out)
        loss = rlx.mlp_loss(xv, t, n_in, hid, n_out, *params)
        self.assertTrue(close_to(loss, mlp_sse(xv, t, params, dims), 1e-5))
        g = rlx.mlp_grads(xv, t, n_in, hid, n_out, *params)
        self.assertEqual(len(g), 1 + sum(len(q) for q in params))
        self.assertTrue(close_to(g[0], loss, 1e-6))
        want = [v for gp in finite_differences(lambda ps: mlp_sse(xv, t, ps, dims), params) for v in gp]
        self.assertAllClose(g[1:], want, rel=1e-3, abs_=1e-5, what="mlp grads")
        stepped = rlx.mlp_train_step(xv, t, n_in, hid, n_out, *params, 0.1)
        flat = [v for q in params for v in q]
        self.assertAllClose(stepped, [p - 0.1 * d for p, d in zip(flat, g[1:])], rel=1e-5, abs_=1e-6)


# ---- training ------------------------------------------------------------------
def blobs(rows, n_in, n_classes, seed):
    """Separable synthetic data: class prototypes plus noise."""
    rnd = random.Random(seed)
    protos = [[rnd.uniform(-1, 1) for _ in range(n_in)] for _ in range(n_classes)]
    xs, ys = [], []
    for r in range(rows):
        c = r % n_classes
        xs += [v + rnd.gauss(0, 0.3) for v in protos[c]]
        ys.append(c)
    return xs, ys


def classifier(rows, n_in, hid, n_classes):
    g = rlx.Graph()
    x = g.input("x", (rows, n_in))
    labels = g.input("labels", (rows,), dtype="i32")
    w1, b1 = g.param("w1", (n_in, hid)), g.param("b1", (hid,))
    w2, b2 = g.param("w2", (hid, n_classes)), g.param("b2", (n_classes,))
    logits = (x @ w1 + b1).relu() @ w2 + b2
    return g, g.reduce_mean(g.softmax_cross_entropy(logits, labels))


class TestTraining(Case):
    def test_each_optimizer_lowers_the_loss(self):
        rows, n_in, hid, n_classes = 24, 8, 16, 3
        xs, ys = blobs(rows, n_in, n_classes, seed=5)
        rnd = random.Random(1)
        w1 = [rnd.uniform(-0.5, 0.5) for _ in range(n_in * hid)]
        for opt, lr in (("sgd", 0.2), ("momentum", 0.05), ("adam", 0.01), ("adamw", 0.01)):
            with self.subTest(optimizer=opt):
                g, loss = classifier(rows, n_in, hid, n_classes)
                with g, g.compile_train(loss, optimizer=opt, lr=lr) as step:
                    self.assertIsInstance(step, rlx.TrainSession)
                    step.set_param("w1", w1)
                    step.set_inputs({"x": xs, "labels": ys})
                    losses = [step.run() for _ in range(40)]
                    self.assertTrue(close_to(losses[0], math.log(n_classes), 1e-5), losses[0])
                    self.assertLess(losses[-1], 0.5 * losses[0], "%s: %s" % (opt, losses[::8]))
                    self.assertNotEqual(list(step.get_param("w2")), [0.0] * (hid * n_classes))
                    step.lr = 0.0
                    self.assertEqual(step.lr, 0.0)
                    if opt in ("sgd", "adam"):  # lr 0 moves nothing (adamw still decays by lr * wd = 0)
                        a, b = step.run(), step.run()
                        self.assertEqual(a, b)

    def test_compile_train_defaults_to_every_param(self):
        g, loss = classifier(4, 3, 5, 2)
        self.assertEqual([p.name for p in g.params()], ["w1", "b1", "w2", "b2"])
        step = g.compile_train(loss)
        for n in ("w1", "b1", "w2", "b2"):
            self.assertIn(n, step.param_names)
        step.close()


# ---- models ------------------------------------------------------------------
class TestModels(Case):
    EXPECTED = {"mnist-cnn": (5258, (1, 28, 28), 6), "mnist-mlp": (101770, (784,), 4),
                "cifar-cnn": (113738, (3, 32, 32), 8), "resnet": (77578, (3, 32, 32), 14)}

    def test_vision_info(self):
        self.assertEqual(rlx.vision_models(), ["mnist-cnn", "mnist-mlp", "cifar-cnn", "resnet"])
        for slug, (total, dims, n_params) in self.EXPECTED.items():
            info = rlx.VisionModel(slug).info
            self.assertEqual(info.slug, slug)
            self.assertEqual(info.param_flat_len, total)
            self.assertEqual(sum(info.param_sizes), total)
            self.assertEqual(info.input_dims, dims)
            self.assertEqual(info.input_len, math.prod(dims))
            self.assertEqual(info.n_params, n_params)
            self.assertEqual(info.num_classes, 10)
            self.assertTrue(info.train_cpu)
            self.assertEqual([math.prod(s) for s in info.param_shapes], info.param_sizes)
        cnn = rlx.VisionModel("mnist_cnn").info  # alias
        self.assertEqual(cnn.slug, "mnist-cnn")
        self.assertEqual(cnn.param_names, ["conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc_w", "fc_b"])
        self.assertEqual(cnn.param_shapes[0], (8, 1, 3, 3))
        self.assertEqual(rlx.VisionModel("resnet-cifar").slug, "resnet")

    def test_vision_forward_shapes(self):
        for slug in rlx.vision_models():
            with self.subTest(slug=slug):
                m = rlx.VisionModel(slug)
                params = m.init_params(seed=1)
                self.assertEqual(len(params), m.info.param_flat_len)
                self.assertEqual(params, m.init_params(seed=1))
                x, labels = m.synthetic_batch(seed=3, batch=2)
                self.assertEqual(len(x), 2 * m.info.input_len)
                self.assertEqual(list(labels), [3, 4])
                logits = m.forward(x, params)
                self.assertEqual(len(logits), 2 * 10)
                self.assertTrue(all(math.isfinite(v) for v in logits))
                self.assertEqual(list(m.forward(x, params, batch=2)), list(logits))

    def test_vision_train_step_updates_params_in_place(self):
        m = rlx.VisionModel("mnist-mlp")
        params = m.init_params(seed=2)
        before = array.array("f", params)
        x, labels = m.synthetic_batch(seed=0, batch=8)
        losses = [m.train_step(x, labels, params, lr=0.05) for _ in range(8)]
        self.assertNotEqual(params, before)
        self.assertLess(losses[-1], losses[0])
        as_list = list(before)
        loss = m.train_step(x, labels, as_list, lr=0.05)  # a list is updated in place too
        self.assertTrue(close_to(loss, losses[0], 1e-5))
        self.assertNotEqual(as_list, list(before))

    def test_vision_build_and_train_with_adam(self):
        m = rlx.VisionModel("mnist-cnn")
        g = rlx.Graph()
        logits, loss = m.build(g, 4)
        self.assertEqual(logits.shape, (4, 10))
        self.assertEqual(loss.shape, ())
        self.assertEqual([p.name for p in g.params()], m.info.param_names)
        self.assertEqual(g.find("conv1_w").shape, (8, 1, 3, 3))
        self.assertEqual(g.find("x").shape, (4, 1, 28, 28))
        self.assertIsNone(g.find("nope"))
        s = g.compile(logits)
        self.assertEqual(s.input_shape("x"), (4, 1, 28, 28))
        params = m.init_params(seed=4)
        x, labels = m.synthetic_batch(seed=1, batch=4)
        for name, values in m.split_params(params).items():
            s.set_param(name, values)
        s.run({"x": x})
        self.assertAllClose(s.output(0), m.forward(x, params), rel=1e-4, abs_=1e-5)
        step = g.compile_train(loss, optimizer="adam", lr=0.01)
        for name, values in m.split_params(params).items():
            step.set_param(name, values)
        step.set_inputs({"x": x, "labels": labels})
        losses = [step.run() for _ in range(10)]
        self.assertLess(losses[-1], 0.5 * losses[0])

    def test_transformer_next_logits(self):
        cfg = dict(vocab=37, dim=16, n_layers=2, n_heads=2, head_dim=8, ffn=24, seed=5)
        tokens = [1, 5, 9, 2, 36]
        a = rlx.transformer_next_logits(tokens, **cfg)
        b = rlx.transformer_next_logits(array.array("f", tokens), **cfg)
        self.assertEqual(len(a), 37)
        self.assertEqual(a, b)
        self.assertTrue(all(math.isfinite(v) for v in a))
        self.assertNotEqual(a, rlx.transformer_next_logits(tokens, **dict(cfg, seed=6)))
        every = rlx.transformer_logits(tokens, **cfg)
        self.assertEqual(len(every), 5 * 37)
        self.assertAllClose(every[4 * 37:], a, rel=1e-4, abs_=1e-5)
        unfused = rlx.transformer_next_logits(tokens, skip_fusion=True, **cfg)
        self.assertAllClose(unfused, a, rel=1e-3, abs_=1e-4)

    @unittest.skipUnless(os.path.exists(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")),
                         "Fashion-MNIST is not installed")
    def test_dataset(self):
        with rlx.load_dataset(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"),
                              os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as d:
            self.assertEqual((len(d), d.rows, d.cols), (10000, 28, 28))
            x, y = d.batch(9998, 2)
            self.assertEqual((len(x), len(y)), (2 * 784, 2))
            self.assertTrue(all(0.0 <= v <= 1.0 for v in x))
            self.assertTrue(all(0 <= v < 10 for v in y))
            self.assertRlx(rlx.RlxInvalidArgument, lambda: d.batch(9999, 2), "outside")
        self.assertRlx(rlx.RlxStateError, lambda: d.batch(0, 1), "closed")
        self.assertRaises(rlx.RlxError, rlx.load_dataset, "/nonexistent/images", "/nonexistent/labels")


# ---- errors ------------------------------------------------------------------
class TestErrors(Case):
    def test_shape_mismatch_at_the_builder(self):
        g = rlx.Graph()
        x = g.input("x", (2, 3))
        w = g.param("w", (4, 5))
        err = self.assertRlx(rlx.RlxShapeError, lambda: x @ w, "node 2", "matmul", "[2, 3]", "[4, 5]")
        self.assertIsInstance(err, ValueError)
        self.assertEqual(err.status, rlx.errors.SHAPE)
        # the graph keeps its first error: later builders and compile refuse
        self.assertRlx(rlx.RlxStateError, lambda: x.relu(), "earlier builder", "matmul")
        self.assertRlx(rlx.RlxError, lambda: g.compile(x), "matmul")
        g2 = rlx.Graph()
        a, b = g2.input("a", (2, 3)), g2.input("b", (4,))
        self.assertRlx(rlx.RlxShapeError, lambda: a + b, "add", "node 0 [2, 3]", "node 1 [4]")

    def test_builder_argument_errors(self):
        g = rlx.Graph()
        x = g.input("x", (2, 3))
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.input("x", (3,)), "'x' is already used")
        self.assertRlx(rlx.RlxNotFound, lambda: g.op("no_such_op", [x]), "unknown op 'no_such_op'")
        g = rlx.Graph()
        x = g.input("x", (2, 3))
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.reduce_sum(x, axes=5), "axis 5")
        g = rlx.Graph()
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.input("x", (2, 0)), "positive")
        other = rlx.Graph().input("y", (2,))
        g = rlx.Graph()
        x = g.input("x", (2,))
        self.assertRlx(rlx.RlxInvalidArgument, lambda: x + other, "another graph")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.constant([1, 2, 3], shape=(2,)), "3 values")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.attention(x, x, x, mask="diagonal"), "mask")

    def test_gradient_errors(self):
        g = rlx.Graph()
        x = g.input("x", (2,))
        p = g.param("p", (2,))
        unused = g.param("unused", (2,))
        loss = g.reduce_sum(x * p)
        self.assertRlx(rlx.RlxGraphError, lambda: g.grad_with_loss(loss, [p, unused]))

    def test_session_errors(self):
        g, y = small_graph()
        s = g.compile(y)
        self.assertRlx(rlx.RlxStateError, s.run, "input 'x' has not been set")
        self.assertRlx(rlx.RlxStateError, lambda: s.output(0), "has not run")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: s.set_input("x", [1, 2, 3, 4, 5]), "'x' holds 6 values, got 5")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: s.set_param("w", [0.0] * 13), "'w' holds 12 values, got 13")
        self.assertRlx(rlx.RlxNotFound, lambda: s.set_input("nope", [1.0]), "no input named 'nope'")
        self.assertRlx(rlx.RlxNotFound, lambda: s.get_param("nope"), "no param named 'nope'")
        s.set_input("x", X)
        s.run()
        self.assertRlx(rlx.RlxNotFound, lambda: s.output(3), "output 3 does not exist")
        self.assertRlx(rlx.RlxNotFound, lambda: s.output_shape(3), "output 3")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.compile(y, device="tpu"), "device")
        self.assertRaises(TypeError, s.set_input, "x", ["a"] * 6)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: s.set_input("x", [0.5] * 5), "got 5")
        s.close()
        self.assertRlx(rlx.RlxStateError, s.run, "closed")
        g.close()
        self.assertRlx(rlx.RlxStateError, lambda: g.input("z", (1,)), "closed")

    def test_train_errors(self):
        g, loss = classifier(4, 3, 5, 2)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g.compile_train(loss, optimizer="lion"), "optimizer")
        step = g.compile_train(loss, optimizer="adam", lr=1e-3)
        self.assertRlx(rlx.RlxStateError, step.run, "has not been set")
        step.close()

    def test_model_errors(self):
        err = self.assertRlx(rlx.RlxNotFound, lambda: rlx.VisionModel("lenet"), "unknown model 'lenet'", "mnist-cnn")
        self.assertIsInstance(err, LookupError)
        m = rlx.VisionModel("mnist-cnn")
        params = m.init_params(0)
        x, labels = m.synthetic_batch(0, 2)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: m.forward(x[:-1], params), "not a whole number")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: m.forward(x, params[:-1]), "params", "5257", "5258")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: m.forward(x, params, batch=3), "x")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: m.train_step(x, labels[:1], params, 0.1), "labels")
        self.assertRlx(rlx.RlxNumericError, lambda: m.train_step(x, labels, params, float("nan")), "finite")
        self.assertRaises(TypeError, m.train_step, x, labels, tuple(params), 0.1)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: m.synthetic_batch(0, 0), "batch")
        w = [0.0] * 6
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.mlp_forward([1, 2, 3], 3, 2, 1, w[:5], [0, 0], [0, 0], [0]),
                       "w1 holds 5 values, expected 6")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.mlp_forward([1, 2], 3, 2, 1, w, [0, 0], [0, 0], [0]),
                       "x holds 2 values")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.mlp_loss([1, 2, 3], [0, 0], 3, 2, 1, w, [0, 0], [0, 0],
                                                                    [0]), "t holds 2 values")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.transformer_next_logits(
            [1, 2], vocab=8, dim=8, n_layers=1, n_heads=3, head_dim=4, ffn=8))
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.transformer_next_logits(
            [], vocab=8, dim=8, n_layers=1, n_heads=2, head_dim=4, ffn=8), "at least one token")

    def test_error_classes(self):
        for cls, base in ((rlx.RlxInvalidArgument, ValueError), (rlx.RlxShapeError, ValueError),
                          (rlx.RlxNotFound, LookupError), (rlx.RlxStateError, RuntimeError),
                          (rlx.RlxNumericError, ArithmeticError)):
            self.assertTrue(issubclass(cls, rlx.RlxError) and issubclass(cls, base))
        e = rlx.RlxError.from_status(-7, "run: input 'x' has not been set")
        self.assertIsInstance(e, rlx.RlxStateError)
        self.assertEqual((e.status, e.status_name, str(e)), (-7, "bad state", "run: input 'x' has not been set"))

    def test_missing_library_says_run_make(self):
        code = "import rlx\ntry:\n    rlx.Graph()\nexcept rlx.RlxLibraryError as e:\n    print('ERR', e)\n"
        env = dict(os.environ, RLX_LIBRARY="/nonexistent/librlx.so", PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertIn("ERR", out.stdout, out.stderr)
        self.assertIn("/nonexistent/librlx.so", out.stdout)
        self.assertIn("run `make", out.stdout)


# ---- lifetime ------------------------------------------------------------------
LEAK_CHECK = textwrap.dedent("""
    # Counts the library's live bytes through rlx_set_allocator while graphs
    # and sessions are made and dropped (closed, with-blocks, or only
    # garbage collected).
    import ctypes, gc, sys
    import rlx
    from rlx import _native
    libc = ctypes.CDLL(None)
    libc.realloc.restype = ctypes.c_void_p
    libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    live = [0]
    FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
    def alloc(ud, ptr, osize, nsize):
        if nsize == 0:
            libc.free(ptr)
            live[0] -= osize if ptr else 0
            return None
        p = libc.realloc(ptr, nsize)
        if p:
            live[0] += nsize - (osize if ptr else 0)
        return p
    hook = FN(alloc)
    L = _native.lib()
    L.rlx_set_allocator.argtypes = [FN, ctypes.c_void_p]
    L.rlx_set_allocator(hook, None)

    def cycle(mode):
        g = rlx.Graph()
        x = g.input("x", (4, 8))
        w = g.param("w", (8, 3))
        y = (x @ w).relu()
        s = g.compile(y)
        s.set_input("x", [0.5] * 32)
        s.run()
        t = g.compile_train(g.reduce_mean(y), [w], optimizer="adam")
        t.set_input("x", [0.5] * 32)
        t.run()
        if mode == "close":
            s.close(); t.close(); g.close(); s.close(); g.close()
        elif mode == "with":
            with g, s, t:
                pass
        # mode "gc": dropped here
    for mode in ("close", "with", "gc"):
        for _ in range(20):
            cycle(mode)
        gc.collect()
        print(mode, live[0])
        if live[0] != 0:
            sys.exit(1)
""")


class TestLifetime(Case):
    def test_handles_are_freed(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.run([sys.executable, "-c", LEAK_CHECK], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stdout.split(), ["close", "0", "with", "0", "gc", "0"])

    def test_many_sessions_collected(self):
        for _ in range(50):
            g, y = small_graph()
            s = g.compile(y)
            del g, s
        gc.collect()
        g, y = small_graph()
        self.assertFalse(g.closed)
        s = g.compile(y)
        del g  # the session outlives its graph
        gc.collect()
        s.set_input("x", X)
        s.run()
        self.assertEqual(len(s.output(0)), 8)


if __name__ == "__main__":
    unittest.main()
