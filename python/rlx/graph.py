"""graph.py - Graph and Node: describe a model in code as a graph of tensor
ops, differentiate it and compile it into a Session.

    g = rlx.Graph()
    x = g.input("x", (2, 3))
    w = g.param("w", (3, 4))
    b = g.param("b", (4,))
    y = (x @ w + b).relu()
    with g.compile(y) as s:
        s.set_param("w", ...); s.set_param("b", ...); s.set_input("x", ...)
        s.run()
        print(s.output_shape(0), s.output(0))

Builders check their arguments at once: a shape mismatch raises an RlxError
naming the node, the op and the shapes involved.  The library keeps the first
builder error of a graph, so a graph whose builder failed cannot be extended
or compiled any more: build a new one.
"""

import inspect
import weakref

from . import _buffers, _native
from ._native import lib, check, fail, decode, int32_array
from .errors import RlxError, NOT_FOUND, STATE
from ._constants import DTYPE, DEVICE as _DEVICES, MASK as _MASKS, OPTIMIZER as _OPTIMIZERS

_DTYPES = dict(DTYPE, float32=DTYPE["f32"], int32=DTYPE["i32"])

_op_ids = {}


def op_id(name):
    """The op table id of an op name (RlxNotFound when unknown)."""
    i = _op_ids.get(name)
    if i is None:
        L = lib()
        i = L.rlx_op_from_name(name.encode())
        if i == L.rlx_op_from_name(b"\x01no such op"):
            fail("unknown op '%s' (known: %s)" % (name, ", ".join(op_names())), NOT_FOUND)
        _op_ids[name] = i
    return i


def op_names():
    """Names of every op in the library's op table, in table order."""
    L = lib()
    count = L.rlx_op_from_name(b"\x01no such op")
    return [decode(L.rlx_op_name(i)) for i in range(count)]


_arities = {}


def op_arity(name):
    """(min, max) inputs of an op, from the library's op table (include/rlx_op_info.h)."""
    a = _arities.get(name)
    if a is None:
        L = lib()
        i = op_id(name)
        a = _arities[name] = (L.rlx_op_min_inputs(i), L.rlx_op_max_inputs(i))
    return a


_attr_tables = {}


def op_attrs(name):
    """The named attributes of an op, from the library's attribute table
    (include/rlx_attrs.def): a list of (name, type, slot), type one of int,
    bool, axes, enum, ints (a list) or float; slot is the position in the
    op's int (or, for float, float) attributes."""
    t = _attr_tables.get(name)
    if t is None:
        L = lib()
        i = op_id(name)
        t = _attr_tables[name] = [(decode(L.rlx_op_attr_name(i, k)), decode(L.rlx_op_attr_type(i, k)),
                                   L.rlx_op_attr_slot(i, k)) for k in range(L.rlx_op_attr_count(i))]
    return list(t)


def _named_attrs(name, attrs):
    """{name: value} -> (ints, floats) at the slots of the op's table."""
    table = op_attrs(name)
    names = [a[0] for a in table]
    for key in attrs:
        if key not in names:
            fail("op '%s' has no attribute '%s' (%s)" % (name, key, "its attributes: " + ", ".join(names)
                                                          if names else "it takes none"))
    ints, floats = {}, {}
    for aname, atype, slot in table:
        v = attrs.get(aname)
        if v is None and atype != "bool":
            fail("op '%s': attribute %s (%s) is missing" % (name, aname, atype))
        if atype == "float":
            floats[slot] = float(v)
        elif atype == "ints":
            for k, d in enumerate(v):
                ints[slot + k] = int(d)
        elif atype == "bool":
            ints[slot] = 1 if v else 0
        else:
            if isinstance(v, bool) or int(v) != v:
                fail("op '%s': attribute %s must be an integer, got %r" % (name, aname, v))
            ints[slot] = int(v)
    return [ints[k] for k in sorted(ints)], [floats[k] for k in sorted(floats)]


def _pair(v, what):
    if isinstance(v, int):
        return v, v
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        fail("%s: expected an int or a pair (h, w), got %r" % (what, v))
    return v


