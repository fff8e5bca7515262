"""peft_lora.py - the PyTorch + peft side of bench/llm_finetune.mjs: LoRA
training steps of the same GGUF llama (weights dequantized to float32 by
tools/gguf_numpy.py, then cast to --dtype) on the same windows, on CUDA
when present.  peft's LoraConfig with the same rank, alpha and targets
(attn_q -> q_proj, attn_v -> v_proj, ...), no dropout, torch's AdamW with
the same lr; eager mode.  The loss is the mean next-token cross-entropy of
every position, as ours; the first step's loss is printed for the bench to
compare with ours (same weights and tokens: they agree to float rounding).

GGUF's llama q and k rows are permuted for adjacent-pair rotation
(llama.cpp's converter); Hugging Face's LlamaAttention rotates halves, so
the rows are permuted back here.

    python3 bench/peft_lora.py --gguf M.gguf --ids ids.i32 --seq 128 --batch 4 \
        [--steps 10] [--rank 8] [--alpha 16] [--targets attn_q,attn_v] [--dtype f32|bf16]

ids.i32: batch * (seq + 1) little-endian int32 (each window's ids then its
last target).  Prints one JSON line: loss, tokens_per_s, ms_per_step,
peak_bytes (CUDA's peak allocated memory), device.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from gguf_numpy import read_gguf  # noqa: E402

HF_NAMES = {'attn_q': 'q_proj', 'attn_k': 'k_proj', 'attn_v': 'v_proj', 'attn_output': 'o_proj',
            'ffn_gate': 'gate_proj', 'ffn_up': 'up_proj', 'ffn_down': 'down_proj'}


def unpermute(w, n_head):
    """GGUF's rows of q or k [n_head * d, n_in] back to Hugging Face's order."""
    d = w.shape[0] // n_head
    return w.reshape(n_head, d // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)


def build_model(path):
    from transformers import LlamaConfig, LlamaForCausalLM
    meta, t = read_gguf(path)
    if meta['general.architecture'] != 'llama':
        raise SystemExit(f'peft_lora.py: {path} is {meta["general.architecture"]}; this bench reads llama files')
    k = lambda s: meta[f'llama.{s}']  # noqa: E731
    n_head, n_kv = k('attention.head_count'), k('attention.head_count_kv')
    tied = 'output.weight' not in t
    cfg = LlamaConfig(vocab_size=t['token_embd.weight'].shape[0], hidden_size=k('embedding_length'),
                      intermediate_size=k('feed_forward_length'), num_hidden_layers=k('block_count'),
                      num_attention_heads=n_head, num_key_value_heads=n_kv,
                      max_position_embeddings=k('context_length'), rms_norm_eps=k('attention.layer_norm_rms_epsilon'),
                      rope_theta=meta.get('llama.rope.freq_base', 10000.0), tie_word_embeddings=tied,
                      attention_bias=False, mlp_bias=False)
    sd = {'model.embed_tokens.weight': t['token_embd.weight'], 'model.norm.weight': t['output_norm.weight']}
    if not tied:
        sd['lm_head.weight'] = t['output.weight']
    for i in range(cfg.num_hidden_layers):
        b, p = f'blk.{i}.', f'model.layers.{i}.'
        sd[p + 'input_layernorm.weight'] = t[b + 'attn_norm.weight']
        sd[p + 'post_attention_layernorm.weight'] = t[b + 'ffn_norm.weight']
        sd[p + 'self_attn.q_proj.weight'] = unpermute(t[b + 'attn_q.weight'], n_head)
        sd[p + 'self_attn.k_proj.weight'] = unpermute(t[b + 'attn_k.weight'], n_kv)
        sd[p + 'self_attn.v_proj.weight'] = t[b + 'attn_v.weight']
        sd[p + 'self_attn.o_proj.weight'] = t[b + 'attn_output.weight']
        for g in ('gate', 'up', 'down'):
            sd[p + f'mlp.{g}_proj.weight'] = t[b + f'ffn_{g}.weight']
    model = LlamaForCausalLM(cfg)
    missing, unexpected = model.load_state_dict({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in sd.items()},
                                                strict=False)
    missing = [m for m in missing if not (tied and m == 'lm_head.weight') and 'rotary' not in m]
    if missing or unexpected:
        raise SystemExit(f'peft_lora.py: weights missing {missing}, unexpected {unexpected}')
    if tied:
        model.tie_weights()
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--gguf', required=True)
    ap.add_argument('--ids', required=True)
    ap.add_argument('--seq', type=int, default=128)
    ap.add_argument('--batch', type=int, default=4)
    ap.add_argument('--steps', type=int, default=10)
    ap.add_argument('--rank', type=int, default=8)
    ap.add_argument('--alpha', type=float, default=16)
    ap.add_argument('--targets', default='attn_q,attn_v')
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--dtype', choices=['f32', 'bf16'], default='f32')
    a = ap.parse_args()
    from peft import LoraConfig, get_peft_model
    dev = 'cuda' if torch.cuda.is_available() else 'cpu'
    dtype = torch.float32 if a.dtype == 'f32' else torch.bfloat16
    model = build_model(a.gguf).to(dev, dtype)
    cfg = LoraConfig(r=a.rank, lora_alpha=a.alpha, lora_dropout=0.0, bias='none',
                     target_modules=[HF_NAMES[x] for x in a.targets.split(',')])
    model = get_peft_model(model, cfg)
    win = np.fromfile(a.ids, '<i4').reshape(a.batch, a.seq + 1)
    ids = torch.from_numpy(win[:, :-1].astype(np.int64)).to(dev)
    targets = torch.from_numpy(win[:, 1:].astype(np.int64)).to(dev)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=a.lr, weight_decay=0.0)
    sync = torch.cuda.synchronize if dev == 'cuda' else (lambda: None)

    def step():
        logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    first = float(step())  # warm-up, and the loss at B = 0 (the base model's)
    step()
    sync()
    if dev == 'cuda':
        torch.cuda.reset_peak_memory_stats()
    ms = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({'loss': first, 'tokens_per_s': a.batch * a.seq * a.steps / (sum(ms) / 1e3),
                      'ms_per_step': [round(x, 2) for x in ms], 'device': torch.cuda.get_device_name() if dev == 'cuda' else 'cpu',
                      'peak_bytes': torch.cuda.max_memory_allocated() if dev == 'cuda' else None,
                      'dtype': a.dtype, 'torch': torch.__version__}))


if __name__ == '__main__':
    main()
