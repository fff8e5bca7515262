"""_buffers.py - turns Python values into the float32 / int32 pointers the C
library takes, without copying where possible.

Accepted everywhere a tensor's values are expected:
  - array.array('f') (and 'i' / 'l' of 4 bytes for int32): passed in place;
  - anything with __array_interface__ (numpy arrays and look-alikes): a
    C-contiguous little-endian float32 (int32) array is passed in place, other
    dtypes or layouts are converted with numpy when it is importable;
  - other objects with the buffer protocol (memoryview, bytearray of format
    'f', ...): in place when the format is float32 and the buffer contiguous
    and writable, else converted element by element;
  - lists and tuples (nested ones are flattened row-major), other iterables
    of numbers, and a single number.
"""

import array
import ctypes
import numbers
import sys

from . import _native

_LITTLE = sys.byteorder == "little"
_F32_TYPESTRS = ("<f4", "=f4") if _LITTLE else (">f4", "=f4")
_I32_TYPESTRS = ("<i4", "=i4") if _LITTLE else (">i4", "=i4")
_I32_CODE = "i" if array.array("i").itemsize == 4 else "l"

try:  # optional: only used to convert foreign dtypes and to build numpy outputs
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None


def numpy_module():
    """numpy when importable, else None."""
    return _np


class Buffer:
    """A pointer to len values, kept alive together with what owns them."""

    __slots__ = ("ptr", "n", "keep", "writeback")

    def __init__(self, ptr, n, keep, writeback=None):
        self.ptr = ptr
        self.n = n
        self.keep = keep
        self.writeback = writeback

    def done(self):
        """Copies results back into the caller's object when needed."""
        if self.writeback is not None:
            self.writeback()


def _is_number(v):
    """True for a single real number (int, float, numpy scalar, ...)."""
    if isinstance(v, numbers.Real):
        return True
    return hasattr(v, "__float__") and not hasattr(v, "__len__") and not isinstance(v, (str, bytes, complex))


def flatten(values):
    """(flat list of numbers, shape) of a number or a nested sequence."""
    if _is_number(values):
        return [values], ()
    if isinstance(values, (str, bytes)):
        raise TypeError("expected numbers, got %r" % (values,))
    items = list(values)
    if not items:
        return [], (0,)
    if all(_is_number(v) for v in items):
        return items, (len(items),)
    flat, inner = [], None
    for v in items:
        f, s = flatten(v)
        if inner is None:
            inner = s
        elif s != inner:
            raise ValueError("ragged nested sequence: shapes %s and %s" % (inner, s))
        flat.extend(f)
    return flat, (len(items),) + inner


def _contiguous(ai, itemsize):
    strides = ai.get("strides")
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(ai["shape"]), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _from_interface(values, typestrs, ctype, writable):
    """A Buffer over an __array_interface__ object, or None when it does not
    hold contiguous values of that type."""
    ai = values.__array_interface__
    if ai.get("typestr") not in typestrs or not _contiguous(ai, 4) or ai.get("mask") is not None:
        return None
    ptr, readonly = ai["data"]
    if writable and readonly:
        return None
    n = _numel(ai["shape"])
    if n == 0 or not ptr:
        return Buffer(ctypes.cast((ctype * 1)(), ctypes.POINTER(ctype)), 0, values)
    return Buffer(ctypes.cast(ctypes.c_void_p(ptr), ctypes.POINTER(ctype)), n, values)


def _from_memoryview(values, formats, ctype, writable):
    """A Buffer over a buffer-protocol object of that item type, or None."""
    try:
        mv = memoryview(values)
    except TypeError:
        return None
    fmt = mv.format.lstrip("@=<" if _LITTLE else "@=>")
    if fmt not in formats or mv.itemsize != 4 or not mv.c_contiguous:
        return None
    n = mv.nbytes // 4
    if n == 0:
        return Buffer(ctypes.cast((ctype * 1)(), ctypes.POINTER(ctype)), 0, values)
    if mv.readonly:
        if writable:
            return None
        arr = (ctype * n).from_buffer_copy(mv)
    else:
        arr = (ctype * n).from_buffer(mv)
    return Buffer(ctypes.cast(arr, ctypes.POINTER(ctype)), n, (values, mv, arr))


def _tolist(values):
    if hasattr(values, "tolist"):
        return values.tolist()
    try:
        return memoryview(values).tolist()
    except TypeError:
        return values


