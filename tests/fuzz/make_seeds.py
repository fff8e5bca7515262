#!/usr/bin/env python3
"""make_seeds.py - writes the seed corpora of the fuzzers into
tests/fuzz/corpus/<fuzzer>/ (small hand-made inputs that reach deep:
well-formed graphs, streams, IDX files, GGUF files, LoRA adapters).  Op ids come from the op table of
build/librlx.so (rlx_op_from_name), so the graph seeds follow the table.
Usage: python3 tests/fuzz/make_seeds.py  (after make native)."""
import ctypes
import os
import random
import struct
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


# GGUF files (the format of include/rlx_gguf.h), written here with struct so
# the seeds do not come from the library under test.
GGUF_VALUES = {"u8": (0, "<B"), "i8": (1, "<b"), "u16": (2, "<H"), "i16": (3, "<h"), "u32": (4, "<I"),
               "i32": (5, "<i"), "f32": (6, "<f"), "bool": (7, "<?"), "u64": (10, "<Q"), "i64": (11, "<q"),
               "f64": (12, "<d")}
# type: (code, values per block, bytes per block, offsets of f16 scales in a block)
GGUF_TYPES = {"f32": (0, 1, 4, ()), "f16": (1, 1, 2, ()), "q4_0": (2, 32, 18, (0,)), "q4_1": (3, 32, 20, (0, 2)),
              "q5_0": (6, 32, 22, (0,)), "q5_1": (7, 32, 24, (0, 2)), "q8_0": (8, 32, 34, (0,)),
              "q4_K": (12, 256, 144, (0, 2)), "q5_K": (13, 256, 176, (0, 2)), "q6_K": (14, 256, 210, (208,)),
              "bf16": (30, 1, 2, ())}


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, kind, value):
    out = gguf_str(key)
    if kind == "str":
        return out + struct.pack("<I", 8) + gguf_str(value)
    if kind.startswith("arr:"):
        elem = kind[4:]
        if elem == "str":
            return out + struct.pack("<IIQ", 9, 8, len(value)) + b"".join(gguf_str(v) for v in value)
        code, fmt = GGUF_VALUES[elem]
        return out + struct.pack("<IIQ", 9, code, len(value)) + b"".join(struct.pack(fmt, v) for v in value)
    code, fmt = GGUF_VALUES[kind]
    return out + struct.pack("<I", code) + struct.pack(fmt, value)


