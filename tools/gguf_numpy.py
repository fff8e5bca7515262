"""gguf_numpy.py - a GGUF file's metadata and tensors as numpy arrays, read
independently of the C library (for references and benches that check our
results from the outside).  Tensors of type f32, f16, q8_0 and q4_0 are
returned dequantized to float32, shaped with numpy's order (the ggml ne
reversed: a weight with ne [n_in, n_out] is an array [n_out, n_in]).

    meta, tensors = read_gguf(path)        # dict, {name: np.ndarray}
"""
import struct

import numpy as np

_SCALARS = {0: '<B', 1: '<b', 2: '<H', 3: '<h', 4: '<I', 5: '<i', 6: '<f', 7: '<?', 10: '<Q', 11: '<q', 12: '<d'}
_STRING, _ARRAY = 8, 9
F32, F16, Q4_0, Q8_0 = 0, 1, 2, 8
_BLOCK = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), Q8_0: (32, 34)}  # type: (values, bytes) per block


class _Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take('<Q')
        s = self.data[self.at:self.at + n].decode('utf-8')
        self.at += n
        return s

    def value(self, t):
        if t == _STRING:
            return self.string()
        if t == _ARRAY:
            et, n = self.take('<I'), self.take('<Q')
            return [self.value(et) for _ in range(n)]
        if t not in _SCALARS:
            raise ValueError(f'gguf: unknown metadata type {t}')
        return self.take(_SCALARS[t])


def _dequantize(raw, qtype, n):
    if qtype == F32:
        return np.frombuffer(raw, '<f4', n).copy()
    if qtype == F16:
        return np.frombuffer(raw, '<f2', n).astype(np.float32)
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, _BLOCK[qtype][1])
    d = blocks[:, :2].copy().view('<f2').astype(np.float32)  # [blocks, 1]
    if qtype == Q8_0:
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    else:  # q4_0: 16 bytes, the low nibbles are values 0..15, the high ones 16..31, each minus 8
        b = blocks[:, 2:]
        q = np.concatenate([b & 15, b >> 4], axis=1).astype(np.float32) - 8
    return (q * d).reshape(-1)[:n]


def read_gguf(path):
    """(metadata dict, {tensor name: float32 array}) of the GGUF file at path."""
    with open(path, 'rb') as f:
        data = f.read()
    r = _Reader(data)
    if r.take('<I') != 0x46554747:
        raise ValueError(f'{path}: not a GGUF file')
    version = r.take('<I')
    if version < 2:
        raise ValueError(f'{path}: GGUF version {version} is not read here')
    n_tensors, n_kv = r.take('<Q'), r.take('<Q')
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take('<I'))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take('<Q') for _ in range(r.take('<I'))]
        qtype, offset = r.take('<I'), r.take('<Q')
        infos.append((name, ne, qtype, offset))
    align = meta.get('general.alignment', 32)
    base = (r.at + align - 1) // align * align
    tensors = {}
    for name, ne, qtype, offset in infos:
        if qtype not in _BLOCK:
            raise ValueError(f'{path}: tensor {name} has type {qtype}, not read here (f32, f16, q8_0, q4_0)')
        n = int(np.prod(ne))
        per, size = _BLOCK[qtype]
        raw = data[base + offset:base + offset + (n + per - 1) // per * size]
        tensors[name] = _dequantize(raw, qtype, n).reshape(list(reversed(ne)))
    return meta, tensors
