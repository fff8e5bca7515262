/* rlx_llm.h - language models from GGUF files: load, tokenize, evaluate
 * and generate text token by token (included by rlx_models.h).
 *
 * Architectures: llama (GQA, tied or separate output; RoPE on adjacent
 * pairs), qwen2 (q/k/v biases; RoPE on NeoX halves), qwen3 (per-head q/k
 * RMSNorm, head_dim from the metadata).  Weight types: every type of
 * include/rlx_gguf_types.def; 2-D weights stay in their file type in memory
 * and the matmul_q / gather_q ops read them as they are.  The model holds
 * the file's tensor data once (read into one buffer, or the caller's buffer
 * when opened from memory), a KV cache of n_ctx positions (f32), and
 * compiled sessions for steps of 1, 4, 16 and 64 tokens that share the
 * weights and the cache, so decoding never recompiles.  LoRA adapters
 * (rlx_llm_lora) are applied while generating.  Same conventions as rlx.h:
 * rlx_status plus rlx_last_error(). */
#ifndef RLX_LLM_H
#define RLX_LLM_H

#include "rlx.h"
#include "rlx_llm_grammar.h"
#include "rlx_gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_llm rlx_llm;

/* A LoRA adapter applied while generating: a GGUF file as llama.cpp
 * loads it (general.type "adapter", adapter.type "lora", the base's
 * general.architecture, adapter.lora.alpha a float32 or absent), with
 * tensors "<base weight>.lora_a" (dims [n_in, r]) and "<base
 * weight>.lora_b" (dims [r, n_out]), f32 or f16, for any of the layers'
 * attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down weights
 * ("*_norm.weight" tensors are skipped, as llama.cpp does).  Each adapted
 * product becomes y = x W^T + s (x A^T) B^T with s = scale * alpha / r
 * (alpha 0 or absent: s = scale), every adapter adding its own term. */
typedef struct {
  const char *path; /* the adapter file, read into memory at open (not in
                       the wasm modules, which read no files) ... */
  const void *data; /* ... or, when path is NULL, its bytes data[0, size),
                       used in place: valid and unchanged until rlx_llm_free */
  size_t size;
  float scale;      /* the user's scale (1: as trained; 0: no effect) */
} rlx_llm_lora;

/* The i-th weight a LoRA adapter may adapt in each layer ("attn_q", ...,
 * "ffn_down": the tensor "blk.<layer>.<target>.weight"), NULL past the
 * last. */
const char *rlx_llm_lora_target(int32_t i);
/* The index of the target named name[0, len), or -1. */
int32_t rlx_llm_lora_target_find(const char *name, size_t len);

/* Writes a LoRA adapter file that the open calls and llama.cpp read:
 * general.architecture arch, alpha (adapter.lora.alpha), and for each
 * tensors[i] the pair "<name>.lora_a" / "<name>.lora_b" in type (f32 or
 * f16).  The file appears whole or not at all (written under a temporary
 * name, then renamed). */
typedef struct {
  const char *name;   /* the base weight, e.g. "blk.0.attn_q.weight" */
  int32_t rank, n_in, n_out;
  const float *a;     /* [rank, n_in] row-major (PEFT's lora_A) */
  const float *b;     /* [n_out, rank] row-major (PEFT's lora_B) */
} rlx_llm_lora_tensor;
rlx_status rlx_llm_lora_write(const char *path, const char *arch, float alpha, rlx_gguf_type type,
                              const rlx_llm_lora_tensor *tensors, int32_t n);
/* The same file's bytes into buf[0, cap) (the wasm modules have no
 * files): *size is the file's size; buf NULL asks for the size only, a cap
 * below it is refused. */
rlx_status rlx_llm_lora_write_memory(const char *arch, float alpha, rlx_gguf_type type,
                                     const rlx_llm_lora_tensor *tensors, int32_t n, void *buf, size_t cap,
                                     size_t *size);

