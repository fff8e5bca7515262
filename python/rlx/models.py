"""models.py - the ready-made models of include/rlx_models.h: the four vision
classifiers, the two-layer MLP entry points, the decoder-only transformer
and the Fashion-MNIST (IDX) reader.  The library caches a compiled session
per configuration, so repeated calls do not recompile.

The C entry points take raw pointers without lengths, so every length is
checked here first: a wrong one raises RlxInvalidArgument before the call.
"""

import array
import ctypes
import weakref

from . import _buffers, _native
from ._native import lib, check, fail, decode
from .graph import Node

_I32 = _buffers._I32_CODE


def _need(buf, n, what):
    if buf.n != n:
        fail("%s holds %d values, expected %d" % (what, buf.n, n))


def _seed(seed):
    seed = int(seed)
    if not 0 <= seed < 2 ** 64:
        fail("the seed must be in [0, 2**64), got %d" % seed)
    return seed


def clear_cache():
    """Drops every compiled session cached by the model entry points."""
    lib().rlx_models_clear_cache()


# ---- vision models ----------------------------------------------------------
class VisionInfo:
    """Metadata of a vision model.

    Attributes: slug, title, input_dims (one sample: (784,) or (C, H, W)),
    num_classes, param_names, param_sizes (elements), param_shapes,
    input_len (elements of one sample), param_flat_len (sum of param_sizes),
    train_cpu / train_webgpu / train_webgl (can train on that backend)."""

    def __init__(self, c):
        self.slug = decode(c.slug)
        self.title = decode(c.title)
        self.input_dims = tuple(c.input_dims[:c.input_rank])
        self.num_classes = c.num_classes
        n = c.n_params
        self.param_names = [decode(c.param_names[k]) for k in range(n)]
        self.param_sizes = [int(c.param_sizes[k]) for k in range(n)]
        self.param_shapes = [tuple(c.param_dims[k][:c.param_ranks[k]]) for k in range(n)]
        self.input_len = int(c.input_len)
        self.param_flat_len = int(c.param_flat_len)
        self.train_cpu = bool(c.train_cpu)
        self.train_webgpu = bool(c.train_webgpu)
        self.train_webgl = bool(c.train_webgl)

    @property
    def n_params(self):
        return len(self.param_names)

    def as_dict(self):
        return dict(vars(self))

    def __repr__(self):
        return "<rlx.VisionInfo %s: %d params (%d values), input %s>" % (
            self.slug, self.n_params, self.param_flat_len, list(self.input_dims))


def vision_models():
    """Canonical slugs of the vision models (mnist-cnn, mnist-mlp, ...)."""
    L = lib()
    return [decode(L.rlx_vision_slug(i)) for i in range(L.rlx_vision_count())]


