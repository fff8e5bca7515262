// messages.js - the six message types of the cluster protocol and their
// validation. A rank runs validate() on everything it receives before acting
// on it; a message that fails throws Invalid whose kind ('malformed',
// 'oversized' or 'nonFinite') is the counter it is dropped under.
//
//   hb      {role, leader, version, step, hbMs, sps, backend, fallback, hash, halted?}  broadcast
//   need    {version}                                     to the leader: send me params
//   params  {version, step, go, members?, settings?, payload}  from the leader (go: compute it)
//   grad    {version, step, loss, samples, payload}       to the leader: one bucket
//   halt    {step, reason}                                from the leader: the run ended (diverged)
//   bye     {}                                            broadcast: leaving
// Every message also has type, from (stamped by the bus) and term; ranks
// built with a model key add model and pv (protocol.js checks those first).
// settings: {lr > 0, maxSteps >= 0 (0: none), and optional short strings or
// integers such as slug, batch, optimizer}.
// In a tree step (tree.js) params carry tree {root, k, n, at, ids, depth, ms}
// (the leader, the fan-out, the step's size, the receiver's place in the
// order, its subtree, the tree's depth, the step deadline) and are relayed
// by inner ranks; a grad going up the tree is a partial: ids (the ranks it
// covers) and missing (ranks its sender gave up on).
// A relayed tree step's params carry the leader's own header as `lead`
// (auth.js: signed by the leader, verified by the bus); unwrapLead() turns
// such a message into the leader's params: the lead's fields, the relay's
// payload and tree slice, from: the leader, via: the relay.
// A params or grad payload may be packed (compress.js): enc 'f16' | 'int8',
// n, chunk and the bytes; non-finite scales or halves are 'nonFinite'. A
// params broadcast whose payload is a delta names the version it applies to
// (base) and the hash of the result; params may list the ranks the leader
// excluded ({id, reason}).
import { allFinite } from './reduce.js';
import { packedProblem } from './compress.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const TYPES = new Set(['hb', 'need', 'params', 'grad', 'halt', 'bye']);
const ROLES = new Set(['joining', 'follower', 'leader']);
export const MAX_ID = 128;
const MAX_TEXT = 512;
const MAX_MEMBERS = 100_000;

function idList(msg, key, { min = 0 } = {}) {
  const v = msg[key];
  if (!Array.isArray(v) || v.length < min || v.length > MAX_MEMBERS) throw new Invalid('malformed', `bad ${key}`);
  for (const id of v) if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID) throw new Invalid('malformed', `bad id in ${key}`);
}

/** params.tree of a tree step (see above). */
function treeOf(msg) {
  const t = msg.tree;
  if (t === undefined) return;
  if (t === null || typeof t !== 'object' || Array.isArray(t)) throw new Invalid('malformed', 'tree is not an object');
  str(t, 'root', MAX_ID);
  num(t, 'k', { int: true, min: 1 });
  num(t, 'n', { int: true, min: 1 });
  num(t, 'at', { int: true, min: 0 });
  num(t, 'depth', { int: true, min: 0 });
  num(t, 'ms', { min: 1 });
  idList(t, 'ids', { min: 1 });
  if (t.k > 1024 || t.n > MAX_MEMBERS || t.depth > 64 || t.ms > 3_600_000 || t.at + t.ids.length > t.n) throw new Invalid('malformed', 'tree out of range');
}

/** A message that breaks the rules (an RlxError of status INVALID_ARG); `kind` is malformed, oversized or nonFinite. */
export class Invalid extends RlxError {
  constructor(kind, why) {
    super(STATUS.INVALID_ARG, why);
    this.name = 'Invalid';
    this.kind = kind;
  }
}

/** A received value in an error message: never calls into it (a header {"type": {"toString": 1}} is just an object). */
function shown(v) {
  if (typeof v === 'string') return v.slice(0, 32);
  return v !== null && (typeof v === 'object' || typeof v === 'function' || typeof v === 'symbol') ? `(${typeof v})` : String(v);
}

function num(msg, key, { int = false, min = -Infinity, optional = false } = {}) {
  const v = msg[key];
  if (v === undefined && optional) return;
  if (typeof v !== 'number') throw new Invalid('malformed', `${key} is not a number`);
  if (!Number.isFinite(v)) throw new Invalid('nonFinite', `${key} is ${v}`);
  if (int && !Number.isSafeInteger(v)) throw new Invalid('malformed', `${key} is not an integer`);
  if (v < min) throw new Invalid('malformed', `${key} is below ${min}`);
}

function str(msg, key, max, { nullable = false } = {}) {
  const v = msg[key];
  if ((v === null || v === undefined) && nullable) return;
  if (typeof v !== 'string' || v.length > max) throw new Invalid('malformed', `${key} is not a string of <= ${max} chars`);
}

const MAX_SETTINGS = 32;
const MAX_EXCLUDED = 256;

function settingsOf(msg) {
  const s = msg.settings;
  if (s === undefined) return;
  if (s === null || typeof s !== 'object' || Array.isArray(s)) throw new Invalid('malformed', 'settings is not an object');
  const keys = Object.keys(s);
  if (keys.length > MAX_SETTINGS) throw new Invalid('malformed', 'too many settings');
  num(s, 'lr', { min: Number.MIN_VALUE });
  num(s, 'maxSteps', { int: true, min: 0 });
  for (const k of keys) {
    const v = s[k];
    if (k.length > 32) throw new Invalid('malformed', 'setting name too long');
    const ok = (typeof v === 'string' && v.length <= 64) || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';
    if (!ok) throw new Invalid('malformed', `setting ${k.slice(0, 32)} is not a short string, number or boolean`);
  }
}