def gguf_tensor_data(rng, type_name, n):
    code, block, size, scales = GGUF_TYPES[type_name]
    if type_name == "f32":
        return b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(n))
    if type_name == "f16":
        return b"".join(struct.pack("<e", rng.uniform(-1, 1)) for _ in range(n))
    if type_name == "bf16":
        return b"".join(struct.pack("<f", rng.uniform(-1, 1))[2:] for _ in range(n))
    out = b""
    for _ in range(n // block):
        b = bytearray(rng.getrandbits(8) for _ in range(size))
        for at in scales:
            b[at:at + 2] = struct.pack("<e", rng.uniform(0.001, 0.1))
        out += bytes(b)
    return out


def gguf_file(kvs, tensors, version=3, alignment=32):
    """tensors: (name, type name, dims (row first), data)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    blobs, off = b"", 0
    for name, type_name, dims, data in tensors:
        out += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", GGUF_TYPES[type_name][0], off)
        pad = (-len(data)) % alignment
        blobs += data + b"\0" * pad
        off += len(data) + pad
    return out + b"\0" * ((-len(out)) % alignment) + blobs


def gguf_seeds():
    rng = random.Random(7)
    scalars = [gguf_kv("general.architecture", "str", "llama"), gguf_kv("t.u8", "u8", 200),
               gguf_kv("t.i8", "i8", -5), gguf_kv("t.u16", "u16", 65535), gguf_kv("t.i16", "i16", -300),
               gguf_kv("t.u32", "u32", 4000000000), gguf_kv("t.i32", "i32", -70000), gguf_kv("t.f32", "f32", 0.5),
               gguf_kv("t.bool", "bool", True), gguf_kv("t.u64", "u64", 2 ** 63), gguf_kv("t.i64", "i64", -2 ** 40),
               gguf_kv("t.f64", "f64", 1e-300)]
    arrays = [gguf_kv("a." + k, "arr:" + k, [1, 0, 1] if k in ("bool", "u8", "u16", "u32", "u64") else [-1, 0, 2])
              for k in GGUF_VALUES]
    every = [(("w." + t), t, [GGUF_TYPES[t][1] if GGUF_TYPES[t][1] > 1 else 4, 2 if GGUF_TYPES[t][1] == 1 else 1],
              None) for t in GGUF_TYPES]
    every = [(n, t, d, gguf_tensor_data(rng, t, d[0] * d[1])) for n, t, d, _ in every]
    yield "every_type", gguf_file(scalars + arrays, every)
    tokens = ["<s>", "</s>", "hello", " world", "\u00e9t\u00e9", ""]
    meta = [gguf_kv("general.alignment", "u32", 64), gguf_kv("tokenizer.ggml.tokens", "arr:str", tokens),
            gguf_kv("tokenizer.ggml.scores", "arr:f32", [0.0, -1.5, -2.0, -3.25, -4.0, -9.0]),
            gguf_kv("llama.context_length", "u32", 128)]
    two = [("tok_embd", "f16", [8, 6], gguf_tensor_data(rng, "f16", 48)),
           ("output", "q8_0", [32, 2], gguf_tensor_data(rng, "q8_0", 64))]
    yield "v2_alignment64", gguf_file(meta, two, version=2, alignment=64)
    yield "v3_alignment64", gguf_file(meta, two, alignment=64)
    yield "metadata_only", gguf_file(meta[1:] + [gguf_kv("empty", "arr:i32", [])], [])
    shapes = [("scalar", "f32", [], gguf_tensor_data(rng, "f32", 1)),
              ("four", "bf16", [2, 1, 2, 2], gguf_tensor_data(rng, "bf16", 8)),
              ("empty", "q4_K", [256, 0], b""), ("row", "q6_K", [256], gguf_tensor_data(rng, "q6_K", 256))]
    yield "shapes", gguf_file([gguf_kv("general.name", "str", "shapes")], shapes)


# fuzz_lora (tests/fuzz/fuzz_lora.c): two bytes (base type 0-3 f32 f16 q8_0
# q4_0 | merge type << 2 | scale index << 4; two adapters | scale index << 1),
# then an adapter for its base: llama, 2 layers, embedding 32, q 32, k/v 16,
# feed-forward 32.
LORA_SHAPES = {"attn_q": (32, 32), "attn_k": (32, 16), "attn_v": (32, 16), "attn_output": (32, 32),
               "ffn_gate": (32, 32), "ffn_up": (32, 32), "ffn_down": (32, 32)}  # (n_in, n_out)


def lora_seed(rng, base, merge, scale, targets, rank=2, kind="f32", alpha=4.0, arch="llama", two=0, scale2=0,
              drop=(), extra=()):
    kvs = [gguf_kv("general.architecture", "str", arch), gguf_kv("general.type", "str", "adapter"),
           gguf_kv("adapter.type", "str", "lora")] + ([gguf_kv("adapter.lora.alpha", "f32", alpha)] if alpha else [])
    tensors = []
    for layer, target in targets:
        n_in, n_out = LORA_SHAPES[target]
        for half, dims in (("a", [n_in, rank]), ("b", [rank, n_out])):
            name = "blk.%d.%s.weight.lora_%s" % (layer, target, half)
            if name not in drop:
                tensors.append((name, kind, dims, gguf_tensor_data(rng, kind, dims[0] * dims[1])))
    tensors += [(name, "f32", dims, gguf_tensor_data(rng, "f32", dims[0] * dims[1])) for name, dims in extra]
    return bytes([base | merge << 2 | scale << 4, two | scale2 << 1]) + gguf_file(kvs, tensors)


def lora_seeds():
    rng = random.Random(11)
    every = [(0, t) for t in LORA_SHAPES]
    yield "f32_q_v", lora_seed(rng, 0, 0, 0, [(0, "attn_q"), (0, "attn_v")])
    yield "q8_0_same_two_f16", lora_seed(rng, 2, 3, 0, every, rank=1, kind="f16", alpha=0, two=1, scale2=3)
    yield "scale0_is_base", lora_seed(rng, 0, 0, 2, [(0, "attn_output"), (1, "ffn_down")])
    yield "q4_0_as_f32_norm", lora_seed(rng, 3, 1, 6, [(1, "ffn_gate"), (1, "ffn_up")],
                                        extra=[("blk.1.attn_norm.weight", [32, 1])])
    yield "f16_past_range", lora_seed(rng, 1, 2, 5, [(0, "attn_k"), (1, "attn_q")], rank=4, alpha=32.0)
    yield "other_arch", lora_seed(rng, 0, 0, 0, [(0, "attn_q")], arch="qwen2")
    yield "half_missing", lora_seed(rng, 2, 0, 0, [(1, "attn_v")], drop=("blk.1.attn_v.weight.lora_b",))
    yield "shape", lora_seed(rng, 0, 0, 0, [(0, "attn_k")], extra=[("blk.0.attn_v.weight.lora_a", [32, 2]),
                                                                   ("blk.0.attn_v.weight.lora_b", [2, 32])])


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
    for fuzzer, seeds in (("gguf", gguf_seeds()), ("lora", lora_seeds())):
        for name, data in seeds:
            assert len(data) <= 4096, (name, len(data))  # libFuzzer's -max_len (tests/fuzz/fuzz.mk)
            write(fuzzer, name, data)


if __name__ == "__main__":
    main()