class VisionModel:
    """A vision classifier by slug or alias (RlxNotFound naming the known
    slugs when unknown).  Params travel flat: one float32 array of
    info.param_flat_len values, every param in info.param_names order."""

    def __init__(self, slug):
        c = _native.VisionInfo()
        check(lib().rlx_vision_info_get(str(slug).encode(), ctypes.byref(c)))
        self.info = VisionInfo(c)
        self.slug = self.info.slug
        self._slug_b = self.slug.encode()

    def __repr__(self):
        return "<rlx.VisionModel %s>" % self.slug

    def init_params(self, seed=0):
        """He-style uniform init from seed, biases zero: array('f') of
        info.param_flat_len values."""
        result, buf = _buffers.new_f32(self.info.param_flat_len)
        check(lib().rlx_vision_init_params(self._slug_b, _seed(seed), buf.ptr, buf.n))
        return result

    def synthetic_batch(self, seed=0, batch=8):
        """(x, labels): batch samples uniform in [-1, 1) (array('f') of
        batch * input_len) and labels (seed + i) mod 10 (int32 array)."""
        batch = int(batch)
        if batch <= 0:
            fail("synthetic_batch: batch must be at least 1 (got %d)" % batch)
        x, xb = _buffers.new_f32(batch * self.info.input_len)
        labels, lb = _buffers.new_i32(batch)
        check(lib().rlx_vision_synthetic_batch(self._slug_b, _seed(seed), batch, xb.ptr, xb.n, lb.ptr, lb.n))
        return x, labels

    def _batch(self, xb, batch):
        n = self.info.input_len
        if batch is None:
            if xb.n == 0 or xb.n % n:
                fail("%s: x holds %d values, not a whole number of %d-value samples" % (self.slug, xb.n, n))
            batch = xb.n // n
        batch = int(batch)
        if batch <= 0:
            fail("%s: batch must be at least 1 (got %d)" % (self.slug, batch))
        _need(xb, batch * n, "%s: x (batch %d of %s)" % (self.slug, batch, list(self.info.input_dims)))
        return batch

    def forward(self, x, params, batch=None):
        """Logits (array('f') of batch * num_classes) of x (batch samples,
        batch inferred from len(x) when None) under flat params."""
        xb = _buffers.f32(x, "x")
        batch = self._batch(xb, batch)
        pb = _buffers.f32(params, "params")
        _need(pb, self.info.param_flat_len, "%s: params" % self.slug)
        logits, ob = _buffers.new_f32(batch * self.info.num_classes)
        check(lib().rlx_vision_forward(self._slug_b, batch, xb.ptr, pb.ptr, ob.ptr))
        return logits

    def train_step(self, x, labels, params, lr, batch=None):
        """One SGD step on (x, labels); params (array('f'), a float32 numpy
        array or a list) are updated in place.  Returns the loss before the
        step."""
        xb = _buffers.f32(x, "x")
        batch = self._batch(xb, batch)
        lb = _buffers.i32(labels, "labels")
        _need(lb, batch, "%s: labels" % self.slug)
        pb = _buffers.f32_inout(params, "params")
        _need(pb, self.info.param_flat_len, "%s: params" % self.slug)
        loss = ctypes.c_float()
        check(lib().rlx_vision_train_step(self._slug_b, batch, xb.ptr, lb.ptr, pb.ptr, float(lr),
                                          ctypes.byref(loss)))
        pb.done()
        return loss.value

    def build(self, graph, batch):
        """Adds the model to graph for a batch size: inputs 'x' [batch,
        *input_dims] and 'labels' [batch] (i32), params by info.param_names
        (then also in graph.params(), so graph.compile_train(loss) trains
        them with any optimizer).  Returns (logits, loss) Nodes."""
        logits, loss = ctypes.c_int32(), ctypes.c_int32()
        check(lib().rlx_vision_build(graph._handle(), self._slug_b, int(batch), ctypes.byref(logits),
                                     ctypes.byref(loss)))
        for name in self.info.param_names:
            graph._adopt_param(name)
        return (Node(graph, logits.value, graph.shape_of(logits.value), "logits"),
                Node(graph, loss.value, graph.shape_of(loss.value), "loss"))

    def split_params(self, flat):
        """{param name: array('f')} of flat params (info.param_names order)."""
        buf = _buffers.f32(flat, "params")
        _need(buf, self.info.param_flat_len, "%s: params" % self.slug)
        values = array.array("f", bytes(4 * buf.n))
        ctypes.memmove((ctypes.c_float * buf.n).from_buffer(values), buf.ptr, 4 * buf.n)
        out, off = {}, 0
        for name, n in zip(self.info.param_names, self.info.param_sizes):
            out[name] = values[off:off + n]
            off += n
        return out


# ---- the MLP ----------------------------------------------------------------
def _mlp(x, in_dim, hid, out, w1, b1, w2, b2, what):
    in_dim, hid, out = int(in_dim), int(hid), int(out)
    if in_dim <= 0 or hid <= 0 or out <= 0:
        fail("%s: in_dim, hid and out must be at least 1 (got %d, %d, %d)" % (what, in_dim, hid, out))
    xb = _buffers.f32(x, "x")
    if xb.n == 0 or xb.n % in_dim:
        fail("%s: x holds %d values, not a whole number of rows of %d" % (what, xb.n, in_dim))
    rows = xb.n // in_dim
    bufs = []
    for name, v, n in (("w1", w1, in_dim * hid), ("b1", b1, hid), ("w2", w2, hid * out), ("b2", b2, out)):
        b = _buffers.f32(v, name)
        _need(b, n, "%s: %s" % (what, name))
        bufs.append(b)
    m = _native.Mlp(rows, in_dim, hid, out, *(b.ptr for b in bufs))
    return m, xb, bufs, rows


def _targets(t, rows, out, what):
    tb = _buffers.f32(t, "t")
    _need(tb, rows * out, "%s: t" % what)
    return tb


def mlp_forward(x, in_dim, hid, out, w1, b1, w2, b2):
    """relu(x W1 + b1) W2 + b2 for x[rows, in_dim] (rows = len(x) / in_dim):
    array('f') of rows * out."""
    m, xb, keep, rows = _mlp(x, in_dim, hid, out, w1, b1, w2, b2, "mlp_forward")
    y, yb = _buffers.new_f32(rows * m.out)
    check(lib().rlx_mlp_forward(ctypes.byref(m), xb.ptr, yb.ptr))
    return y


def mlp_loss(x, t, in_dim, hid, out, w1, b1, w2, b2):
    """Sum of squared errors of the MLP against t[rows, out]."""
    m, xb, keep, rows = _mlp(x, in_dim, hid, out, w1, b1, w2, b2, "mlp_loss")
    tb = _targets(t, rows, m.out, "mlp_loss")
    loss = ctypes.c_float()
    check(lib().rlx_mlp_loss(ctypes.byref(m), xb.ptr, tb.ptr, ctypes.byref(loss)))
    return loss.value