/* The adapters a model was opened with, read back: pair k (0 ..
 * rlx_llm_lora_pair_count - 1, layer by layer in rlx_llm_lora_target's
 * order) of adapter i, its A [rank, n_in] and B [n_out, rank] as f32
 * (either pointer may be NULL to skip it; a_len, b_len: their sizes). */
typedef struct {
  char name[64];      /* the base weight, e.g. "blk.0.attn_q.weight" */
  int32_t layer, target; /* target: rlx_llm_lora_target's index */
  int32_t rank, n_in, n_out;
  float alpha;        /* the file's adapter.lora.alpha (0 when absent) */
  float scale;        /* applied: the user's scale * alpha / rank (alpha 0: the user's scale) */
} rlx_llm_lora_pair_info;
int32_t rlx_llm_lora_pair_count(const rlx_llm *m, int32_t i); /* 0 for no such adapter */
rlx_status rlx_llm_lora_get_pair(const rlx_llm *m, int32_t i, int32_t k, rlx_llm_lora_pair_info *info, float *a,
                                 size_t a_len, float *b, size_t b_len);

/* Merges LoRA adapters into a copy of their base model, as llama.cpp's
 * llama-export-lora does: each weight an adapter adapts becomes
 * W + sum_i s_i B_i A_i (s_i = adapters[i].scale * alpha_i / r_i, alpha 0:
 * the scale), computed in f32 from the dequantized weight; every other
 * tensor's bytes and every metadata entry are copied unchanged, except
 * general.file_type (where the base has it), which becomes 1 (mostly f16)
 * when merged weights were made f16 (llama-export-lora writes 1).  The adapters are opened against
 * the base as rlx_llm_open_* opens them (n_ctx 1), so an adapter for
 * another architecture, a missing half or a shape that does not fit is
 * refused by name, as there.  A merged value that is not finite (or past
 * f16's range, for an f16 weight) is refused (RLX_ERR_NUMERIC) naming the
 * weight.  n >= 1. */
typedef enum {
  RLX_LLM_MERGE_AUTO = 0, /* llama-export-lora's rule: an f32 weight stays f32, any other becomes f16 */
  RLX_LLM_MERGE_F32 = 1,  /* every merged weight f32 */
  RLX_LLM_MERGE_F16 = 2,  /* every merged weight f16 */
  RLX_LLM_MERGE_SAME = 3  /* the weight's own type: quantized again (rlx_gguf_quantize: round to nearest
                             per block, not llama-quantize's search for K-quants) */
} rlx_llm_merge_type;
/* Writes the merged model to out_path (under "<out_path>.tmp", then
 * renamed: it appears whole or not at all). */
rlx_status rlx_llm_lora_merge(const char *base_path, const rlx_llm_lora *adapters, int32_t n, const char *out_path,
                              rlx_llm_merge_type type);
/* The same from the base's bytes base[0, base_size), into out[0, cap):
 * *size is the merged file's size, set even when cap is too small (then
 * RLX_ERR_INVALID_ARG, before anything is merged: cap 0 asks the size),
 * 0 after any other failure. */
rlx_status rlx_llm_lora_merge_memory(const void *base, size_t base_size, const rlx_llm_lora *adapters, int32_t n,
                                     rlx_llm_merge_type type, void *out, size_t cap, size_t *size);

typedef struct {
  int32_t n_ctx;   /* positions of the KV cache; 0: the model's context
                      length, at most RLX_LLM_DEFAULT_CTX */
  uint64_t budget; /* bytes of tensor data allowed (0: no limit natively,
                      RLX_GGUF_WASM32_DATA_BUDGET in wasm) */
  int32_t xq8;     /* 1: products with Q8_0 and Q4_0 weights round their
                      input to 8 bits per 32 values first (matmul_q's xq8,
                      as llama.cpp does) and run as int8 dot products where
                      the CPU has them; other types keep f32.  The CPU only
                      (a WebGPU / WebGL2 step refuses it) */
  const rlx_llm_lora *lora; /* n_lora adapters applied at every step
                               (NULL / 0: none); each is checked against
                               the model at open and refused by name */
  int32_t n_lora;
  int32_t threads; /* CPU threads of its steps (and of fine-tuning it): 0
                      the default (env RLX_THREADS, else the physical
                      cores), 1 .. 256; logits are bitwise the same for
                      any count.  wasm builds: 1, the option ignored */
} rlx_llm_options;

