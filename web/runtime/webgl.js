// webgl.js - the generic WebGL2 executor for sessions compiled with device
// 'webgl' (RLX_DEVICE_WEBGL).  C decides everything (textures, shader
// programs, passes, uniforms) and hands it over as one JSON plan
// (src/webgl/plan_json.c); this file creates the textures, programs and
// framebuffers once and draws the passes: each pass is one full-screen
// triangle into its output texture's framebuffer (viewport = the texture),
// one fragment per output texel.  Textures are R32F (one float per texel)
// or RGBA32F (4 per texel: the plan's "v4" values and "packed" matmul
// temps, src/webgl/gl_plan.h); readers of a v4 texture get its width
// negated in u_in<k>_w.  A "words" texture is RGBA32I: the i32 words of an
// input or param that matmul_q / gather_q read as GGUF-typed weights,
// uploaded bit for bit (setInput / setParam take an Int32Array, or any
// typed array, whose bytes are the words), read back as an Int32Array.  A
// pass may write an input or param texture in place (attention_kv's KV
// cache): it discards the fragments it keeps, so no texture is ever
// cleared.  A "layers" temp is an RGBA32F TEXTURE_2D_ARRAY
// whose framebuffer draws layer j from the shader's output j.  Where a training assignment's value texture is
// free after the run, the value and param textures swap places instead of
// a copy pass.  Outputs come back with a synchronous readPixels.  Nothing
// here knows about ops.  Works on the main thread
// (HTMLCanvasElement or OffscreenCanvas) and in a Worker (OffscreenCanvas).
//
// It implements the executor contract of ./executor.js, with the sync fast
// paths: runSync(feeds) and readParamSync(name) beside run() and readParam()
// (Promises); profile() / profileSync() time each pass.
//
//   import { createWebGlSession } from './runtime/webgl.js';
//   const s = g.compile([y], { device: 'webgl' });        // loader.js session
//   const gs = createWebGlSession(rlx, s);                  // or (exports, ptr); ready at once
//   gs.setParam('w', w);
//   const [y0] = gs.runSync({ x });                         // Float32Arrays; or await gs.run({ x })
//   gs.readParamSync('w'); gs.free();
//
// rlxModule: the loader's Rlx object, a WebAssembly.Instance or its exports;
// it must export memory and the rlx_webgl_* functions of
// src/web/exports_webgl.c.  sessionHandle: a loader Session or the session
// pointer.  opts.canvas: a canvas to draw with (default: a new
// OffscreenCanvas, else a new <canvas>); sessions given the same canvas
// share its context.  opts.gl: a WebGL2 context to use instead.  Inputs and
// params that the C session holds when this is called (training sessions
// preset "d_output" and "rlx.lr") are uploaded at creation.
// opts.sharedTextures: a Map of param name -> { texture, width, height,
// format } shared by several sessions of one context (the weights and KV
// cache of a language model's step plans, which attention_kv writes in
// place): a param found there draws with that texture as it is (its layout
// must be the same), one not found gets a texture that is uploaded once and
// added; free() leaves them to whoever made the Map.
//
// Failures that mean "use another backend" throw a WebGlUnavailableError
// whose `reason` is 'no-webgl2', 'no-float-render' (EXT_color_buffer_float
// missing or R32F not renderable), 'limits' (a texture larger than
// MAX_TEXTURE_SIZE) or 'context-lost' (the browser dropped the context:
// create the session again).
import { Executor } from './executor.js';
import { cstringAt } from './wasi.js';

/** WebGL2 cannot run this plan here; `reason` says why (see above). */
export class WebGlUnavailableError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = 'WebGlUnavailableError';
    this.reason = reason;
  }
}

const VERTEX_SHADER = `#version 300 es
// A triangle covering the viewport: (-1,-1), (3,-1), (-1,3).
void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
`;
// Linked programs per context, shared by the sessions drawing with it (a
// software rasterizer takes ~0.5 s to compile a long shader): fragment
// source -> { program, fs, users, linked }; the last user deletes it.
const PROGRAMS = new WeakMap();
const MAX_INPUTS = 6; // RLX_GL_MAX_INPUTS
const MAX_INTS = 48;  // RLX_GL_MAX_INTS
const MAX_FLOATS = 8; // RLX_GL_MAX_FLOATS

