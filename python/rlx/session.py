"""session.py - Session (a compiled graph: set params and inputs, run, read
outputs) and TrainSession (one compiled training step whose run() returns
the loss).  Made by Graph.compile() and Graph.compile_train().

Values going in may be lists, array('f'), numpy arrays or buffers (see
rlx._buffers); values coming out are array('f') copies, or numpy arrays with
as_numpy=True, or written into a caller's float32 buffer given as out=.
"""

import weakref

from . import _buffers, _native
from ._native import lib, check, fail, decode
from .errors import NOT_FOUND

_DTYPE_NAMES = {0: "f32", 1: "i32"}


class Session(_native.Handle):
    """A compiled graph (an rlx_session).

    Params persist across runs and start at zero; inputs must be set before
    the first run and keep their values until set again.  Freed by close(),
    at the end of a `with` block, or on garbage collection; closing twice is
    harmless, and using a closed session raises RlxStateError.
    """

    _what = "the session"

    def __init__(self, handle):
        L = lib()
        self._h = handle
        self._finalizer = weakref.finalize(self, L.rlx_session_free, handle)
        dims = (_native.c_int32 * _native.MAX_RANK)()
        self._inputs = {}
        for i in range(L.rlx_session_input_count(handle)):
            rank = L.rlx_session_input_shape(handle, i, dims)
            self._inputs[decode(L.rlx_session_input_name(handle, i))] = (
                tuple(dims[:rank]), _DTYPE_NAMES.get(L.rlx_session_input_dtype(handle, i), "f32"))
        self._params = {}
        for i in range(L.rlx_session_param_count(handle)):
            self._params[decode(L.rlx_session_param_name(handle, i))] = L.rlx_session_param_len(handle, i)
        self._n_outputs = L.rlx_session_output_count(handle)

    # ---- params and inputs ----------------------------------------------
    @property
    def param_names(self):
        """Names of the params, in plan order."""
        return list(self._params)

    @property
    def input_names(self):
        """Names of the inputs, in plan order."""
        return list(self._inputs)

    def param_len(self, name):
        """Number of values of a param."""
        if name not in self._params:
            fail("no param named '%s' (params: %s)" % (name, ", ".join(self._params) or "none"), NOT_FOUND)
        return self._params[name]

    def input_shape(self, name):
        """Shape of an input as a tuple."""
        if name not in self._inputs:
            fail("no input named '%s' (inputs: %s)" % (name, ", ".join(self._inputs) or "none"), NOT_FOUND)
        return self._inputs[name][0]

    def input_dtype(self, name):
        """'f32' or 'i32'."""
        self.input_shape(name)
        return self._inputs[name][1]

    def set_param(self, name, values):
        """Copies values (exactly the param's element count) into a param."""
        buf = _buffers.f32(values, "set_param('%s')" % name)
        check(lib().rlx_session_set_param(self._handle(), name.encode(), buf.ptr, buf.n))

    def get_param(self, name, out=None, as_numpy=False):
        """A copy of a param's values: array('f'), a numpy array shaped
        (param_len,) with as_numpy=True, or written into out (a writable
        float32 buffer or list of the right length) and returned."""
        n = self._params.get(name, 0)
        result, buf = _buffers.out_f32(out, n)
        check(lib().rlx_session_get_param(self._handle(), name.encode(), buf.ptr, buf.n))
        buf.done()
        return _buffers.to_numpy(result, (n,)) if as_numpy and out is None else result

    def set_input(self, name, values):
        """Copies values (exactly the input's element count) into an input.
        An 'i32' input takes integers (array('i'), numpy int32, a list of
        ints; floats are converted by the library), an 'f32' input floats."""
        h = self._handle()
        info = self._inputs.get(name)
        dtype = info[1] if info else "f32"
        if _buffers.is_int32(values) or (dtype == "i32" and not _buffers.is_float(values)):
            buf = _buffers.i32(values, "set_input('%s')" % name)
            check(lib().rlx_session_set_input_i32(h, name.encode(), buf.ptr, buf.n))
        else:
            buf = _buffers.f32(values, "set_input('%s')" % name)
            check(lib().rlx_session_set_input(h, name.encode(), buf.ptr, buf.n))

    def set_inputs(self, inputs):
        """set_input for every (name, values) of a dict."""
        for name, values in inputs.items():
            self.set_input(name, values)

    # ---- run and outputs ------------------------------------------------
    def run(self, inputs=None):
        """Runs the plan once (after setting `inputs`, a dict, if given)."""
        if inputs:
            self.set_inputs(inputs)
        check(lib().rlx_session_run(self._handle()))

    @property
    def output_count(self):
        """Number of outputs."""
        return self._n_outputs

    def output_shape(self, i=0):
        """Shape of output i as a tuple."""
        dims = (_native.c_int32 * _native.MAX_RANK)()
        rank = lib().rlx_session_output_shape(self._handle(), int(i), dims)
        if rank < 0:
            fail("output %d does not exist (%d outputs)" % (i, self._n_outputs), NOT_FOUND)
        return tuple(dims[:rank])

    def output_len(self, i=0):
        """Number of values of output i."""
        return lib().rlx_session_output_len(self._handle(), int(i))

    def output(self, i=0, out=None, as_numpy=False):
        """A copy of output i after a run: array('f') (flat, row-major; see
        output_shape), a numpy array of the output's shape with as_numpy=True,
        or written into out (a writable float32 buffer) and returned."""
        h = self._handle()
        n = lib().rlx_session_output_len(h, int(i))
        result, buf = _buffers.out_f32(out, n)
        check(lib().rlx_session_read_output(h, int(i), buf.ptr, buf.n))
        buf.done()
        if as_numpy and out is None:
            return _buffers.to_numpy(result, self.output_shape(i))
        return result

    def outputs(self, as_numpy=False):
        """Copies of every output."""
        return [self.output(i, as_numpy=as_numpy) for i in range(self._n_outputs)]

    # ---- introspection --------------------------------------------------
    @property
    def arena_bytes(self):
        """Bytes of the arena holding the intermediate values."""
        return lib().rlx_session_arena_bytes(self._handle())

    @property
    def step_count(self):
        """Kernels run per run()."""
        return lib().rlx_session_step_count(self._handle())

    @property
    def fused_count(self):
        """Nodes made by the fusion passes."""
        return lib().rlx_session_fused_count(self._handle())

    def __repr__(self):
        if self._h is None:
            return "<rlx.%s closed>" % type(self).__name__
        return "<rlx.%s %d inputs, %d params, %d outputs, %d steps>" % (
            type(self).__name__, len(self._inputs), len(self._params), self._n_outputs, self.step_count)


class TrainSession(Session):
    """One compiled training step (forward, backward and the optimizer
    update).  run() reads the inputs, updates the params and the optimizer
    state, and returns the loss before the update.  The inputs 'd_output'
    and 'rlx.lr' are preset; change the learning rate through .lr."""

    def __init__(self, handle, lr):
        super().__init__(handle)
        self._lr = lr

    def run(self, inputs=None):
        """One step; returns the loss (summed if the loss is not a scalar)."""
        super().run(inputs)
        values = self.output(0)
        return float(values[0]) if len(values) == 1 else float(sum(values))

    step = run

    @property
    def lr(self):
        """The learning rate of the next steps."""
        return self._lr

    @lr.setter
    def lr(self, value):
        check(lib().rlx_session_set_lr(self._handle(), float(value)))
        self._lr = float(value)