#define RLX_LLM_DEFAULT_CTX 4096

typedef struct {
  const char *arch;          /* "llama", "qwen2", "qwen3" */
  const char *name;          /* general.name, or "" */
  const char *tokenizer;     /* "llama" (SentencePiece) or "gpt2" (byte-level BPE) */
  int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  int32_t n_ctx_train;       /* the model's context length */
  int32_t n_ctx;             /* this instance's KV cache positions */
  float rope_theta, rms_eps;
  int32_t rope_neox;         /* 1: NeoX halves, 0: adjacent pairs */
  int32_t tied_output;       /* the output projection is token_embd */
  int32_t bos, eos;          /* -1 when the file has none */
  int32_t add_bos;           /* the file asks for BOS before a prompt */
  uint64_t n_params;         /* weights (elements of every tensor) */
  uint64_t weight_bytes;     /* tensor data as held in memory */
  uint64_t kv_bytes;         /* the KV cache */
  const char *weight_types;  /* e.g. "q8_0 x 15, f32 x 5" */
  int32_t xq8;               /* as opened (rlx_llm_options) */
  int32_t n_lora;            /* LoRA adapters applied (rlx_llm_options) */
  int32_t n_lora_pairs;      /* adapted products, over every adapter */
  uint64_t lora_bytes;       /* the adapters' tensor data as held */
  int32_t threads;           /* CPU threads its CPU steps run on (rlx_llm_options) */
} rlx_llm_info;

/* Reads the file's tensor data into one buffer (refusing, before that
 * allocation, a file whose data exceeds opt->budget). */
rlx_status rlx_llm_open_file(const char *path, const rlx_llm_options *opt, rlx_llm **out);
/* Uses data[0, size) in place (no copy of the weights): it must stay valid
 * and unchanged until rlx_llm_free. */
rlx_status rlx_llm_open_memory(const void *data, size_t size, const rlx_llm_options *opt, rlx_llm **out);
/* A model split by llama.cpp's gguf-split: its n parts in order, each used
 * in place as by rlx_llm_open_memory (rlx_gguf_open_parts says what is
 * checked).  rlx_llm_open_file given the first part of a split
 * ("x-00001-of-00003.gguf") reads every part beside it. */
rlx_status rlx_llm_open_parts(const void *const *data, const size_t *sizes, int32_t n, const rlx_llm_options *opt,
                              rlx_llm **out);
void rlx_llm_free(rlx_llm *m);
rlx_status rlx_llm_get_info(const rlx_llm *m, rlx_llm_info *info);

/* Text -> ids.  add_bos: 1 / 0, or -1 as the file says; special: 1 turns
 * special-token text ("<|im_start|>") into those tokens.  *n is the count
 * needed (set even when cap is too small, which is RLX_ERR_INVALID_ARG). */
rlx_status rlx_llm_tokenize(const rlx_llm *m, const char *text, size_t len, int add_bos, int special, int32_t *ids,
                            size_t cap, size_t *n);
/* ids -> text (control tokens skipped), as llama.cpp detokenizes, in whole
 * UTF-8: a byte that cannot begin a well-formed character is U+FFFD, as in
 * generated text.  *len as *n above, plus a NUL. */
rlx_status rlx_llm_detokenize(const rlx_llm *m, const int32_t *ids, size_t n_ids, char *text, size_t cap, size_t *len);

/* The context: tokens evaluated so far, kept in the KV cache. */
int32_t rlx_llm_position(const rlx_llm *m);
/* Forgets the context (position 0). */
void rlx_llm_reset(rlx_llm *m);
/* Keeps the first n tokens of the context and forgets the rest (n at most
 * the position): the next eval continues after them without recomputing
 * them.  What rolls a conversation back to where it changed. */
