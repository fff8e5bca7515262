// task_key.js - the identity a fine-tuning task stamps on its messages and
// hellos (protocol.js model key, mesh.js slug): base file, training text and
// LoRA shape in one short printable string, and why two of them differ, in
// words, for the refusals both sides show. Kept apart from task_llm.js so
// the protocol and the mesh need not import the language-model runtime.

import { LORA_TARGETS } from './settings.js';

// One letter per projection, in LORA_TARGETS's order (rlx_llm_lora_target names).
const LETTERS = 'qkvogud';
const SLUG = /^lora:([0-9a-f]{12}):([0-9a-f]{8}):r(\d+)a([0-9.e+-]+)s(\d+):([a-z]+)(?:\/\d+)?$/;

/** SHA-256 of bytes as lowercase hex (WebCrypto: pages, Workers and Node). */
export async function sha256Hex(bytes) {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The short code of a checked targets list ('attn_q,attn_v' -> 'qv'; 'all' -> every letter). */
export function targetCode(targets) {
  const names = String(targets).split(',').map((t) => t.trim());
  return LORA_TARGETS.map((t, i) => (names.includes(t) || names.includes('all') ? LETTERS[i] : '')).join('');
}

/** The task's identity: base file, text, LoRA shape, in at most 64 printable characters. */
export function llmSlug({ baseSha, dataSha, rank, alpha, seq, targets }) {
  return `lora:${baseSha.slice(0, 12)}:${dataSha.slice(0, 8)}:r${rank}a${alpha}s${seq}:${targetCode(targets)}`;
}

/**
 * Why two fine-tuning identities differ, in words ('another base model
 * file (sha256 1a2b... here, 3c4d... there)'), or null when either is not
 * one (protocol.js and mesh.js add it to their refusals).
 */
export function llmMismatch(mine, theirs) {
  const a = SLUG.exec(String(mine));
  const b = SLUG.exec(String(theirs));
  if (!a || !b) return null;
  const diff = [];
  if (a[1] !== b[1]) diff.push(`another base model file (sha256 ${b[1]}... there, ${a[1]}... here)`);
  if (a[2] !== b[2]) diff.push(`other training text (sha256 ${b[2]}... there, ${a[2]}... here)`);
  const names = ['LoRA rank', 'LoRA alpha', 'window length (seq)'];
  for (let k = 0; k < 3; k++) if (a[3 + k] !== b[3 + k]) diff.push(`${names[k]} ${b[3 + k]} there, ${a[3 + k]} here`);
  if (a[6] !== b[6]) diff.push(`LoRA targets ${b[6]} there, ${a[6]} here`);
  return diff.length ? diff.join('; ') : null;
}

/**
 * What a Rank stamps on its messages for a task (protocol.js compares it):
 * a vision model's slug and parameter count; a fine-tuning identity alone
 * (base file and LoRA shape fix the count, and the page knows it before the
 * model is loaded). At most 64 characters.
 */
export function modelKey({ kind, slug, paramCount }) {
  return kind === 'llm' ? slug : `${slug}/${paramCount}`;
}
