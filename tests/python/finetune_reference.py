"""finetune_reference.py - an independent float64 reference (numpy) of the
LoRA fine-tuning loss and its gradients, for test_finetune_reference.py.

Nothing here calls the RLX library: the GGUF tensors come from
tools/gguf_numpy.py (the file read with numpy), the forward of the
llama / qwen2 / qwen3 architectures as llama.cpp defines them, written
out plainly, and its backward by hand down to every LoRA pair:

    x = token_embd[ids]
    per layer:  h = rmsnorm(x) * attn_norm
                q, k, v = lin(h)  (+ qwen2's biases; qwen3: per-head rmsnorm
                                   of q and k with attn_q_norm / attn_k_norm)
                q, k = rope(q), rope(k)   (llama: adjacent pairs (2i, 2i+1);
                                           qwen2 / qwen3: NeoX halves (i, i + d/2);
                                           theta_i = pos * base^(-2i/d))
                o = softmax(q k^T / sqrt(d) + causal) v, query head h on
                    key / value head h // (n_head / n_head_kv)
                x = x + lin(o);  h = rmsnorm(x) * ffn_norm
                x = x + lin(silu(lin_gate(h)) * lin_up(h))
    logits = (rmsnorm(x) * output_norm) output^T   (output = token_embd when tied)
    loss = sum_t mask_t CE(logits_t, target_t) / sum_t mask_t   over every window

where lin(x) = x W^T (+ b) + s (x A^T) B^T on the adapted projections,
s = alpha / rank.  The variant argument of Model (tests only) swaps in a
wrong RoPE, LoRA scale or GQA mapping, to show the comparison would catch it.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gguf_numpy  # noqa: E402  (the project's numpy GGUF reader, independent of the library)


def read_gguf(path):
    """(metadata dict, {name: float64 array shaped [dims[-1], ..., dims[0]]})."""
    meta, tensors = gguf_numpy.read_gguf(path)
    return meta, {name: t.astype(np.float64) for name, t in tensors.items()}


def read_adapter(path):
    """(alpha, {base weight name: (A [r, n_in], B [n_out, r])}) of a LoRA GGUF."""
    meta, t = read_gguf(path)
    pairs = {n[:-len(".lora_a")]: (t[n], t[n[:-1] + "b"]) for n in t if n.endswith(".lora_a")}
    return meta.get("adapter.lora.alpha", 0.0), pairs


# ---- the model -----------------------------------------------------------------------------
TARGETS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def _rmsnorm(x, w, eps):
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * r * w, r


def _rmsnorm_back(dy, x, r, w):
    g = dy * w
    return r * g - x * r ** 3 * (g * x).sum(-1, keepdims=True) / x.shape[-1]


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class Model:
    """A GGUF language model in float64 with LoRA pairs {weight name: (A, B)}
    at scale alpha / rank.  variant (tests only): {"neox": bool} swaps the
    RoPE layout, {"scale": s} the LoRA scale, {"gqa": "modulo"} maps query
    head h to key head h % n_head_kv."""

    def __init__(self, path, variant=None):
        self.meta, self.t = read_gguf(path)
        m, a = self.meta, self.meta["general.architecture"]
        self.arch = a
        self.n_layer = m[a + ".block_count"]
        self.n_embd = m[a + ".embedding_length"]
        self.n_head, self.n_head_kv = m[a + ".attention.head_count"], m[a + ".attention.head_count_kv"]
        self.head_dim = m.get(a + ".attention.key_length", self.n_embd // self.n_head)
        self.eps = m[a + ".attention.layer_norm_rms_epsilon"]
        self.base = m.get(a + ".rope.freq_base", 10000.0)
        self.variant = dict(variant or {})
        self.neox = self.variant.get("neox", a in ("qwen2", "qwen3"))
        self.out = self.t.get("output.weight", self.t["token_embd.weight"])
        self.lora, self.scale = {}, 0.0

    def set_lora(self, alpha, pairs):
        """pairs: {base weight name: (A, B)} as float64; scale alpha / rank."""
        self.lora = {k: (np.asarray(a, np.float64), np.asarray(b, np.float64)) for k, (a, b) in pairs.items()}
        rank = next(iter(self.lora.values()))[0].shape[0]
        self.scale = self.variant.get("scale", alpha / rank)

    # ---- pieces with their backward ----------------------------------------------------------
    def _lin(self, x, name, cache):
        w = self.t[name + ".weight"]
        y = x @ w.T
        if name + ".bias" in self.t:
            y = y + self.t[name + ".bias"]
        if name + ".weight" in self.lora:
            a, b = self.lora[name + ".weight"]
            y = y + self.scale * (x @ a.T) @ b.T
        cache[name] = x
        return y

    def _lin_back(self, dy, name, cache, grads):
        x = cache[name]
        dx = dy @ self.t[name + ".weight"]
        if name + ".weight" in self.lora:
            a, b = self.lora[name + ".weight"]
            dyb = dy @ b  # [T, r]
            dx = dx + self.scale * dyb @ a
            da, db = grads[name + ".weight"]
            da += self.scale * dyb.T @ x
            db += self.scale * dy.T @ (x @ a.T)
        return dx

    def _rope(self, x, sign=1.0):
        """x [T, heads, d] rotated by position (sign -1: the inverse)."""
        T, _, d = x.shape
        theta = np.arange(T)[:, None] * self.base ** (-np.arange(0, d, 2) / d)  # [T, d/2]
        c, s = np.cos(theta)[:, None, :], sign * np.sin(theta)[:, None, :]
        if self.neox:
            x0, x1 = x[..., :d // 2], x[..., d // 2:]
        else:
            x0, x1 = x[..., 0::2], x[..., 1::2]
        y0, y1 = x0 * c - x1 * s, x0 * s + x1 * c
        y = np.empty_like(x)
        if self.neox:
            y[..., :d // 2], y[..., d // 2:] = y0, y1
        else:
            y[..., 0::2], y[..., 1::2] = y0, y1
        return y

    def _kv_head(self):
        g = self.n_head // self.n_head_kv
        h = np.arange(self.n_head)
        return h % self.n_head_kv if self.variant.get("gqa") == "modulo" else h // g

    # ---- one window -------------------------------------------------------------------------------
    def window(self, ids, targets, mask, backward=True):
        """(sum of mask * CE, {pair: (dA, dB)} of that sum, or None without
        backward) of one window."""
        T, H, Hk, d = len(ids), self.n_head, self.n_head_kv, self.head_dim
        kvh = self._kv_head()
        x = self.t["token_embd.weight"][np.asarray(ids)]
        layers = []
        causal = np.triu(np.full((T, T), -np.inf), 1)
        for l in range(self.n_layer):
            p, c = "blk.%d." % l, {}
            c["x0"] = x
            h, c["r1"] = _rmsnorm(x, self.t[p + "attn_norm.weight"], self.eps)
            q = self._lin(h, p + "attn_q", c).reshape(T, H, d)
            k = self._lin(h, p + "attn_k", c).reshape(T, Hk, d)
            v = self._lin(h, p + "attn_v", c).reshape(T, Hk, d)
            if p + "attn_q_norm.weight" in self.t:
                c["qn"] = q
                q, c["qr"] = _rmsnorm(q, self.t[p + "attn_q_norm.weight"], self.eps)
                c["kn"] = k
                k, c["kr"] = _rmsnorm(k, self.t[p + "attn_k_norm.weight"], self.eps)
            q, k = self._rope(q), self._rope(k)
            kk, vv = k[:, kvh], v[:, kvh]  # [T, H, d] per query head
            s = np.einsum("thd,uhd->htu", q, kk) / np.sqrt(d) + causal
            pr = _softmax(s)  # [H, T, T]
            o = np.einsum("htu,uhd->thd", pr, vv)
            c.update(q=q, kk=kk, vv=vv, pr=pr)
            x = x + self._lin(o.reshape(T, H * d), p + "attn_output", c)
            c["x1"] = x
            h2, c["r2"] = _rmsnorm(x, self.t[p + "ffn_norm.weight"], self.eps)
            g = self._lin(h2, p + "ffn_gate", c)
            u = self._lin(h2, p + "ffn_up", c)
            sg = 1.0 / (1.0 + np.exp(-g))
            c.update(g=g, u=u, sg=sg)
            x = x + self._lin(g * sg * u, p + "ffn_down", c)
            layers.append(c)
        hn, rn = _rmsnorm(x, self.t["output_norm.weight"], self.eps)
        logits = hn @ self.out.T
        lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
        w = np.asarray(mask, np.float64)
        tg = np.asarray(targets)
        loss = float((w * (lse - logits[np.arange(T), tg])).sum())
        if not backward:
            return loss, None

        # backward
        grads = {k: (np.zeros_like(a), np.zeros_like(b)) for k, (a, b) in self.lora.items()}
        dl = np.exp(logits - lse[:, None])
        dl[np.arange(T), tg] -= 1.0
        dl *= w[:, None]
        dx = _rmsnorm_back(dl @ self.out, x, rn, self.t["output_norm.weight"])
        for l in reversed(range(self.n_layer)):
            p, c = "blk.%d." % l, layers[l]
            dm = self._lin_back(dx, p + "ffn_down", c, grads)
            g, u, sg = c["g"], c["u"], c["sg"]
            dg = dm * u * sg * (1.0 + g * (1.0 - sg))
            dh2 = self._lin_back(dg, p + "ffn_gate", c, grads) + self._lin_back(dm * g * sg, p + "ffn_up", c, grads)
            dx = dx + _rmsnorm_back(dh2, c["x1"], c["r2"], self.t[p + "ffn_norm.weight"])
            do = self._lin_back(dx, p + "attn_output", c, grads).reshape(T, H, d)
            pr, q, kk, vv = c["pr"], c["q"], c["kk"], c["vv"]
            dvv = np.einsum("htu,thd->uhd", pr, do)
            dp = np.einsum("thd,uhd->htu", do, vv)
            ds = pr * (dp - (dp * pr).sum(-1, keepdims=True)) / np.sqrt(d)
            dq = np.einsum("htu,uhd->thd", ds, kk)
            dkk = np.einsum("htu,thd->uhd", ds, q)
            dk, dv = np.zeros((T, Hk, d)), np.zeros((T, Hk, d))
            for hq in range(H):  # each query head's share goes to its key / value head
                dk[:, kvh[hq]] += dkk[:, hq]
                dv[:, kvh[hq]] += dvv[:, hq]
            dq, dk = self._rope(dq, -1.0), self._rope(dk, -1.0)
            if p + "attn_q_norm.weight" in self.t:
                dq = _rmsnorm_back(dq, c["qn"], c["qr"], self.t[p + "attn_q_norm.weight"])
                dk = _rmsnorm_back(dk, c["kn"], c["kr"], self.t[p + "attn_k_norm.weight"])
            dh = (self._lin_back(dq.reshape(T, H * d), p + "attn_q", c, grads) +
                  self._lin_back(dk.reshape(T, Hk * d), p + "attn_k", c, grads) +
                  self._lin_back(dv.reshape(T, Hk * d), p + "attn_v", c, grads))
            dx = dx + _rmsnorm_back(dh, c["x0"], c["r1"], self.t[p + "attn_norm.weight"])
        return loss, grads

    def loss_and_grads(self, windows, backward=True):
        """The mean loss over windows [(ids, targets, mask), ...] and its
        gradients {pair: (dA, dB)} (None without backward)."""
        total, weight, grads = 0.0, 0.0, None
        for ids, targets, mask in windows:
            loss, g = self.window(ids, targets, mask, backward)
            total += loss
            weight += float(np.sum(mask))
            if g is not None:
                grads = g if grads is None else {k: (grads[k][0] + a, grads[k][1] + b) for k, (a, b) in g.items()}
        weight = max(weight, 1.0)
        return total / weight, grads and {k: (a / weight, b / weight) for k, (a, b) in grads.items()}

    def loss(self, windows):
        """The loss alone (the forward of loss_and_grads)."""
        return self.loss_and_grads(windows, backward=False)[0]
