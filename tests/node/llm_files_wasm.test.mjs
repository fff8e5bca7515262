// llm_files_wasm.test.mjs - hostile GGUF files through web/pkg/rlx_llm.wasm,
// where size_t is 32 bits: a vocabulary whose rendered pieces would pass
// 4 GiB (the sum wrapped in wasm32 and the pieces were written before
// their buffer) is refused and leaves the module working; every seed of
// the GGUF fuzz corpus (tests/fuzz/corpus/gguf) and every model the llm
// fuzzer's seeds make (build/fuzz/llm_models/, tests/fuzz/fuzz.mk) opens
// or is refused with a status, never a trap, and what opens tokenizes,
// generates and frees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';
import { FATAL_STATUS } from '../../web/runtime/loader.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = `${ROOT}build/lm/qwen2-q4_0.gguf`; // make lm-fixtures
const LLM_MODELS = `${ROOT}build/fuzz/llm_models`; // make build/fuzz/llm_models/<seed>.gguf
const GGUF_SEEDS = `${ROOT}tests/fuzz/corpus/gguf`;
const STATUS_INVALID_ARG = -1;

// ---- a GGUF file of metadata only (the format of include/rlx_gguf.h) ----------
const enc = new TextEncoder();
function ggufString(s) {
  const b = typeof s === 'string' ? enc.encode(s) : s;
  const out = new Uint8Array(8 + b.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(b.length), true);
  out.set(b, 8);
  return out;
}
const u32 = (v) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); return b; };
const u64 = (v) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(v), true); return b; };
/** kvs: [key, 'str' | 'u32' | 'arr:str', value]. */
function ggufMetadata(kvs) {
  const parts = [enc.encode('GGUF'), u32(3), u64(0), u64(kvs.length)];
  for (const [key, type, value] of kvs) {
    parts.push(ggufString(key));
    if (type === 'str') parts.push(u32(8), ggufString(value));
    else if (type === 'u32') parts.push(u32(4), u32(value));
    else parts.push(u32(9), u32(8), u64(value.length), ...value.map(ggufString));
  }
  const size = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size + ((32 - (size % 32)) % 32));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** A llama whose byte-level vocab holds one token of `chars` CJK characters:
 * each renders as "[UNK_BYTE_0xe4b880<the whole token>]" (llama.cpp's rule),
 * 37,837 of them 4,295,634,610 bytes - past 4 GiB. */
function widePieceFile(chars) {
  const cjk = new Uint8Array(3 * chars);
  for (let i = 0; i < chars; i++) cjk.set([0xe4, 0xb8, 0x80], 3 * i);
  return ggufMetadata([
    ['general.architecture', 'str', 'llama'], ['llama.embedding_length', 'u32', 8], ['llama.block_count', 'u32', 1],
    ['llama.attention.head_count', 'u32', 2], ['llama.feed_forward_length', 'u32', 8], ['llama.context_length', 'u32', 64],
    ['tokenizer.ggml.model', 'str', 'gpt2'], ['tokenizer.ggml.tokens', 'arr:str', ['a', 'b', cjk]],
    ['tokenizer.ggml.merges', 'arr:str', []]]);
}

/** rlx_llm_open on bytes inside model's own module instance: [status, message]. */
function openInSameModule(model, bytes) {
  const m = model.mod;
  const ptr = m.call('rlx_llm_buffer_new', bytes.length) >>> 0;
  assert.ok(ptr, m.lastError());
  m.u8(ptr, bytes.length).set(bytes);
  const [status, handle] = m.scoped((t) => {
    const out = t.alloc(4);
    m.i32(out, 1)[0] = 0;
    const part = t.alloc(8);
    m.i32(part, 2).set([ptr, bytes.length]);
    return [m.call('rlx_llm_open', part, part + 4, 1, 0, 0, 0, 0, 0, 0, out), m.i32(out, 1)[0]];
  });
  const message = m.lastError();
  if (handle) m.call('rlx_llm_free', handle);
  m.call('rlx_wasm_free', ptr);
  return [status, message];
}

const greedyIds = async (model) => (await model.generate('Hello there', { maxTokens: 6, temperature: 0 })).ids;

test('a vocabulary whose pieces would pass 4 GiB is refused in wasm32, naming the key, and the module works on', async () => {
  assert.ok(existsSync(FIXTURE), `missing ${FIXTURE} (make lm-fixtures)`);
  const model = await loadGguf(FIXTURE, { backend: 'cpu' });
  try {
    const before = await greedyIds(model);
    for (const chars of [37_837, 30_000]) { // past 4 GiB; 2.7 GB (natively it took 2.6 GB and 10 s)
      const [status, message] = openInSameModule(model, widePieceFile(chars));
      assert.equal(status, STATUS_INVALID_ARG, message);
      assert.match(message, /tokenizer\.ggml\.tokens renders to pieces of more than \d+ bytes/);
      assert.match(message, new RegExp(`token 2 alone renders to ${chars * (3 * chars + 19)} bytes`));
    }
    assert.deepEqual(await greedyIds(model), before, 'the module computes as before');
  } finally {
    model.free();
  }
});

/** Asserts err is a refusal: an RlxError with a status and a message, not a trap. */
function assertRefusal(name, err) {
  assert.ok(err instanceof RlxError, `${name}: ${err?.name}: ${err?.message}`);
  assert.notEqual(err.status, FATAL_STATUS, `${name}: the module trapped: ${err.message}`);
  assert.ok(err.message.length > 0, `${name}: a refusal without a message`);
}

/** Opens bytes with a fresh module: 'refused', or 'opened' (then it
 * tokenizes, generates or refuses to (raw weights make NaN logits), and frees). */
async function openOrRefuse(name, bytes) {
  let model;
  try {
    model = await loadGguf(bytes, { backend: 'cpu' });
  } catch (err) {
    assertRefusal(name, err);
    return 'refused';
  }
  try {
    assert.ok(Array.isArray(model.tokenize('Hello')), name);
    const r = await model.generate([0], { maxTokens: 3, temperature: 0 }) // one id: a context of 1 holds it
      .catch((err) => (assertRefusal(name, err), { ids: [] }));
    assert.ok(r.ids.length <= 3 && r.ids.every((id) => id >= 0 && id < model.info.nVocab), name);
  } finally {
    model.free();
  }
  return 'opened';
}

test('every GGUF fuzz seed and every llm fuzz seed\'s model opens in wasm or is refused with a status, never a trap', async () => {
  assert.ok(existsSync(LLM_MODELS), `missing ${LLM_MODELS} (make test-node writes it: tests/fuzz/fuzz.mk)`);
  const seeds = readdirSync(GGUF_SEEDS).map((f) => [`gguf/${f}`, `${GGUF_SEEDS}/${f}`]);
  const models = readdirSync(LLM_MODELS).filter((f) => f.endsWith('.gguf')).map((f) => [`llm/${f}`, `${LLM_MODELS}/${f}`]);
  assert.ok(seeds.length >= 5 && models.length >= 8, `${seeds.length} GGUF seeds, ${models.length} llm seed models`);
  const outcome = {};
  for (const [name, path] of [...seeds, ...models]) outcome[name] = await openOrRefuse(name, readFileSync(path));
  // The llm seeds make models that open (tests/fuzz/make_llm_seeds.py), but
  // for one whose tokens array is one shorter than token_embd's rows.
  for (const [name] of models) assert.equal(outcome[name], name.includes('shorter') ? 'refused' : 'opened', name);
});