function vector(msg, paramCount) {
  if (msg.enc !== undefined && msg.enc !== 'f32') {
    const bad = packedProblem(msg, paramCount);
    if (bad) throw new Invalid(bad.kind, bad.why);
    return;
  }
  const p = msg.payload;
  if (!(p instanceof Float32Array)) throw new Invalid('malformed', 'payload is not a Float32Array');
  if (p.length > paramCount) throw new Invalid('oversized', `payload of ${p.length} floats, model has ${paramCount}`);
  if (p.length < paramCount) throw new Invalid('malformed', `payload of ${p.length} floats, model has ${paramCount}`);
  if (!allFinite(p)) throw new Invalid('nonFinite', 'payload holds NaN or Infinity');
}

const LEAD_FIELDS = ['version', 'step', 'go', 'term', 'model', 'pv', 'members', 'settings', 'excluded', 'base', 'hash', 'enc', 'n', 'chunk'];

/** The leader's params inside a relayed message (see the top); throws Invalid for a bad lead. */
export function unwrapLead(msg) {
  const lead = msg.lead;
  if (lead === null || typeof lead !== 'object' || Array.isArray(lead) || lead.type !== 'params' || typeof lead.from !== 'string') {
    throw new Invalid('malformed', 'bad lead');
  }
  const out = { type: 'params', from: lead.from, via: msg.from, to: msg.to, tree: msg.tree, payload: msg.payload, lead };
  for (const k of LEAD_FIELDS) if (lead[k] !== undefined) out[k] = lead[k];
  return out;
}

/** Throws Invalid(kind) for anything a rank must not act on. */
export function validate(msg, paramCount) {
  if (msg === null || typeof msg !== 'object') throw new Invalid('malformed', 'not an object');
  if (!TYPES.has(msg.type)) throw new Invalid('malformed', `unknown type ${shown(msg.type)}`);
  str(msg, 'from', MAX_ID);
  if (msg.from.length === 0) throw new Invalid('malformed', 'empty from');
  num(msg, 'term', { int: true, min: 0 });
  if (msg.type !== 'params' && msg.type !== 'grad' && msg.payload !== undefined) {
    throw new Invalid('malformed', `${msg.type} carries a payload`);
  }
  switch (msg.type) {
    case 'hb':
      if (!ROLES.has(msg.role)) throw new Invalid('malformed', 'bad role');
      str(msg, 'leader', MAX_ID, { nullable: true });
      num(msg, 'version', { int: true, min: -1 });
      num(msg, 'step', { int: true, min: 0 });
      num(msg, 'hbMs', { min: 1 });
      num(msg, 'busyMs', { min: 0, optional: true });
      num(msg, 'sps', { min: 0 });
      str(msg, 'backend', 64, { nullable: true });
      str(msg, 'fallback', MAX_TEXT, { nullable: true });
      str(msg, 'hash', 16, { nullable: true });
      str(msg, 'halted', MAX_TEXT, { nullable: true });
      break;
    case 'halt':
      num(msg, 'step', { int: true, min: 0 });
      str(msg, 'reason', MAX_TEXT);
      break;
    case 'need':
      num(msg, 'version', { int: true, min: -1 });
      break;
    case 'params':
      num(msg, 'version', { int: true, min: 0 });
      num(msg, 'step', { int: true, min: 0 });
      if (typeof msg.go !== 'boolean') throw new Invalid('malformed', 'go is not a boolean');
      if (msg.members !== undefined) {
        if (!Array.isArray(msg.members) || msg.members.length > MAX_MEMBERS) throw new Invalid('malformed', 'bad members');
        for (const m of msg.members) if (typeof m !== 'string' || m.length > MAX_ID) throw new Invalid('malformed', 'bad member id');
      }
      settingsOf(msg);
      treeOf(msg);
      if (msg.base !== undefined) {
        num(msg, 'base', { int: true, min: 0 });
        if (msg.base >= msg.version) throw new Invalid('malformed', 'base is not below version');
        str(msg, 'hash', 16);
      }
      if (msg.excluded !== undefined) {
        if (!Array.isArray(msg.excluded) || msg.excluded.length > MAX_EXCLUDED) throw new Invalid('malformed', 'bad excluded');
        for (const e of msg.excluded) {
          if (e === null || typeof e !== 'object') throw new Invalid('malformed', 'bad excluded entry');
          str(e, 'id', MAX_ID);
          str(e, 'reason', MAX_TEXT);
        }
      }
      vector(msg, paramCount);
      break;
    case 'grad':
      num(msg, 'version', { int: true, min: 0 });
      num(msg, 'step', { int: true, min: 0 });
      num(msg, 'loss');
      num(msg, 'samples', { min: Number.MIN_VALUE });
      if (msg.ids !== undefined) idList(msg, 'ids', { min: 1 });
      if (msg.missing !== undefined) idList(msg, 'missing');
      vector(msg, paramCount);
      break;
    default:
      break;
  }
}