def mlp_grads(x, t, in_dim, hid, out, w1, b1, w2, b2):
    """[loss, dw1..., db1..., dw2..., db2...] as array('f')."""
    m, xb, keep, rows = _mlp(x, in_dim, hid, out, w1, b1, w2, b2, "mlp_grads")
    tb = _targets(t, rows, m.out, "mlp_grads")
    g, gb = _buffers.new_f32(1 + sum(b.n for b in keep))
    check(lib().rlx_mlp_grads(ctypes.byref(m), xb.ptr, tb.ptr, gb.ptr))
    return g


def mlp_train_step(x, t, in_dim, hid, out, w1, b1, w2, b2, lr):
    """The params after one SGD step p -= lr g: array('f') of
    [w1..., b1..., w2..., b2...]."""
    m, xb, keep, rows = _mlp(x, in_dim, hid, out, w1, b1, w2, b2, "mlp_train_step")
    tb = _targets(t, rows, m.out, "mlp_train_step")
    p, pb = _buffers.new_f32(sum(b.n for b in keep))
    check(lib().rlx_mlp_train_step(ctypes.byref(m), xb.ptr, tb.ptr, float(lr), pb.ptr))
    return p


# ---- the transformer ----------------------------------------------------------
def _transformer(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seed, window, skip_fusion):
    cfg = _native.TransformerConfig(int(vocab), int(dim), int(n_layers), int(n_heads), int(head_dim), int(ffn),
                                    _seed(seed), int(window), int(bool(skip_fusion)))
    tb = _buffers.f32(tokens, "tokens")
    if tb.n == 0:
        fail("transformer: needs at least one token")
    return cfg, tb


def transformer_next_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seed=0, window=0,
                            skip_fusion=False):
    """Next-token logits (array('f') of vocab values) of the decoder-only
    transformer with weights synthesized from seed; tokens are ids in
    [0, vocab).  window > 0 uses sliding-window attention."""
    cfg, tb = _transformer(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seed, window, skip_fusion)
    if cfg.vocab <= 0:
        fail("transformer: vocab must be at least 1 (got %d)" % cfg.vocab)
    logits, lb = _buffers.new_f32(cfg.vocab)
    check(lib().rlx_transformer_next_logits(ctypes.byref(cfg), tb.ptr, tb.n, lb.ptr))
    return logits


def transformer_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seed=0, window=0,
                       skip_fusion=False):
    """Logits of every position: array('f') of len(tokens) * vocab."""
    cfg, tb = _transformer(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seed, window, skip_fusion)
    if cfg.vocab <= 0:
        fail("transformer: vocab must be at least 1 (got %d)" % cfg.vocab)
    logits, lb = _buffers.new_f32(tb.n * cfg.vocab)
    check(lib().rlx_transformer_logits(ctypes.byref(cfg), tb.ptr, tb.n, lb.ptr))
    return logits


# ---- datasets ---------------------------------------------------------------
class Dataset:
    """Images and labels read from IDX files (gzip or raw), e.g.
    Fashion-MNIST.  Images are scaled to [0, 1].

    Attributes: count, rows, cols, sample_len (rows * cols).  batch(start,
    count) copies a slice; close() frees the C memory (also on garbage
    collection)."""

    def __init__(self, images_path, labels_path):
        self._c = _native.Dataset()
        check(lib().rlx_dataset_load(str(images_path).encode(), str(labels_path).encode(), ctypes.byref(self._c)))
        self._finalizer = weakref.finalize(self, lib().rlx_dataset_free, ctypes.byref(self._c))
        self.count, self.rows, self.cols = self._c.count, self._c.rows, self._c.cols
        self.sample_len = self.rows * self.cols

    def close(self):
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return self.count

    def batch(self, start, count):
        """(images, labels) of samples [start, start + count): array('f') of
        count * sample_len and an int32 array of count."""
        if not self._finalizer.alive:
            _native.closed("the dataset")
        start, count = int(start), int(count)
        if start < 0 or count < 0 or start + count > self.count:
            fail("dataset: samples [%d, %d) are outside [0, %d)" % (start, start + count, self.count))
        x = array.array("f", bytes(4 * count * self.sample_len))
        y = array.array(_I32, bytes(4 * count))
        if count:
            src = ctypes.addressof(self._c.images.contents) + 4 * start * self.sample_len
            ctypes.memmove((ctypes.c_float * len(x)).from_buffer(x), src, 4 * len(x))
            src = ctypes.addressof(self._c.labels.contents) + 4 * start
            ctypes.memmove((ctypes.c_int32 * count).from_buffer(y), src, 4 * count)
        return x, y

    def __repr__(self):
        return "<rlx.Dataset %d samples of %dx%d>" % (self.count, self.rows, self.cols)


def load_dataset(images_path, labels_path):
    """A Dataset from an IDX image file and its label file."""
    return Dataset(images_path, labels_path)