def f32(values, what="values"):
    """A read-only Buffer of float32 values (in place when possible)."""
    if isinstance(values, array.array) and values.typecode == "f":
        return _from_memoryview(values, ("f",), ctypes.c_float, False)
    if hasattr(values, "__array_interface__"):
        b = _from_interface(values, _F32_TYPESTRS, ctypes.c_float, False)
        if b is not None:
            return b
        if _np is not None:
            return f32(_np.ascontiguousarray(values, dtype=_np.float32), what)
    else:
        b = _from_memoryview(values, ("f",), ctypes.c_float, False)
        if b is not None:
            return b
    if isinstance(values, (list, tuple)):
        try:  # a flat list of numbers, at C speed
            return f32(array.array("f", values), what)
        except TypeError:
            pass
    try:
        flat, _ = flatten(_tolist(values))
        arr = array.array("f", flat)
    except (TypeError, ValueError) as e:
        raise TypeError("%s: expected float32 values (a list, array('f'), numpy array or buffer), got %s (%s)"
                        % (what, type(values).__name__, e)) from None
    return f32(arr, what)


def i32(values, what="values"):
    """A read-only Buffer of int32 values; non-integer values are refused."""
    if isinstance(values, array.array) and values.typecode in ("i", "l") and values.itemsize == 4:
        return _from_memoryview(values, ("i", "l"), ctypes.c_int32, False)
    if hasattr(values, "__array_interface__"):
        b = _from_interface(values, _I32_TYPESTRS, ctypes.c_int32, False)
        if b is not None:
            return b
    else:
        b = _from_memoryview(values, ("i", "l"), ctypes.c_int32, False)
        if b is not None:
            return b
    if isinstance(values, (list, tuple)):
        try:  # a flat list of ints, at C speed
            return i32(array.array(_I32_CODE, values), what)
        except (TypeError, OverflowError):
            pass
    try:
        flat, _ = flatten(_tolist(values))
    except (TypeError, ValueError) as e:
        raise TypeError("%s: expected integer values, got %s (%s)" % (what, type(values).__name__, e)) from None
    ints = []
    for v in flat:
        iv = int(v)
        if iv != v:
            _native.fail("%s: %r is not an integer" % (what, v))
        ints.append(iv)
    try:
        arr = array.array(_I32_CODE, ints)
    except OverflowError:
        _native.fail("%s: a value is outside the int32 range" % what)
    return i32(arr, what)


def is_int32(values):
    """True when values hold int32 items (array('i'), numpy int32, ...)."""
    if isinstance(values, array.array):
        return values.typecode in ("i", "l") and values.itemsize == 4
    if hasattr(values, "__array_interface__"):
        return values.__array_interface__.get("typestr") in _I32_TYPESTRS
    return False


def is_float(values):
    """True when values hold floating-point items (array('f'/'d'), numpy floats)."""
    if isinstance(values, array.array):
        return values.typecode in ("f", "d")
    if hasattr(values, "__array_interface__"):
        return values.__array_interface__.get("typestr", "")[1:2] == "f"
    return False


def f32_inout(values, what="values"):
    """A writable Buffer whose results reach `values` after .done(): in place
    for writable float32 buffers, copied back for lists and (with numpy)
    arrays of other dtypes."""
    if isinstance(values, array.array) and values.typecode == "f":
        return _from_memoryview(values, ("f",), ctypes.c_float, True)
    if hasattr(values, "__array_interface__"):
        b = _from_interface(values, _F32_TYPESTRS, ctypes.c_float, True)
        if b is not None:
            return b
        if _np is not None and isinstance(values, _np.ndarray) and values.flags.writeable:
            tmp = _np.ascontiguousarray(values, dtype=_np.float32)
            b = f32(tmp, what)
            b.writeback = lambda: _np.copyto(values, tmp, casting="unsafe")
            return b
    else:
        b = _from_memoryview(values, ("f",), ctypes.c_float, True)
        if b is not None:
            return b
    if isinstance(values, list) and all(_is_number(v) for v in values):
        arr = array.array("f", values)
        b = f32(arr, what)

        def back():
            values[:] = arr.tolist()
        b.writeback = back
        return b
    raise TypeError("%s: expected a writable float32 buffer (array('f'), numpy float32 array) or a flat list, "
                    "got %s" % (what, type(values).__name__))


def new_f32(n):
    """A zeroed array('f') of n values and a Buffer over it."""
    arr = array.array("f", bytes(4 * n))
    return arr, (f32(arr) if n else Buffer(ctypes.cast((ctypes.c_float * 1)(), _native.P_float), 0, arr))


def new_i32(n):
    """A zeroed int32 array of n values and a Buffer over it."""
    arr = array.array(_I32_CODE, bytes(4 * n))
    return arr, (i32(arr) if n else Buffer(ctypes.cast((ctypes.c_int32 * 1)(), _native.P_int32), 0, arr))


def out_f32(out, n, what="out"):
    """A writable Buffer for n results: over `out` when given (any writable
    float32 buffer), else over a new array('f').  Returns (result, Buffer)."""
    if out is None:
        return new_f32(n)
    return out, f32_inout(out, what)


def to_numpy(arr, shape):
    """arr (array('f')) as a numpy float32 array of that shape."""
    if _np is None:
        raise ImportError("numpy is not installed: as_numpy=True needs it")
    return _np.frombuffer(arr, dtype=_np.float32).reshape(shape)