rlx_status rlx_llm_truncate(rlx_llm *m, int32_t n);
/* Tokens evaluated by this model since it was opened (every eval and
 * generated token that ran through the model): for counting what a
 * conversation recomputes. */
uint64_t rlx_llm_tokens_evaluated(const rlx_llm *m);
/* Appends n ids at the current position and writes the logits after the
 * last one (n_vocab floats; logits may be NULL).  Past n_ctx is refused
 * before anything runs, leaving the context as it was. */
rlx_status rlx_llm_eval(rlx_llm *m, const int32_t *ids, size_t n, float *logits);

/* ---- generation ----------------------------------------------------------- */
/* A temperature below this is greedy, as 0 is: dividing logits by a
 * vanishing temperature overflows floats (1e-38 turned every logit into
 * inf or NaN), and no draw below it differs from the argmax in practice. */
#define RLX_LLM_MIN_TEMPERATURE 1e-6f

typedef struct {
  float temperature;     /* 0, or anything below RLX_LLM_MIN_TEMPERATURE: greedy
                            (argmax, lowest id on ties) */
  int32_t top_k;         /* 0: off */
  float top_p;           /* 1: off */
  float min_p;           /* 0: off */
  float repeat_penalty;  /* 1: off */
  int32_t repeat_last_n; /* tokens the penalty looks back over */
  uint64_t seed;
  int32_t max_tokens;    /* tokens to generate at most */
  const char *const *stop; /* stop strings (the text before one is kept) */
  int32_t n_stop;
  /* NULL, or the grammar the generated text follows (rlx_llm_grammar.h):
   * each token must continue it, and generation ends only where the text is
   * complete under it (or at max_tokens, a stop string or a full context).
   * It must outlive the generator. */
  const rlx_llm_grammar *grammar;
} rlx_llm_sampling;

/* Greedy, 64 tokens, no stop strings. */
rlx_llm_sampling rlx_llm_sampling_default(void);

typedef struct {
  int32_t prompt_tokens, generated_tokens;
  double prompt_seconds, generate_seconds;
  int32_t stopped_by; /* 0 max_tokens, 1 end-of-generation token, 2 stop string, 3 callback,
                         4 the context is full */
} rlx_llm_stats;

/* Step by step: the generator resets the context and evaluates the prompt;
 * each next() samples one token (evaluating the previous one first) and
 * gives its id and the text it completes: valid UTF-8, possibly empty while
 * a character spans tokens or while the text could be the start of a stop
 * string.  When generation ends *done is set (stats.stopped_by says why);
 * *id is then the last token, or -1 when none was made by this call (an
 * end-of-generation token is not passed on).  text stays valid until the
 * next call. */
typedef struct rlx_llm_generator rlx_llm_generator;
rlx_status rlx_llm_generator_new(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, const rlx_llm_sampling *s,
                                 rlx_llm_generator **out);
rlx_status rlx_llm_generator_next(rlx_llm_generator *gen, int32_t *id, const char **text, size_t *len, int *done);
void rlx_llm_generator_stats(const rlx_llm_generator *gen, rlx_llm_stats *stats);
void rlx_llm_generator_free(rlx_llm_generator *gen);

/* Called for each generated token with the text it completes (valid UTF-8,
 * possibly empty while a character spans tokens); return nonzero to stop. */
typedef int (*rlx_llm_on_token)(void *user, int32_t id, const char *text, size_t len);

/* Resets the context, evaluates prompt_ids and samples up to max_tokens
 * tokens, stopping at an end-of-generation token or a stop string. */
rlx_status rlx_llm_generate_ids(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, const rlx_llm_sampling *s,
                                rlx_llm_on_token on_token, void *user, rlx_llm_stats *stats);
/* The same from text (tokenized with the file's BOS rule, specials parsed). */
rlx_status rlx_llm_generate(rlx_llm *m, const char *prompt, const rlx_llm_sampling *s, rlx_llm_on_token on_token,
                            void *user, rlx_llm_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
