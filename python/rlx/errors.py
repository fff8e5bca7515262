"""errors.py - the exceptions of the rlx package.

Every negative rlx_status of the C library becomes an RlxError carrying the
status code and the library's message (rlx_last_error()).  The concrete class
depends on the status, so callers can also catch the usual built-in base:

    status                 class                 also a
    RLX_ERR_INVALID_ARG    RlxInvalidArgument    ValueError
    RLX_ERR_SHAPE          RlxShapeError         ValueError
    RLX_ERR_GRAPH          RlxGraphError         ValueError
    RLX_ERR_NO_MEMORY      RlxMemoryError        MemoryError
    RLX_ERR_NOT_FOUND      RlxNotFound           LookupError
    RLX_ERR_UNSUPPORTED    RlxUnsupported        NotImplementedError
    RLX_ERR_STATE          RlxStateError         RuntimeError
    RLX_ERR_NUMERIC        RlxNumericError       ArithmeticError

The codes (OK, INVALID_ARG, ... NUMERIC) and STATUS_NAMES (code -> the
name rlx_status_name gives it) come from _constants.py, which `make`
generates from include/rlx.h and src/core/core.c.
"""

try:
    from ._constants import (OK, INVALID_ARG, SHAPE, GRAPH, NO_MEMORY, NOT_FOUND, UNSUPPORTED, STATE, NUMERIC,
                             STATUS_NAME as STATUS_NAMES)
except ImportError as e:  # a checkout where make has not run
    raise ImportError("rlx: %s; rlx/_constants.py is generated from include/rlx.h: run `make` (or "
                      "`make python/rlx/_constants.py`) in the repository" % e) from None


class RlxError(Exception):
    """An error reported by the RLX library (or found by the binding before
    calling it).

    Attributes:
        status: the negative rlx_status code (see rlx.errors).
        status_name: the code's name from rlx_status_name ("shape error", ...).
        message: the library's message, e.g. "node 2 (add): ...; got
            add(node 0 [2, 3], node 1 [4])".
    """

    def __init__(self, status, message):
        self.status = int(status)
        self.message = message or STATUS_NAMES.get(self.status, "error")
        self.status_name = STATUS_NAMES.get(self.status, "error %d" % self.status)
        super().__init__(self.message)

    def __str__(self):
        return self.message

    @staticmethod
    def from_status(status, message):
        """The RlxError subclass that fits `status`, built with `message`."""
        cls = _BY_STATUS.get(int(status), RlxError)
        return cls(status, message)


class RlxInvalidArgument(RlxError, ValueError):
    """RLX_ERR_INVALID_ARG: a bad argument (wrong length, range, ...)."""


class RlxShapeError(RlxError, ValueError):
    """RLX_ERR_SHAPE: shapes or ranks do not fit the op."""


class RlxGraphError(RlxError, ValueError):
    """RLX_ERR_GRAPH: an ill-formed graph (arity, unreachable gradient, ...)."""


class RlxMemoryError(RlxError, MemoryError):
    """RLX_ERR_NO_MEMORY: an allocation failed."""


class RlxNotFound(RlxError, LookupError):
    """RLX_ERR_NOT_FOUND: no input, param, output or model by that name."""


class RlxUnsupported(RlxError, NotImplementedError):
    """RLX_ERR_UNSUPPORTED: the device or op variant is not available."""


class RlxStateError(RlxError, RuntimeError):
    """RLX_ERR_STATE: a call out of order (run before inputs, closed handle)."""


class RlxNumericError(RlxError, ArithmeticError):
    """RLX_ERR_NUMERIC: a non-finite value where one is forbidden."""


_BY_STATUS = {
    INVALID_ARG: RlxInvalidArgument,
    SHAPE: RlxShapeError,
    GRAPH: RlxGraphError,
    NO_MEMORY: RlxMemoryError,
    NOT_FOUND: RlxNotFound,
    UNSUPPORTED: RlxUnsupported,
    STATE: RlxStateError,
    NUMERIC: RlxNumericError,
}


class RlxLibraryError(OSError):
    """librlx.so could not be found or loaded."""
