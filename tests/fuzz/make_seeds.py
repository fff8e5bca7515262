#!/usr/bin/env python3
"""make_seeds.py - writes the seed corpora of the fuzzers into
tests/fuzz/corpus/<fuzzer>/ (small hand-made inputs that reach deep:
well-formed graphs, streams, IDX files).  Op ids come from the op table of
build/librlx.so (rlx_op_from_name), so the graph seeds follow the table.
Usage: python3 tests/fuzz/make_seeds.py  (after make native)."""
import ctypes
import os
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LIB = ctypes.CDLL(os.path.join(ROOT, "build", "librlx.so"))
LIB.rlx_op_from_name.argtypes = [ctypes.c_char_p]
LIB.rlx_op_from_name.restype = ctypes.c_int


def op(name):
    i = LIB.rlx_op_from_name(name.encode())
    assert i >= 0, name
    return i


# Encoding (tests/fuzz/graph_decode.h): flags, then commands.
def leaf(kind, *dims):  # kind 0 f32 input, 1 i32 input, 2 param; dims 1..4
    return [kind, len(dims)] + [d - 1 for d in dims]


def node(name, inputs, ints=(), floats=(), n_in=None):
    out = [5, op(name)]
    if n_in is not None:
        out.append(n_in)
    out += list(inputs) + [len(ints) if len(ints) < 8 else 8, len(floats)]
    for v in ints:  # 0..7 as is, -1..-8 as 0x80 + (-v - 1)
        out.append(v if v >= 0 else 0x80 + (-v - 1))
    return out + list(floats)  # float table indices (graph_decode.c)


END = 0xF0  # ends the graph's commands; the rest picks outputs, the loss, the optimizer
FLOAT_ONE, FLOAT_EPS, FLOAT_ZERO, FLOAT_10K = 3, 1, 0, 6

GRAPHS = {
    # x[2,3] w[3,4] b[4]: softmax(relu(x w + b)); loss on the softmax, Adam
    "mlp": [0x3c] + leaf(0, 2, 3) + leaf(2, 3, 4) + node("matmul", [0, 1], ints=[0, 0]) + leaf(2, 4)
    + node("add", [2, 3]) + node("relu", [4]) + node("softmax", [5], ints=[-1]) + [END, 0, 0, 6, 2],
    # x[1,1,4,4] w[2,1,3,3]: conv (pad 1) -> max_pool 2 -> global_avg_pool
    "conv": [0x1d] + leaf(0, 1, 1, 4, 4) + leaf(2, 2, 1, 3, 3)
    + node("conv2d", [0, 1], ints=[1, 1, 1, 1, 1, 1, 1]) + node("max_pool2d", [2], ints=[2, 2, 2, 2, 0, 0])
    + node("global_avg_pool", [3]) + [END, 0, 0, 4, 0],
    # q, k, v[1,2,3,4]: causal attention, then rms_norm with a weight param
    "attention": [0x2c] + leaf(2, 1, 2, 3, 4) + leaf(0, 1, 2, 3, 4) + leaf(0, 1, 2, 3, 4)
    + node("attention", [0, 1, 2], ints=[1, 0], floats=[FLOAT_ZERO], n_in=0) + leaf(2, 4)
    + node("rms_norm", [3, 4], floats=[FLOAT_EPS]) + [END, 0, 0, 5, 3],
    # table[4,3] ids[2] (i32): gather, cross-entropy against labels[2]
    "gather_ce": [0x0c] + leaf(2, 4, 3) + leaf(1, 2) + node("gather", [0, 1]) + leaf(1, 2)
    + node("softmax_cross_entropy", [2, 3]) + [END, 0, 0, 4, 1],
    # layout: x[2,3,4] param; permute, narrow, concat, reshape, reduce_sum
    "layout": [0x3c] + leaf(2, 2, 3, 4) + node("permute", [0], ints=[2, 0, 1])
    + node("narrow", [1], ints=[0, 1, 2]) + node("concat", [2, 2], ints=[0], n_in=1)
    + node("reshape", [3], ints=[3, 2, 2, 3][:1] + [-1]) + node("reduce_sum", [4], ints=[1, 1])
    + [END, 0, 0, 5, 3],
    # layer_norm(x[2,4], w[4], b[4]), rope on [1,1,2,4], expand, where
    "norms": [0x00] + leaf(2, 2, 4) + leaf(2, 4) + leaf(2, 4)
    + node("layer_norm", [0, 1, 2], floats=[FLOAT_EPS]) + node("reshape", [3], ints=[1, 1, 2, 4])
    + node("rope", [4], ints=[0], floats=[FLOAT_10K]) + node("gt", [5, 0]) + node("where", [6, 5, 0])
    + [END, 1, 0, 0, 7, 1],
    # avg_pool with padding and its gradient through a train step (SGD, WebGL2)
    "pool": [0x30] + leaf(2, 1, 2, 4, 4) + node("avg_pool2d", [0], ints=[3, 3, 1, 1, 1, 1])
    + node("tanh", [1]) + [END, 0, 0, 2, 0x08],
}


def write(fuzzer, name, data):
    d = os.path.join(ROOT, "tests", "fuzz", "corpus", fuzzer)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


def main():
    for name, data in GRAPHS.items():
        write("graph", name, data)
        write("plan_json", name, data)
    text = b"fn main(x: f32) -> f32 { return x * 2.0 + 1.0; } " * 8
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = raw.compress(text) + raw.flush()
    write("inflate", "raw_stream", [0, 255] + list(stream))
    write("inflate", "text_level9", [1, 9] + list(text[:200]))
    write("inflate", "text_gzip_huffman", [1, 128 + 20 + 6] + list(text[:120]))
    write("inflate", "stored_empty_null_buffer", [0, 0, 0x01, 0x00, 0x00, 0xFF, 0xFF])
    fixed = zlib.compressobj(1, zlib.DEFLATED, -15, 8, zlib.Z_FIXED)
    write("inflate", "fixed_block", [0, 10] + list(fixed.compress(b"abcabcabcabc") + fixed.flush()))
    # IDX: well-formed headers (bit 2), gzip images (bit 0), mismatched counts (bit 3), raw split.
    write("idx", "well_formed", [4, 1, 0x1b] + list(range(40)))
    write("idx", "gzip_images", [5, 2, 0x09] + list(range(0, 250, 7)))
    write("idx", "counts_differ", [12, 0, 0] + [3, 4, 5])
    hdr = [0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 10, 20, 30, 40]
    lab = [0, 0, 8, 1, 0, 0, 0, 1, 7]
    write("idx", "raw_split", [0, 0, len(hdr)] + hdr + lab)


if __name__ == "__main__":
    main()