/** The attributes of every context the executor makes (the first getContext on a canvas fixes them). */
export const CONTEXT_ATTRIBUTES = Object.freeze({
  alpha: false, antialias: false, depth: false, stencil: false, premultipliedAlpha: false,
  preserveDrawingBuffer: false, powerPreference: 'high-performance',
});

function exportsOf(mod) {
  const e = mod?.exports?.memory ? mod.exports : mod?.instance?.exports ?? mod;
  if (!e || !e.memory || typeof e.rlx_webgl_plan !== 'function') {
    throw new TypeError('createWebGlSession: the module lacks memory or the rlx_webgl_* exports (src/web/exports_webgl.c)');
  }
  return e;
}

const cstring = (e, ptr) => cstringAt(e.memory, ptr);

function lastError(e) {
  const f = e.rlx_webgl_last_error ?? e.rlx_last_error;
  return f ? cstring(e, f()) : 'unknown error';
}

/** The plan document of a WebGL session, parsed. */
export function readWebGlPlan(rlxModule, sessionHandle) {
  const e = exportsOf(rlxModule);
  const ptr = typeof sessionHandle === 'number' ? sessionHandle : sessionHandle?.ptr;
  if (!ptr) throw new TypeError('readWebGlPlan: no session (pass a loader Session or a session pointer)');
  const json = e.rlx_webgl_plan(ptr) >>> 0;
  if (!json) throw new Error(`WebGL2 plan: ${lastError(e)}`);
  const plan = JSON.parse(cstring(e, json));
  if (plan.format !== 'rlx-webgl-plan' || plan.version !== 1) {
    throw new Error(`WebGL2 plan: unknown format ${plan.format} version ${plan.version}`);
  }
  return plan;
}

/** Creates the GPU objects of a session compiled for 'webgl' (synchronous). */
export function createWebGlSession(rlxModule, sessionHandle, opts = {}) {
  const e = exportsOf(rlxModule);
  const ptr = typeof sessionHandle === 'number' ? sessionHandle : sessionHandle?.ptr;
  const plan = readWebGlPlan(e, ptr);
  const session = new WebGlSession(plan, opts);
  try {
    session.uploadHostCopies(e, ptr);
  } catch (err) {
    session.free();
    throw err;
  }
  return session;
}

/** A texture's storage, as sharedTextures compares it. */
function textureFormat(t) {
  return t.layers > 1 ? `RGBA32F x ${t.layers}` : t.words ? 'RGBA32I' : t.packed || t.v4 ? 'RGBA32F' : 'R32F';
}

function numbers(list) {
  return Float32Array.from(list, Number); // "NaN", "Infinity", "-Infinity" too
}

export class WebGlSession extends Executor {
  constructor(plan, opts = {}) {
    super('webgl', {
      label: 'WebGL2 session',
      inputs: plan.inputs.map((x) => ({ name: x.name, count: x.count, dtype: x.dtype })),
      params: plan.params.map((p) => ({ name: p.name, count: p.count })),
      outputCount: plan.outputs.length,
    });
    this.plan = plan;
    this.lost = false;
    this.outputs = null;
    this.sharedTextures = opts.sharedTextures ?? null;
    this.shared = new Set(); // indexes of this.textures owned by sharedTextures
    const ownCanvas = !opts.gl && !opts.canvas;
    this.canvas = opts.gl?.canvas ?? opts.canvas ??
      (typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(1, 1) : globalThis.document?.createElement('canvas'));
    const gl = opts.gl ?? this.canvas?.getContext('webgl2', CONTEXT_ATTRIBUTES);
    if (!gl) throw new WebGlUnavailableError('no-webgl2', 'WebGL2 is not available here (getContext("webgl2") gave null)');
    this.gl = gl;
    this.ownContext = ownCanvas;
    if (gl.isContextLost()) throw new WebGlUnavailableError('context-lost', 'WebGL2: the context is lost');
    this.onLost = () => { this.lost = true; };
    this.canvas?.addEventListener?.('webglcontextlost', this.onLost);
    if (!gl.getExtension('EXT_color_buffer_float')) {
      this.free();
      throw new WebGlUnavailableError('no-float-render',
        'WebGL2: EXT_color_buffer_float is not supported here, so the executor cannot render into float textures');
    }
    this.maxTextureSize = gl.getParameter(gl.MAX_TEXTURE_SIZE);
    plan.textures.forEach((t, i) => {
      if (t.width > this.maxTextureSize || t.height > this.maxTextureSize) {
        this.free();
        throw new WebGlUnavailableError('limits', `WebGL2: texture ${i} (${t.count} values, ${t.role}) needs ` +
          `${t.width} x ${t.height} texels; MAX_TEXTURE_SIZE here is ${this.maxTextureSize}`);
      }
    });
    this.renderer = gl.getParameter(gl.RENDERER);
    try {
      this.build();
    } catch (err) {
      this.free();
      throw err;
    }
  }