def _shape(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


class Node:
    """A node of a Graph: the result of a builder.

    Attributes:
        graph: the Graph it belongs to.
        id: its node id in the library (int >= 0).
        shape: its shape (tuple of ints; () for a scalar).
        dtype: 'f32', or 'i32' for an int32 input.
        op: the op name that made it.
        name: the name of an input or param, else None.

    Arithmetic operators build nodes: + - * / ** @ and unary -, with Nodes or
    numbers (made scalar constants).  Every op of the graph is also a method
    of its nodes, applied with the node as first input: x.relu(),
    x.matmul(w), x.reduce_mean(axes=1).
    """

    __slots__ = ("graph", "id", "shape", "dtype", "op", "name", "__weakref__")

    def __init__(self, graph, node_id, shape, op, dtype="f32", name=None):
        self.graph = graph
        self.id = node_id
        self.shape = shape
        self.op = op
        self.dtype = dtype
        self.name = name

    @property
    def rank(self):
        """Number of dims."""
        return len(self.shape)

    @property
    def numel(self):
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        label = "%s %r" % (self.op, self.name) if self.name else self.op
        return "<rlx.Node %d %s shape=%s dtype=%s>" % (self.id, label, list(self.shape), self.dtype)

    def __getattr__(self, attr):
        if attr in _NODE_METHODS or (not attr.startswith("_") and attr in elementwise_ops()):
            method = getattr(self.graph, attr)

            def bound(*args, **kwargs):
                return method(self, *args, **kwargs)
            bound.__name__ = attr
            bound.__doc__ = method.__doc__
            return bound
        raise AttributeError("'Node' object has no attribute '%s'" % attr)

    def __add__(self, other):
        return self.graph.add(self, other)

    def __radd__(self, other):
        return self.graph.add(other, self)

    def __sub__(self, other):
        return self.graph.sub(self, other)

    def __rsub__(self, other):
        return self.graph.sub(other, self)

    def __mul__(self, other):
        return self.graph.mul(self, other)

    def __rmul__(self, other):
        return self.graph.mul(other, self)

    def __truediv__(self, other):
        return self.graph.div(self, other)

    def __rtruediv__(self, other):
        return self.graph.div(other, self)

    def __pow__(self, other):
        return self.graph.pow(self, other)

    def __rpow__(self, other):
        return self.graph.pow(other, self)

    def __matmul__(self, other):
        return self.graph.matmul(self, other)

    def __rmatmul__(self, other):
        return self.graph.matmul(other, self)

    def __neg__(self):
        return self.graph.neg(self)

    def __pos__(self):
        return self

    __hash__ = object.__hash__


class Graph(_native.Handle):
    """A graph of tensor ops under construction (an rlx_graph).

    Leaves: input(), param(), constant(), scalar().  Ops: one method per op
    (add, sub, ..., relu, matmul, conv2d, attention, ...), and op() for any
    op of the table by name.  Then grad_with_loss() / grad() for gradients,
    compile() for a Session and compile_train() for a TrainSession.

    The graph is freed by close(), at the end of a `with` block, or when it
    is garbage collected; closing twice is harmless.  Sessions keep their own
    copy and outlive the graph.
    """

    _what = "the graph"

    def __init__(self):
        L = lib()
        h = L.rlx_graph_new()
        if not h:
            check(-4, "rlx_graph_new: out of memory")
        self._h = h
        self._finalizer = weakref.finalize(self, L.rlx_graph_free, h)
        self._params = []  # (id, name, shape) of the params, in creation order

    # ---- state ----------------------------------------------------------
    @property
    def node_count(self):
        """Number of nodes in the graph."""
        return lib().rlx_graph_node_count(self._handle())

    @property
    def status(self):
        """The first builder error's status (0 when none)."""
        return lib().rlx_graph_status(self._handle())

    @property
    def error(self):
        """The first builder error's message ('' when none)."""
        return decode(lib().rlx_graph_error(self._handle()))

    def params(self):
        """The param nodes, in the order they were made."""
        return [Node(self, i, s, "param", "f32", n) for i, n, s in self._params]

    def find(self, name):
        """The input or param called name (also one added by a model
        builder such as VisionModel.build), or None."""
        nid = lib().rlx_graph_find(self._handle(), name.encode())
        if nid < 0:
            return None
        op = "param" if any(i == nid for i, _, _ in self._params) else "leaf"
        return Node(self, nid, self.shape_of(nid), op, name=name)

    def _adopt_param(self, name):
        """Registers a param made by a C model builder, so params() and the
        default of grad_with_loss / compile_train include it."""
        node = self.find(name)
        if node is None:
            fail("no param named '%s' in the graph" % name, NOT_FOUND)
        if all(i != node.id for i, _, _ in self._params):
            self._params.append((node.id, name, node.shape))
        node.op = "param"
        return node

    def shape_of(self, node_id):
        """Shape of a node id as a tuple."""
        dims = (_native.c_int32 * _native.MAX_RANK)()
        rank = lib().rlx_node_shape(self._handle(), node_id, dims)
        if rank < 0:
            fail("node %d does not exist in this graph" % node_id)
        return tuple(dims[:rank])

    def _build(self, op_name, fn, *args, dtype="f32", name=None):
        """Calls a C builder and wraps its node; raises at once on failure."""
        L = lib()
        h = self._handle()
        before = L.rlx_graph_status(h)
        if before != 0:
            raise RlxError.from_status(
                STATE, "the graph has an error from an earlier builder (build a new graph): %s"
                % decode(L.rlx_graph_error(h)))
        nid = fn(h, *args)
        status = L.rlx_graph_status(h)
        if nid < 0 or status != 0:
            msg = decode(L.rlx_graph_error(h)) or _native.last_error()
            raise RlxError.from_status(status if status < 0 else -1, msg)
        return Node(self, nid, self.shape_of(nid), op_name, dtype, name)

    def _id(self, x):
        """The node id of a Node of this graph; numbers and nested lists
        become constants."""
        if isinstance(x, Node):
            if x.graph is not self:
                fail("%r belongs to another graph" % (x,))
            return x.id
        return self.constant(x).id

    # ---- leaves ---------------------------------------------------------
    def input(self, name, shape, dtype="f32"):
        """An input tensor fed per run (Session.set_input); dtype 'f32' or
        'i32' (class ids, token ids)."""
        if dtype not in _DTYPES:
            fail("input '%s': dtype must be 'f32' or 'i32', got %r" % (name, dtype))
        dims, rank = int32_array(_shape(shape))
        return self._build("input", lib().rlx_input, name.encode(), rank, dims, _DTYPES[dtype],
                           dtype="i32" if _DTYPES[dtype] == DTYPE["i32"] else "f32", name=name)

    def param(self, name, shape):
        """A trainable parameter (zero at compile; Session.set_param)."""
        dims, rank = int32_array(_shape(shape))
        node = self._build("param", lib().rlx_param, name.encode(), rank, dims, name=name)
        self._params.append((node.id, name, node.shape))
        return node

    def constant(self, values, shape=None):
        """A constant tensor from values (number, nested list, array('f'),
        numpy array, buffer).  shape defaults to the shape of a nested list
        or numpy array, () for a number, else (len,)."""
        if shape is None:
            if isinstance(values, (int, float)) and not isinstance(values, bool):
                return self.scalar(values)
            if hasattr(values, "__array_interface__"):
                shape = tuple(values.__array_interface__["shape"])
            elif isinstance(values, (list, tuple)):
                values, shape = _buffers.flatten(values)
        buf = _buffers.f32(values, "constant")
        if shape is None:
            shape = (buf.n,)
        shape = _shape(shape)
        n = 1
        for d in shape:
            n *= d
        if buf.n != n:
            fail("constant: %d values do not fill shape %s (%d elements)" % (buf.n, list(shape), n))
        dims, rank = int32_array(shape)
        return self._build("constant", lib().rlx_constant, rank, dims, buf.ptr)

    def scalar(self, value):
        """A rank-0 constant."""
        return self._build("constant", lib().rlx_scalar, float(value))

    # ---- any op ---------------------------------------------------------
    def op(self, name, inputs, ints=(), floats=(), **attrs):
        """Any op of the table by name, with its attributes by name as the
        library's attribute table lists them (op_attrs(name)), e.g.
        g.op('softmax', [x], axis=1), g.op('matmul', [a, b], trans_b=True)
        (flags left out are false); or by position:
        g.op('softmax', [x], ints=[1])."""
        oid = op_id(name)
        if attrs:
            if ints or floats:
                fail("op '%s': give attributes by name or as ints/floats, not both" % name)
            ints, floats = _named_attrs(name, attrs)
        ids, n = int32_array([self._id(x) for x in inputs])
        iattr, ni = int32_array(ints)
        fl = [float(f) for f in floats]
        fattr = (_native.c_float * max(1, len(fl)))(*fl)
        return self._build(name, lib().rlx_op_node, oid, ids, n, iattr, ni, fattr, len(fl))

    # ---- ops with attributes ---------------------------------------------
    def matmul(self, a, b, trans_a=False, trans_b=False):
        """a[..., M, K] @ b[..., K, N] -> [..., M, N] with broadcast batch dims;
        trans_a reads a as [..., K, M], trans_b reads b as [..., N, K]."""
        return self._build("matmul", lib().rlx_matmul_t, self._id(a), self._id(b), int(bool(trans_a)),
                           int(bool(trans_b)))

    def reshape(self, x, shape):
        """x with a new shape of the same size (one dim may be -1)."""
        dims, rank = int32_array(_shape(shape))
        return self._build("reshape", lib().rlx_reshape, self._id(x), rank, dims)

    def expand(self, x, shape):
        """x broadcast to shape."""
        dims, rank = int32_array(_shape(shape))
        return self._build("expand", lib().rlx_expand, self._id(x), rank, dims)

    def permute(self, x, perm):
        """x with its axes reordered: output axis i is input axis perm[i]."""
        xid = self._id(x)
        perm = [int(p) for p in perm]
        rank = len(self.shape_of(xid))
        if len(perm) != rank:
            fail("permute: perm %s needs %d entries for a rank-%d tensor" % (perm, rank, rank))
        arr, _ = int32_array(perm)
        return self._build("permute", lib().rlx_permute, xid, arr)

    def transpose(self, x, axis0=-2, axis1=-1):
        """x with two axes swapped (the last two by default)."""
        return self._build("permute", lib().rlx_transpose, self._id(x), int(axis0), int(axis1))

    def narrow(self, x, axis, start, length):
        """The slice [start, start + length) of x along axis."""
        return self._build("narrow", lib().rlx_narrow, self._id(x), int(axis), int(start), int(length))

    def concat(self, xs, axis=0):
        """xs joined along axis (up to 8 tensors)."""
        ids, n = int32_array([self._id(x) for x in xs])
        return self._build("concat", lib().rlx_concat, ids, n, int(axis))

    def _reduce(self, name, x, axes, keepdim):
        xid = self._id(x)
        if axes is None:
            axes = range(len(self.shape_of(xid)))
        elif isinstance(axes, int):
            axes = (axes,)
        arr, n = int32_array(axes)
        return self._build(name, getattr(lib(), "rlx_" + name), xid, arr, n, int(bool(keepdim)))

    def reduce_sum(self, x, axes=None, keepdim=False):
        """Sum over axes (an int, a sequence, or None for all axes)."""
        return self._reduce("reduce_sum", x, axes, keepdim)

    def reduce_mean(self, x, axes=None, keepdim=False):
        """Mean over axes (an int, a sequence, or None for all axes)."""
        return self._reduce("reduce_mean", x, axes, keepdim)

    def reduce_max(self, x, axes=None, keepdim=False):
        """Maximum over axes (an int, a sequence, or None for all axes)."""
        return self._reduce("reduce_max", x, axes, keepdim)

    def softmax(self, x, axis=-1):
        """Softmax along axis."""
        return self._build("softmax", lib().rlx_softmax, self._id(x), int(axis))

    def log_softmax(self, x, axis=-1):
        """Log of the softmax along axis."""
        return self._build("log_softmax", lib().rlx_log_softmax, self._id(x), int(axis))

    def rms_norm(self, x, weight, eps=1e-6):
        """RMSNorm over the last axis: x[..., D], weight[D]."""
        return self._build("rms_norm", lib().rlx_rms_norm, self._id(x), self._id(weight), float(eps))

    def layer_norm(self, x, weight, bias, eps=1e-5):
        """LayerNorm over the last axis: x[..., D], weight[D], bias[D]."""
        return self._build("layer_norm", lib().rlx_layer_norm, self._id(x), self._id(weight), self._id(bias),
                           float(eps))

    def rope(self, x, theta=10000.0, pos_offset=0):
        """Rotary embedding (NeoX layout) of x[..., S, D], D even."""
        return self._build("rope", lib().rlx_rope, self._id(x), float(theta), int(pos_offset))

    def attention(self, q, k, v, mask="none", window=0, mask_tensor=None, scale=0.0):
        """softmax(scale q.k^T + mask) . v for q[B, H, Sq, D], k[B, H, Sk, D],
        v[B, H, Sk, Dv] -> [B, H, Sq, Dv].

        mask: 'none', 'causal', 'sliding' (with window keys), 'padding'
        (mask_tensor[B, Sk], nonzero = keep) or 'bias' (mask_tensor added,
        broadcastable to [B, H, Sq, Sk]).  scale <= 0 means 1/sqrt(D)."""
        if isinstance(mask, str):
            if mask not in _MASKS:
                fail("attention: mask must be one of %s, got %r" % (", ".join(_MASKS), mask))
            mask = _MASKS[mask]
        mid = -1 if mask_tensor is None else self._id(mask_tensor)
        return self._build("attention", lib().rlx_attention, self._id(q), self._id(k), self._id(v), int(mask),
                           int(window), mid, float(scale))

    def conv2d(self, x, w, stride=1, padding=0, dilation=1, groups=1):
        """x[N, C, H, W] * w[O, C/groups, KH, KW] -> [N, O, OH, OW]; stride,
        padding and dilation are ints or (h, w) pairs."""
        sh, sw = _pair(stride, "conv2d stride")
        ph, pw = _pair(padding, "conv2d padding")
        dh, dw = _pair(dilation, "conv2d dilation")
        p = _native.Conv2dParams(sh, sw, ph, pw, dh, dw, int(groups))
        return self._build("conv2d", lib().rlx_conv2d, self._id(x), self._id(w), p)

    def _pool(self, name, x, kernel, stride, padding):
        kh, kw = _pair(kernel, name + " kernel")
        sh, sw = _pair(kernel if stride is None else stride, name + " stride")
        ph, pw = _pair(padding, name + " padding")
        p = _native.Pool2dParams(kh, kw, sh, sw, ph, pw)
        return self._build(name, getattr(lib(), "rlx_" + name), self._id(x), p)

    def max_pool2d(self, x, kernel, stride=None, padding=0):
        """Max pooling of x[N, C, H, W]; stride defaults to the kernel."""
        return self._pool("max_pool2d", x, kernel, stride, padding)

    def avg_pool2d(self, x, kernel, stride=None, padding=0):
        """Average pooling of x[N, C, H, W] (padding counts as zeros);
        stride defaults to the kernel."""
        return self._pool("avg_pool2d", x, kernel, stride, padding)

    # ---- autodiff -------------------------------------------------------
    def _wrt(self, params):
        if params is None:
            params = self.params()
        params = list(params)
        if not params:
            fail("the gradient needs at least one param")
        return params

    def grad_with_loss(self, loss, params=None):
        """Appends the backward pass of loss: returns [loss, d loss/d p for p
        in params] (params default to every param of the graph).  Feed the
        input 'd_output' with 1.0 (shaped like the loss) before running."""
        params = self._wrt(params)
        wrt, n = int32_array([self._id(p) for p in params])
        outs = (_native.c_int32 * (n + 1))()
        check(lib().rlx_grad_with_loss(self._handle(), self._id(loss), wrt, n, outs))
        return [Node(self, outs[0], self.shape_of(outs[0]), "loss")] + [
            Node(self, outs[i + 1], self.shape_of(outs[i + 1]), "grad") for i in range(n)]

    def grad(self, loss, params=None):
        """As grad_with_loss without the loss: [d loss/d p for p in params]."""
        params = self._wrt(params)
        wrt, n = int32_array([self._id(p) for p in params])
        outs = (_native.c_int32 * max(1, n))()
        check(lib().rlx_grad(self._handle(), self._id(loss), wrt, n, outs))
        return [Node(self, outs[i], self.shape_of(outs[i]), "grad") for i in range(n)]

    # ---- compile --------------------------------------------------------
    @staticmethod
    def _options(device, skip_fusion, debug_poison, threads):
        if isinstance(device, str):
            if device.lower() not in _DEVICES:
                fail("device must be one of %s, got %r" % (", ".join(_DEVICES), device))
            device = _DEVICES[device.lower()]
        if isinstance(threads, bool) or not isinstance(threads, int) or not -2 ** 31 <= threads < 2 ** 31:
            fail("threads must be an integer (got %r)" % (threads,))
        return _native.CompileOptions(int(device), int(bool(skip_fusion)), int(bool(debug_poison)), threads)

    def compile(self, outputs, device="cpu", skip_fusion=False, debug_poison=False, threads=0):
        """Compiles the graph for outputs (a Node or a sequence of Nodes) into
        a Session.  The session keeps its own copy: the graph may be closed
        or extended afterwards.  threads: CPU threads of a CPU session (0:
        RLX_THREADS, else the physical cores; 1 .. 256), results bitwise the
        same for any count."""
        from .session import Session
        if isinstance(outputs, Node):
            outputs = [outputs]
        ids, n = int32_array([self._id(o) for o in outputs])
        opt = self._options(device, skip_fusion, debug_poison, threads)
        out = _native.S()
        check(lib().rlx_compile(self._handle(), ids, n, opt, out))
        return Session(out.value)

    def compile_train(self, loss, params=None, optimizer="sgd", lr=0.01, momentum=None, beta1=0.9,
                      beta2=0.999, eps=1e-8, weight_decay=None, device="cpu", skip_fusion=False,
                      debug_poison=False, threads=0):
        """Compiles one training step of loss over params (default: every
        param of the graph) into a TrainSession whose run() returns the loss
        before the update.

        optimizer: 'sgd' (p -= lr g), 'momentum' (v = momentum v + g,
        p -= lr v; momentum defaults to 0.9), 'adam' or 'adamw' (beta1, beta2,
        eps; adamw also decays p -= lr weight_decay p, weight_decay defaulting
        to 0.01).  The graph gains the gradient nodes and the state params
        '<param>.m' / '<param>.v', 'rlx.step'.  threads: as compile's."""
        from .session import TrainSession
        if isinstance(optimizer, str):
            if optimizer.lower() not in _OPTIMIZERS:
                fail("optimizer must be one of %s, got %r" % (", ".join(_OPTIMIZERS), optimizer))
            kind = _OPTIMIZERS[optimizer.lower()]
        else:
            kind = int(optimizer)
        if momentum is None:
            momentum = 0.9 if kind == 1 else 0.0
        if weight_decay is None:
            weight_decay = 0.01 if kind == 3 else 0.0
        params = self._wrt(params)
        ids, n = int32_array([self._id(p) for p in params])
        opt = _native.Optimizer(kind, float(lr), float(momentum), float(beta1), float(beta2), float(eps),
                                float(weight_decay))
        copt = self._options(device, skip_fusion, debug_poison, threads)
        out = _native.S()
        check(lib().rlx_compile_train(self._handle(), self._id(loss), ids, n, opt, copt, out))
        return TrainSession(out.value, lr=float(lr))

    def __repr__(self):
        if self._h is None:
            return "<rlx.Graph closed>"
        return "<rlx.Graph %d nodes%s>" % (self.node_count, ", error" if self.status else "")


# ---- the simple ops, generated from a table -----------------------------
_BIN = " Inputs broadcast numpy-style; numbers and lists become constants."
# name: (input names, description) of the documented simple ops; the arity
# check is the library's (op_arity).  Any other op the library marks
# elementwise (rlx_op_is_elementwise) is a method too, through
# Graph.__getattr__, so an op added to the table needs no change here.
_SIMPLE_OPS = {
    "add": ("a b", "a + b." + _BIN), "sub": ("a b", "a - b." + _BIN), "mul": ("a b", "a * b." + _BIN),
    "div": ("a b", "a / b." + _BIN), "max": ("a b", "Elementwise maximum." + _BIN),
    "min": ("a b", "Elementwise minimum." + _BIN), "pow": ("a b", "a ** b." + _BIN),
    "eq": ("a b", "1.0 where a == b, else 0.0." + _BIN), "ne": ("a b", "1.0 where a != b, else 0.0." + _BIN),
    "lt": ("a b", "1.0 where a < b, else 0.0." + _BIN), "le": ("a b", "1.0 where a <= b, else 0.0." + _BIN),
    "gt": ("a b", "1.0 where a > b, else 0.0." + _BIN), "ge": ("a b", "1.0 where a >= b, else 0.0." + _BIN),
    "where": ("cond a b", "a where cond != 0, else b." + _BIN),
    "neg": ("x", "-x."), "abs": ("x", "|x|."), "exp": ("x", "e ** x."), "log": ("x", "Natural log."),
    "sqrt": ("x", "Square root."), "rsqrt": ("x", "1 / sqrt(x)."), "tanh": ("x", "Hyperbolic tangent."),
    "sigmoid": ("x", "1 / (1 + exp(-x))."), "relu": ("x", "max(x, 0)."),
    "gelu": ("x", "GELU (tanh approximation)."), "silu": ("x", "x * sigmoid(x)."),
    "gather": ("table ids", "Rows of table[V, D] at ids[...] (f32 or i32) -> [..., D]; ids outside [0, V) "
                            "give zero rows."),
    "softmax_cross_entropy": ("logits labels", "Per-sample loss of logits[..., C] against class ids "
                                               "labels[...] -> [...]; reduce_mean it for a batch loss."),
    "global_avg_pool": ("x", "Mean over H, W of x[N, C, H, W] -> [N, C]."),
}


def _make_simple(name, arg_names, doc):
    args = arg_names.split()

    def method(self, *inputs):
        lo, hi = op_arity(name)
        if not lo <= len(inputs) <= hi:
            raise TypeError("%s(%s) takes %s inputs, got %d"
                            % (name, ", ".join(args), lo if lo == hi else "%d to %d" % (lo, hi), len(inputs)))
        return self.op(name, inputs)
    P = inspect.Parameter
    method.__signature__ = inspect.Signature([P(a, P.POSITIONAL_ONLY) for a in ["self"] + args])
    method.__name__ = name
    method.__qualname__ = "Graph." + name
    method.__doc__ = "%s(%s): %s" % (name, ", ".join(args), doc)
    return method


for _name, (_args, _doc) in _SIMPLE_OPS.items():
    setattr(Graph, _name, _make_simple(_name, _args, _doc))


def elementwise_ops():
    """Names of the ops the library marks elementwise (add, relu, where, ...)."""
    L = lib()
    return [n for i, n in enumerate(op_names()) if L.rlx_op_is_elementwise(i) == 1]


def _graph_getattr(self, attr):
    if not attr.startswith("_") and attr in elementwise_ops():
        lo, hi = op_arity(attr)
        args = "a b c".split()[:hi] if hi > 1 else ["x"]
        method = _make_simple(attr, " ".join(args), "the library's elementwise op '%s'." % attr)
        return method.__get__(self, Graph)
    raise AttributeError("'Graph' object has no attribute '%s'" % attr)


Graph.__getattr__ = _graph_getattr

# Graph methods also reachable from a Node (x.relu(), x.matmul(w), ...).
_NODE_METHODS = frozenset(list(_SIMPLE_OPS) + [
    "matmul", "reshape", "expand", "permute", "transpose", "narrow", "reduce_sum", "reduce_mean",
    "reduce_max", "softmax", "log_softmax", "rms_norm", "layer_norm", "rope", "attention", "conv2d",
    "max_pool2d", "avg_pool2d"])

__all__ = ["Graph", "Node", "op_names", "op_id", "op_arity", "op_attrs", "elementwise_ops"]