  // ---- creation ----------------------------------------------------------
  build() {
    const { gl, plan } = this;
    // "layers": a TEXTURE_2D_ARRAY (matmul_block4's 4 outputs, one per layer)
    this.targets = plan.textures.map((t) => (t.layers > 1 ? gl.TEXTURE_2D_ARRAY : gl.TEXTURE_2D));
    const sharedAt = new Map(); // texture index -> a shared param's texture
    for (const p of plan.params) {
      const entry = this.sharedTextures?.get(p.name);
      if (!entry) continue;
      const t = plan.textures[p.texture], format = textureFormat(t);
      if (entry.width !== t.width || entry.height !== t.height || entry.format !== format) {
        throw new Error(`WebGL2 session: shared param '${p.name}' is a ${t.width} x ${t.height} ${format} texture here, ` +
          `${entry.width} x ${entry.height} ${entry.format} in the session that made it`);
      }
      sharedAt.set(p.texture, entry.texture);
    }
    this.textures = plan.textures.map((t, i) => {
      if (sharedAt.has(i)) {
        this.shared.add(i);
        return sharedAt.get(i);
      }
      const tex = gl.createTexture(), target = this.targets[i];
      gl.bindTexture(target, tex);
      if (t.layers > 1) gl.texStorage3D(target, 1, gl.RGBA32F, t.width, t.height, t.layers);
      else gl.texStorage2D(target, 1, t.words ? gl.RGBA32I : t.packed || t.v4 ? gl.RGBA32F : gl.R32F, t.width, t.height);
      gl.texParameteri(target, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
      gl.texParameteri(target, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
      gl.texParameteri(target, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      gl.texParameteri(target, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
      gl.bindTexture(target, null);
      return tex;
    });
    if (this.sharedTextures) {
      for (const p of plan.params) {
        if (this.shared.has(p.texture)) continue;
        const t = plan.textures[p.texture];
        this.sharedTextures.set(p.name, { texture: this.textures[p.texture], width: t.width, height: t.height, format: textureFormat(t) });
        this.shared.add(p.texture);
        this.uploadHere = (this.uploadHere ?? new Set()).add(p.texture); // this session uploads its host copy
      }
    }
    this.framebuffers = new Map(); // texture index -> WebGLFramebuffer
    plan.textures.forEach((t, i) => { if (t.data) this.upload(i, numbers(t.data)); });
    this.vao = gl.createVertexArray();
    this.buildPrograms();
    // Training assignments (value -> param copies at the end of the plan):
    // where the value's texture is a plain pooled value read by nothing after
    // the run, swapping the two textures after each run does the copy's work.
    const outputTex = new Set(plan.outputs.map((o) => o.texture));
    const fromUses = new Map();
    for (const a of plan.assignments ?? []) fromUses.set(a.from, (fromUses.get(a.from) ?? 0) + 1);
    this.swaps = (plan.assignments ?? []).filter((a) => a.from !== a.to && fromUses.get(a.from) === 1 &&
      !outputTex.has(a.from) && !this.shared.has(a.to) && plan.textures[a.from].role === 'value' && plan.textures[a.to].role === 'param' &&
      plan.textures[a.from].width === plan.textures[a.to].width && plan.textures[a.from].height === plan.textures[a.to].height &&
      !plan.textures[a.from].v4 === !plan.textures[a.to].v4);
    const swapped = new Set(this.swaps.map((a) => `${a.from}>${a.to}`));
    this.passes = plan.passes.filter((p) => !(p.op === 'assign' && swapped.has(`${p.inputs[0]}>${p.output}`))).map((p) => {
      const ints = new Int32Array(MAX_INTS);
      ints.set(p.ints);
      const floats = new Float32Array(MAX_FLOATS);
      floats.set(numbers(p.floats));
      const out = plan.textures[p.output];
      this.framebuffer(p.output);
      return {
        program: this.programs[p.program],
        op: p.op,
        node: p.node ?? -1,
        output: p.output,
        width: out.width, height: out.height, count: out.count,
        inputs: p.inputs.slice(),
        widths: p.inputs.map((t) => (plan.textures[t].v4 ? -plan.textures[t].width : plan.textures[t].width)),
        ints, floats,
      };
    });
    for (const o of plan.outputs) this.framebuffer(o.texture);
    for (const a of this.swaps) this.framebuffer(a.to);
  }

  /** After a run: the assigned values' textures become their params' (and back). */
  swapAssigned() {
    const { textures, framebuffers } = this;
    for (const { from, to } of this.swaps) {
      [textures[from], textures[to]] = [textures[to], textures[from]];
      const f = framebuffers.get(from);
      framebuffers.set(from, framebuffers.get(to));
      framebuffers.set(to, f);
    }
  }

  buildPrograms() {
    const { gl, plan } = this;
    const vs = this.vertexShader = gl.createShader(gl.VERTEX_SHADER);
    gl.shaderSource(vs, VERTEX_SHADER);
    gl.compileShader(vs);
    let cache = PROGRAMS.get(gl);
    if (!cache) PROGRAMS.set(gl, cache = new Map());
    // Compile and link everything first, check after: drivers may work in parallel.
    this.programs = plan.programs.map((p) => {
      let entry = cache.get(p.source);
      if (!entry) {
        const fs = gl.createShader(gl.FRAGMENT_SHADER);
        gl.shaderSource(fs, p.source);
        gl.compileShader(fs);
        const program = gl.createProgram();
        gl.attachShader(program, vs);
        gl.attachShader(program, fs);
        gl.linkProgram(program);
        entry = { program, fs, users: 0, linked: false, source: p.source };
        cache.set(p.source, entry);
      }
      entry.users++;
      return { program: entry.program, fs: entry.fs, entry, info: p };
    });
    if (!gl.getShaderParameter(vs, gl.COMPILE_STATUS)) {
      throw new Error(`WebGL2: the vertex shader does not compile: ${gl.getShaderInfoLog(vs)}`);
    }
    for (const p of this.programs) {
      if (!p.entry.linked && !gl.getProgramParameter(p.program, gl.LINK_STATUS)) {
        const log = gl.getShaderInfoLog(p.fs) || gl.getProgramInfoLog(p.program);
        const defines = p.info.defines.map(([n, v]) => `${n}=${v}`).join(' ');
        throw new Error(`WebGL2: shader ${p.info.shader}${defines ? ` (${defines})` : ''} does not compile: ${log}`);
      }
      p.entry.linked = true;
      const loc = (name) => gl.getUniformLocation(p.program, name);
      p.u_i = loc('u_i');
      p.u_f = loc('u_f');
      p.u_out_w = loc('u_out_w');
      p.u_out_n = loc('u_out_n');
      p.u_in_w = [];
      gl.useProgram(p.program);
      for (let k = 0; k < MAX_INPUTS; k++) {
        const sampler = loc(`u_in${k}`);
        if (sampler) gl.uniform1i(sampler, k);
        p.u_in_w.push(loc(`u_in${k}_w`));
      }
    }
    gl.useProgram(null);
  }

  framebuffer(texIndex) {
    let fbo = this.framebuffers.get(texIndex);
    if (fbo) return fbo;
    const { gl } = this;
    fbo = gl.createFramebuffer();
    gl.bindFramebuffer(gl.FRAMEBUFFER, fbo);
    const layers = this.plan.textures[texIndex].layers ?? 0;
    if (layers > 1) { // layer j <- the shader's output j
      const drawn = [];
      for (let j = 0; j < layers; j++) {
        gl.framebufferTextureLayer(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + j, this.textures[texIndex], 0, j);
        drawn.push(gl.COLOR_ATTACHMENT0 + j);
      }
      gl.drawBuffers(drawn);
    } else {
      gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, this.textures[texIndex], 0);
    }
    const status = gl.checkFramebufferStatus(gl.FRAMEBUFFER);
    if (status !== gl.FRAMEBUFFER_COMPLETE) {
      gl.bindFramebuffer(gl.FRAMEBUFFER, null);
      gl.deleteFramebuffer(fbo);
      throw new WebGlUnavailableError('no-float-render',
        `WebGL2: an ${this.plan.textures[texIndex].packed || this.plan.textures[texIndex].v4 ? 'RGBA32F' : 'R32F'} ` +
        'texture cannot be rendered to here ' +
        `(framebuffer status 0x${status.toString(16)})`);
    }
    if (this.readFormat === undefined && !this.plan.textures[texIndex].packed && !this.plan.textures[texIndex].v4 &&
      !this.plan.textures[texIndex].words) {
      // RED/FLOAT reads need the implementation's blessing; RGBA/FLOAT always works.
      const red = gl.getParameter(gl.IMPLEMENTATION_COLOR_READ_FORMAT) === gl.RED &&
        gl.getParameter(gl.IMPLEMENTATION_COLOR_READ_TYPE) === gl.FLOAT;
      this.readFormat = red ? gl.RED : gl.RGBA;
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    this.framebuffers.set(texIndex, fbo);
    return fbo;
  }

  /** Inputs set and params held by the C session, uploaded once at creation. */
  uploadHostCopies(e, ptr) {
    const { plan } = this;
    plan.inputs.forEach((inp, i) => {
      const at = e.rlx_webgl_input_data?.(ptr, i) >>> 0;
      if (!at) return;
      const data = inp.dtype === 'i32' ? new Int32Array(e.memory.buffer, at, inp.count) : new Float32Array(e.memory.buffer, at, inp.count);
      this.setInput(inp.name, data);
    });
    plan.params.forEach((p, i) => {
      if (this.shared.has(p.texture) && !this.uploadHere?.has(p.texture)) return; // uploaded by the session that made it
      const at = e.rlx_webgl_param_data?.(ptr, i) >>> 0;
      if (at) this.upload(p.texture, new Float32Array(e.memory.buffer, at, p.count)); // words: the same bytes
    });
  }

  // ---- data in and out ---------------------------------------------------
  check() {
    if (!this.gl) throw new Error('WebGL2 session already freed');
    if (this.lost || this.gl.isContextLost()) {
      this.lost = true;
      throw new WebGlUnavailableError('context-lost',
        'WebGL2: the context was lost (the browser reclaimed the GPU); create the session again');
    }
  }

  upload(texIndex, data) {
    const { gl } = this;
    const t = this.plan.textures[texIndex];
    if (t.packed) throw new Error(`WebGL2 session: texture ${texIndex} is a packed temp; it cannot be uploaded`);
    if (t.words || t.v4) { // 4 per texel (words: the bytes of data as i32), the last texels padded with zeros
      const values = !t.words || data instanceof Int32Array ? data : ArrayBuffer.isView(data)
        ? new Int32Array(data.buffer, data.byteOffset, data.byteLength >> 2) : Int32Array.from(data);
      const all = new (t.words ? Int32Array : Float32Array)(4 * t.width * t.height);
      all.set(values.length === t.count ? values : values.subarray(0, t.count));
      gl.bindTexture(gl.TEXTURE_2D, this.textures[texIndex]);
      gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
      gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, t.width, t.height, t.words ? gl.RGBA_INTEGER : gl.RGBA,
        t.words ? gl.INT : gl.FLOAT, all, 0);
      gl.bindTexture(gl.TEXTURE_2D, null);
      return;
    }
    const rows = Math.floor(t.count / t.width), rest = t.count - rows * t.width;
    gl.bindTexture(gl.TEXTURE_2D, this.textures[texIndex]);
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    if (rows) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, t.width, rows, gl.RED, gl.FLOAT, data, 0);
    if (rest) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, rows, rest, 1, gl.RED, gl.FLOAT, data, rows * t.width);
    gl.bindTexture(gl.TEXTURE_2D, null);
  }

  /** The first `count` values of a texture, as a new Float32Array. */
  read(texIndex) {
    const { gl } = this;
    const t = this.plan.textures[texIndex];
    gl.bindFramebuffer(gl.READ_FRAMEBUFFER, this.framebuffer(texIndex));
    gl.pixelStorei(gl.PACK_ALIGNMENT, 1);
    let out;
    if (t.words) {
      out = new Int32Array(t.width * t.height * 4);
      gl.readPixels(0, 0, t.width, t.height, gl.RGBA_INTEGER, gl.INT, out);
      out = out.length === t.count ? out : out.slice(0, t.count);
    } else if (t.packed || t.v4) {
      out = new Float32Array(t.width * t.height * 4);
      gl.readPixels(0, 0, t.width, t.height, gl.RGBA, gl.FLOAT, out);
      if (t.v4) out = out.length === t.count ? out : out.slice(0, t.count);
    } else if (this.readFormat === gl.RED) {
      const buf = new Float32Array(t.width * t.height);
      gl.readPixels(0, 0, t.width, t.height, gl.RED, gl.FLOAT, buf);
      out = buf.length === t.count ? buf : buf.slice(0, t.count);
    } else {
      const buf = new Float32Array(t.width * t.height * 4);
      gl.readPixels(0, 0, t.width, t.height, gl.RGBA, gl.FLOAT, buf);
      out = new Float32Array(t.count);
      for (let i = 0; i < t.count; i++) out[i] = buf[4 * i];
    }
    gl.bindFramebuffer(gl.READ_FRAMEBUFFER, null);
    return out;
  }

  _checkLive() {
    this.check();
  }

  /** i32 values go up as float values of the integers (as the C session stores them), words as they are. */
  _writeInput(i, values) {
    const tex = this.plan.inputs[i].texture;
    this.upload(tex, values instanceof Int32Array && !this.plan.textures[tex].words ? Float32Array.from(values) : values);
  }

  /** A words param takes its bytes as they are (an Int32Array, or any typed array); others as float32 values. */
  setParam(name, data) {
    const i = this._index(this.params, 'param', name);
    const tex = this.plan.params[i].texture;
    if (!this.plan.textures[tex].words) return super.setParam(name, data);
    this._checkLive();
    this._length('param', this.params[i], ArrayBuffer.isView(data) && !(data instanceof Int32Array)
      ? { length: data.byteLength >> 2 } : data);
    this.upload(tex, data);
  }

  _writeParam(i, values) {
    this.upload(this.plan.params[i].texture, values);
  }

  /** The param's current values, synchronously (readParam is the Promise form). */
  readParamSync(name) {
    this.check();
    return this.read(this.plan.params[this._index(this.params, 'param', name)].texture);
  }

  /** @deprecated readParamSync (the contract's name). */
  getParam(name) {
    return this.readParamSync(name);
  }

  // ---- running -----------------------------------------------------------
  /**
   * Feeds, draws every pass, then reads the outputs back: an array of
   * Float32Arrays (run() is the Promise form).  With options.read false
   * nothing is read back and it returns null (a language model's prompt
   * steps before the last: the GPU goes on without a round trip).
   */
  runSync(feeds, options = undefined) {
    this.check();
    this.feedAll(feeds);
    this.beginPasses();
    for (const p of this.passes) this.drawPass(p);
    this.endPasses();
    this.swapAssigned();
    if (options?.read === false) {
      this.outputs = null;
      return null;
    }
    this.outputs = this.plan.outputs.map((o) => this.read(o.texture));
    if (this.lost || this.gl.isContextLost()) this.check(); // lost while drawing: the values are garbage
    return this.outputs;
  }

  run(feeds, options = undefined) {
    try {
      return Promise.resolve(this.runSync(feeds, options));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Draws every pass `repeat` times in a row, waiting after each pass (a
   * one-texel readback), and returns the executor contract's rows
   * [{ index, op, node, key, ms }] in plan order, ms per draw (key: the
   * shader), plus { pass, shader, texels, defines }: where a step spends its
   * time.  Changes the same state as a run (passes are idempotent); outputs
   * are not read.
   */
  profileSync({ repeat = 1 } = {}) {
    const { gl } = this;
    const px = new Float32Array(4);
    const sync = () => gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, px);
    this.beginPasses();
    const rows = this.passes.map((p, i) => {
      const t0 = performance.now();
      for (let r = 0; r < repeat; r++) this.drawPass(p);
      sync();
      const ms = (performance.now() - t0) / repeat;
      const shader = p.program.info.shader;
      return { index: i, op: p.op, node: p.node, key: shader, ms, pass: i, shader, texels: p.width * p.height,
        defines: p.program.info.defines };
    });
    this.endPasses();
    return rows;
  }

  profile(opts) {
    try {
      return Promise.resolve(this.profileSync(opts));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** @deprecated profileSync({ repeat }) (the contract's rows, which keep these fields). */
  profilePasses(repeat = 1) {
    return this.profileSync({ repeat });
  }

  beginPasses() {
    this.check();
    const { gl, plan } = this;
    plan.inputs.forEach((inp, i) => {
      if (inp.needed && !this.inputSet[i]) throw new Error(`WebGL2 session: input '${inp.name}' has not been set`);
    });
    for (const cap of [gl.BLEND, gl.DEPTH_TEST, gl.STENCIL_TEST, gl.SCISSOR_TEST, gl.CULL_FACE, gl.DITHER]) gl.disable(cap);
    gl.colorMask(true, true, true, true);
    gl.bindVertexArray(this.vao);
    this.current = null;
    this.unitArray = new Array(MAX_INPUTS).fill(true); // unknown: unbind both kinds on first use
  }

  drawPass(p) {
    const { gl } = this;
    const prog = p.program;
    if (prog !== this.current) {
      gl.useProgram(prog.program);
      this.current = prog;
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, this.framebuffers.get(p.output));
    gl.viewport(0, 0, p.width, p.height);
    for (let k = 0; k < p.inputs.length; k++) {
      gl.activeTexture(gl.TEXTURE0 + k);
      const target = this.targets[p.inputs[k]];
      gl.bindTexture(target, this.textures[p.inputs[k]]);
      // one texture per unit: a stale binding of the other kind could be a feedback loop
      const other = target === gl.TEXTURE_2D ? gl.TEXTURE_2D_ARRAY : gl.TEXTURE_2D;
      if (this.unitArray[k] !== (target === gl.TEXTURE_2D_ARRAY)) {
        gl.bindTexture(other, null);
        this.unitArray[k] = target === gl.TEXTURE_2D_ARRAY;
      }
      if (prog.u_in_w[k]) gl.uniform1i(prog.u_in_w[k], p.widths[k]);
    }
    if (prog.u_i) gl.uniform1iv(prog.u_i, p.ints);
    if (prog.u_f) gl.uniform1fv(prog.u_f, p.floats);
    if (prog.u_out_w) gl.uniform1i(prog.u_out_w, p.width);
    if (prog.u_out_n) gl.uniform1i(prog.u_out_n, p.count);
    gl.drawArrays(gl.TRIANGLES, 0, 3);
  }

  endPasses() {
    const { gl } = this;
    for (let k = 0; k < MAX_INPUTS; k++) {
      gl.activeTexture(gl.TEXTURE0 + k);
      gl.bindTexture(gl.TEXTURE_2D, null);
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, null);
    }
    gl.activeTexture(gl.TEXTURE0);
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.bindVertexArray(null);
    gl.useProgram(null);
    this.current = null;
  }

  outputShape(i) { return this.plan.outputs[i]?.shape.slice(); }
  get passCount() { return this.plan.passes.length; }

  /** Deletes every texture, framebuffer and program (a program once no other session of the context draws with it; safe to call twice). */
  free() {
    const { gl } = this;
    if (!gl) return;
    this.canvas?.removeEventListener?.('webglcontextlost', this.onLost);
    if (!gl.isContextLost()) {
      for (const fbo of this.framebuffers?.values() ?? []) gl.deleteFramebuffer(fbo);
      (this.textures ?? []).forEach((tex, i) => { if (!this.shared.has(i)) gl.deleteTexture(tex); });
      const cache = PROGRAMS.get(gl);
      for (const p of this.programs ?? []) {
        if (--p.entry.users > 0) continue; // another session of this context draws with it
        gl.deleteProgram(p.program);
        gl.deleteShader(p.fs);
        cache?.delete(p.entry.source);
      }
      if (this.vertexShader) gl.deleteShader(this.vertexShader);
      if (this.vao) gl.deleteVertexArray(this.vao);
      // A context this session made for itself goes too (browsers cap live contexts).
      if (this.ownContext) gl.getExtension('WEBGL_lose_context')?.loseContext();
    }
    this.gl = null;
    this.textures = this.programs = this.passes = this.outputs = null;
    this.framebuffers = null;
  }
}
