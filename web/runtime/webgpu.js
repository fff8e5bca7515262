// webgpu.js - the generic WebGPU executor for sessions compiled with
// device 'webgpu' (RLX_DEVICE_WEBGPU).  C decides everything (buffers,
// pipelines, bind groups, uniforms, dispatch sizes) and hands it over as one
// JSON plan (src/webgpu/plan_json.c); this file creates the GPU objects once
// and replays the dispatches: one command encoder and one compute pass per
// run, outputs copied into one staging buffer and read back with mapAsync.
// Nothing here knows about ops.  Works in a page, a Worker and Node (Dawn,
// npm `webgpu`: pass its GPU or a device).
//
// It implements the executor contract of ./executor.js (prepare, run(feeds)
// -> Promise of the outputs, readParam -> Promise, profile, free; no sync
// path: reading back from a GPU is asynchronous).
//
//   import { createWebGpuSession } from './runtime/webgpu.js';
//   const s = g.compile([y], { device: 'webgpu' });      // loader.js session
//   const gs = await createWebGpuSession(rlx, s);          // or (exports, ptr, device); = new WebGpuSession(...).prepare()
//   gs.setParam('w', w);
//   const [y0] = await gs.run({ x });                       // Float32Arrays; gs.output(0) too
//   await gs.readParam('w'); gs.free();
//
// rlxModule: the loader's Rlx object, a WebAssembly.Instance or its exports;
// it must export memory and the rlx_webgpu_* functions of
// src/web/exports_webgpu.c.  sessionHandle: a loader Session or the session
// pointer.  device: a GPUDevice, a GPU (navigator.gpu-like) or nothing
// (navigator.gpu, one shared device).  options.sharedParams: a Map of param
// name -> GPUBuffer shared by several sessions of one device (the weights
// and KV cache of a language model's step plans): a param found there uses
// that buffer as it is, one not found gets a buffer that is uploaded once
// and added; free() leaves them to whoever made the Map.  Failures that
// mean "use another backend" (no WebGPU, no adapter, a limit the plan
// exceeds, a lost device) throw a WebGpuUnavailableError whose `reason`
// says which.
import { Executor } from './executor.js';
import { cstringAt, unshared } from './wasi.js';

/** WebGPU cannot run this plan here; `reason`: 'no-webgpu' | 'no-adapter' | 'limits' | 'device-lost'. */
export class WebGpuUnavailableError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = 'WebGpuUnavailableError';
    this.reason = reason;
  }
}

const round16 = (n) => Math.max(16, Math.ceil(n / 16) * 16);

// Per device: shader modules by source and pipelines by key + source.
const deviceCaches = new WeakMap();
function cacheOf(device) {
  let c = deviceCaches.get(device);
  if (!c) deviceCaches.set(device, (c = { modules: new Map(), pipelines: new Map() }));
  return c;
}

/** Pipelines and shader modules cached for a device (shared by its sessions). */
export function webGpuCacheStats(device) {
  const c = deviceCaches.get(device);
  return { pipelines: c ? c.pipelines.size : 0, modules: c ? c.modules.size : 0 };
}

let sharedDevice = null; // Promise<GPUDevice> for sessions given no device
let sharedDeviceValue = null;
function sharedDeviceLost(device) {
  if (device === sharedDeviceValue) { sharedDevice = null; sharedDeviceValue = null; } // the next session asks again
}

async function requestDevice(gpu, needs) {
  if (!gpu) {
    throw new WebGpuUnavailableError('no-webgpu', 'WebGPU is not available here (navigator.gpu is missing)');
  }
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new WebGpuUnavailableError('no-adapter', 'WebGPU: no GPU adapter is available');
  // Ask for the adapter's limits where the defaults are too small for the plan.
  const requiredLimits = {};
  for (const [name, value] of Object.entries(needs)) {
    if (value > adapter.limits[name]) {
      throw new WebGpuUnavailableError('limits', `WebGPU: the plan needs ${name} = ${value}, the adapter allows ${adapter.limits[name]}`);
    }
    requiredLimits[name] = adapter.limits[name];
  }
  const device = await adapter.requestDevice({ requiredLimits });
  return device;
}

// The limits a plan needs (compared with the device's).
function planNeeds(plan) {
  let maxBuffer = 16, maxBinding = 16, maxStorage = 1;
  for (const b of plan.buffers) maxBuffer = Math.max(maxBuffer, round16(b.size));
  for (const st of plan.steps) for (const [, , size] of st.bindings || []) maxBinding = Math.max(maxBinding, round16(size));
  for (const p of plan.pipelines) maxStorage = Math.max(maxStorage, p.bindings.length);
  return { maxBufferSize: maxBuffer, maxStorageBufferBindingSize: maxBinding, maxStorageBuffersPerShaderStage: maxStorage };
}

function checkLimits(device, needs) {
  for (const [name, value] of Object.entries(needs)) {
    if (value > device.limits[name]) {
      throw new WebGpuUnavailableError('limits', `WebGPU: the plan needs ${name} = ${value}, the device allows ${device.limits[name]}`);
    }
  }
}

function exportsOf(mod) {
  const e = mod?.exports?.memory ? mod.exports : mod?.instance?.exports ?? mod;
  if (!e || !e.memory || typeof e.rlx_webgpu_plan !== 'function') {
    throw new TypeError('createWebGpuSession: the module lacks memory or the rlx_webgpu_* exports (src/web/exports_webgpu.c)');
  }
  return e;
}

const cstring = (e, ptr) => cstringAt(e.memory, ptr);

/** The plan document of a WebGPU session, parsed (throws when it has none or it cannot run here). */
export function readWebGpuPlan(rlxModule, sessionHandle) {
  const e = exportsOf(rlxModule);
  const s = typeof sessionHandle === 'number' ? sessionHandle : (sessionHandle?.ptr ?? sessionHandle?.handle);
  if (!s) throw new TypeError('createWebGpuSession: no session handle');
  const ptr = e.rlx_webgpu_plan(s) >>> 0;
  if (!ptr) {
    const why = e.rlx_webgpu_last_error ? cstring(e, e.rlx_webgpu_last_error()) : '';
    throw new Error(`createWebGpuSession: not a WebGPU session${why ? `: ${why}` : ''} (compile with device 'webgpu')`);
  }
  const len = e.rlx_webgpu_plan_len(s) >>> 0;
  const plan = JSON.parse(new TextDecoder().decode(unshared(new Uint8Array(e.memory.buffer, ptr, len))));
  if (plan.format !== 'rlx-webgpu-plan' || plan.version !== 1) throw new Error('createWebGpuSession: unknown plan format');
  const host = plan.steps.find((st) => st.host);
  if (host) throw new WebGpuUnavailableError('host-steps', `WebGPU: step ${host.op} (node ${host.node}) needs host execution, which this executor does not do`);
  return plan;
}

/**
 * Creates the GPU objects of a WebGPU session's plan.  Resolves to a
 * prepared WebGpuSession; rejects with WebGpuUnavailableError when WebGPU
 * cannot run it here, or an Error for a malformed plan.
 */
export async function createWebGpuSession(rlxModule, sessionHandle, device, options = undefined) {
  const session = new WebGpuSession(rlxModule, sessionHandle, device, options);
  await session.prepare();
  return session;
}

/**
 * The WebGPU executor (the contract of ./executor.js).  Made synchronously
 * from the plan; prepare() (or the first run / readParam) obtains the device
 * and creates the GPU objects.  What is fed before that is kept and written
 * once they exist.  run() and readParam() are Promises; there is no sync path.
 */
export class WebGpuSession extends Executor {
  constructor(rlxModule, sessionHandle, device, options = undefined) {
    const e = exportsOf(rlxModule);
    const s = typeof sessionHandle === 'number' ? sessionHandle : (sessionHandle?.ptr ?? sessionHandle?.handle);
    const plan = readWebGpuPlan(e, s);
    super('webgpu', {
      label: 'WebGPU session',
      inputs: plan.inputs.map((x) => ({ name: x.name, count: x.size / 4, dtype: x.dtype })),
      params: plan.params.map((p) => ({ name: p.name, count: p.size / 4 })),
      outputCount: plan.outputs.length,
    });
    this.plan = plan;
    this.exports = e;
    this.handle = s;
    this.deviceSource = device;
    this.sharedParams = options?.sharedParams ?? null;
    this.shared = new Set(); // indexes of this.buffers owned by sharedParams
    this.device = null;
    this.lost = null;
    this.freed = false;
    this.pending = new Map(); // what was fed before the GPU objects existed
    this.ready = false;       // the GPU objects exist
    this.prepared = null;
    this.queue = Promise.resolve();
  }

  /** Obtains the device and creates the GPU objects (once): Promise<this>. */
  prepare() {
    if (!this.prepared) {
      this.prepared = this.create().then(() => this, (err) => {
        this.prepared = null;
        throw err;
      });
    }
    return this.prepared;
  }

  async create() {
    if (this.freed) throw new Error('WebGPU session already freed');
    const needs = planNeeds(this.plan);
    let device = this.deviceSource;
    if (device && typeof device.createBuffer !== 'function') {
      device = await requestDevice(device, needs); // a GPU object
    } else if (!device) {
      if (!sharedDevice) {
        sharedDevice = requestDevice(globalThis.navigator?.gpu, needs);
        sharedDevice.catch(() => { sharedDevice = null; });
      }
      device = sharedDeviceValue = await sharedDevice;
    }
    checkLimits(device, needs);
    this.device = device;
    device.lost?.then((info) => { this.lost = info; sharedDeviceLost(device); });
    try {
      await this.init();
    } catch (err) {
      this.destroyOwned();
      this.staging?.destroy();
      this.buffers = null;
      this.staging = null;
      this.device = null;
      throw err;
    }
    if (this.freed) { // freed while it was being made
      this.destroyOwned();
      this.staging.destroy();
      this.buffers = [];
      return;
    }
    for (const [key, values] of this.pending) {
      const i = Number(key.slice(1));
      this._upload(key[0] === 'i' ? this.plan.inputs[i].buffer : this.plan.params[i].buffer, values);
    }
    this.pending.clear();
    this.ready = true;
  }

  // Creates buffers, uploads constants / params / preset inputs and uniforms,
  // builds pipelines and bind groups.
  async init() {
    const { device, plan, exports: e } = this;
    const U = GPUBufferUsage;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const sharedAt = new Map(); // buffer index -> a shared param's buffer
    plan.params.forEach((p) => {
      const b = this.sharedParams?.get(p.name);
      if (b) sharedAt.set(p.buffer, b);
    });
    this.buffers = plan.buffers.map((b, i) => sharedAt.get(i) ?? device.createBuffer({
      label: `rlx ${b.kind}${b.index ?? ''} (${i})`,
      size: round16(b.size),
      usage: b.kind === 'uniform' ? U.UNIFORM | U.COPY_DST : U.STORAGE | U.COPY_SRC | U.COPY_DST,
    }));
    for (const i of sharedAt.keys()) this.shared.add(i);
    const mem = () => e.memory.buffer;
    const upload = (buffer, ptr, bytes) => {
      const data = new Uint8Array(mem(), ptr, bytes).slice();
      device.queue.writeBuffer(buffer, 0, data);
    };
    plan.constants.forEach((c, i) => {
      const p = e.rlx_webgpu_constant_data(this.handle, i) >>> 0;
      if (p) upload(this.buffers[c.buffer], p, c.size);
    });
    plan.params.forEach((p, i) => {
      if (sharedAt.has(p.buffer)) return; // uploaded by the session that made it
      const at = e.rlx_webgpu_param_data(this.handle, i) >>> 0;
      if (at) upload(this.buffers[p.buffer], at, p.size);
      if (this.sharedParams) {
        this.sharedParams.set(p.name, this.buffers[p.buffer]);
        this.shared.add(p.buffer);
      }
    });
    plan.inputs.forEach((inp, i) => {
      const at = e.rlx_webgpu_input_data(this.handle, i) >>> 0;
      if (at) { upload(this.buffers[inp.buffer], at, inp.size); this.inputSet[i] = true; }
    });
    const ub = plan.buffers.findIndex((b) => b.kind === 'uniform');
    const words = new Uint32Array(round16(plan.buffers[ub].size) / 4);
    for (const st of plan.steps) words.set(st.words, st.uniform / 4);
    device.queue.writeBuffer(this.buffers[ub], 0, words);
    this.uniformBuffer = this.buffers[ub];

    // Pipelines, cached per device by key and source.
    const cache = cacheOf(device);
    this.pipelines = await Promise.all(plan.pipelines.map(async (p) => {
      const code = plan.shaders[p.shader];
      const key = `${p.key}\u0000${code}`;
      let entry = cache.pipelines.get(key);
      if (!entry) {
        entry = this.makePipeline(p, code, cache);
        cache.pipelines.set(key, entry);
        entry.catch(() => cache.pipelines.delete(key));
      }
      return entry;
    }));
    // Bind groups, one per dispatch.
    const ubSize = plan.uniform_binding_size;
    this.bindGroups = plan.steps.map((st, k) => {
      const pipe = this.pipelines[st.pipeline];
      const entries = st.bindings.map(([b, offset, size], i) => ({
        binding: i, resource: { buffer: this.buffers[b], offset, size: Math.min(round16(size), round16(plan.buffers[b].size) - offset) },
      }));
      entries.push({ binding: st.bindings.length, resource: { buffer: this.uniformBuffer, offset: st.uniform, size: ubSize } });
      return device.createBindGroup({ label: `rlx ${st.op} node ${st.node} #${k}`, layout: pipe.layout, entries });
    });
    // One staging buffer for all outputs.
    let at = 0;
    this.outputSlots = plan.outputs.map((o) => { const slot = at; at += Math.ceil(o.value[2] / 4) * 4; return slot; });
    this.staging = device.createBuffer({ label: 'rlx outputs', size: round16(at), usage: U.MAP_READ | U.COPY_DST });
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();
    if (oom) throw new WebGpuUnavailableError('limits', `WebGPU: out of memory creating the session: ${oom.message}`);
    if (validation) throw new Error(`WebGPU: creating the session failed: ${validation.message}`);
    this.checkLost();
  }

  async makePipeline(p, code, cache) {
    const { device } = this;
    let module = cache.modules.get(code);
    if (!module) {
      module = device.createShaderModule({ label: p.shader, code });
      cache.modules.set(code, module);
    }
    const entries = p.bindings.map((access, i) => ({
      binding: i, visibility: GPUShaderStage.COMPUTE,
      buffer: { type: access === 'write' ? 'storage' : 'read-only-storage' },
    }));
    entries.push({ binding: p.bindings.length, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } });
    device.pushErrorScope('validation');
    const layout = device.createBindGroupLayout({ label: p.key, entries });
    let pipeline;
    try {
      pipeline = await device.createComputePipelineAsync({
        label: p.key,
        layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: 'main', constants: p.overrides },
      });
    } catch (err) {
      await device.popErrorScope();
      const info = await module.getCompilationInfo?.();
      const msgs = (info?.messages ?? []).map((m) => `${p.shader}.wgsl:${m.lineNum}:${m.linePos} ${m.type}: ${m.message}`).join('\n');
      throw new Error(`WebGPU: pipeline ${p.key} failed: ${err.message}${msgs ? `\n${msgs}` : ''}`);
    }
    const err = await device.popErrorScope();
    if (err) throw new Error(`WebGPU: pipeline ${p.key} failed: ${err.message}`);
    return { pipeline, layout };
  }

  checkLost() {
    if (this.lost) throw new WebGpuUnavailableError('device-lost', `WebGPU device lost: ${this.lost.message || this.lost.reason}`);
    if (this.freed) throw new Error('WebGPU session already freed');
  }

  _checkLive() {
    this.checkLost();
  }

  // Until prepare() is done, what is fed is also kept (a copy) and written
  // again once the GPU objects exist (a failed creation loses nothing).
  _writeInput(i, values) {
    if (!this.ready) this.pending.set(`i${i}`, values.slice());
    if (this.buffers) this._upload(this.plan.inputs[i].buffer, values);
  }

  _writeParam(i, values) {
    if (!this.ready) this.pending.set(`p${i}`, values.slice());
    if (this.buffers) this._upload(this.plan.params[i].buffer, values);
  }

  _upload(buffer, values) {
    this.device.queue.writeBuffer(this.buffers[buffer], 0, values.buffer, values.byteOffset, values.byteLength);
  }

  /** Reads param `name` back from the GPU: Promise<Float32Array>. */
  readParam(name) {
    let p;
    try {
      p = this.plan.params[this._index(this.params, 'param', name)];
    } catch (err) {
      return Promise.reject(err);
    }
    return this.enqueue(async () => {
      await this.prepare();
      this.checkLost();
      const { device } = this;
      const staging = device.createBuffer({ size: round16(p.size), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(this.buffers[p.buffer], 0, staging, 0, p.size);
      device.queue.submit([enc.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const out = new Float32Array(staging.getMappedRange(0, round16(p.size)).slice(0, p.size));
      staging.unmap();
      staging.destroy();
      return out;
    });
  }

  /** @deprecated readParam (the contract's name). */
  getParam(name) {
    return this.readParam(name);
  }

  // Runs fn after every earlier run/readback (the staging buffer is shared).
  enqueue(fn) {
    const next = this.queue.then(() => { this.checkLost(); return fn(); });
    this.queue = next.catch(() => {});
    return next;
  }

  /**
   * One run: feeds first, then every dispatch, the training assignments and
   * the output readback.  Resolves to the outputs (Float32Arrays); with
   * options.read false nothing is read back and it resolves to null once
   * the run is submitted (a language model's prompt steps before the last:
   * the next submit runs after it on the queue, without a round trip).
   * options.encode(encoder), when given, adds commands after the
   * dispatches to the run's command buffer (see gpuValue()).
   */
  run(feeds, options = undefined) {
    const read = options?.read !== false;
    const encode = options?.encode;
    try {
      this.feedAll(feeds);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.enqueue(async () => {
      await this.prepare();
      this.checkLost();
      const { device, plan } = this;
      plan.inputs.forEach((inp, i) => {
        if (inp.needed && !this.inputSet[i]) throw new Error(`run: input '${inp.name}' has not been set`);
      });
      // The first run's commands are validated; later runs encode the same
      // commands on the same buffers, so they skip the error scope (its pop
      // is a round trip to the device per run: a decoded token's cost).
      const validate = !this.validated;
      if (validate) device.pushErrorScope('validation');
      const enc = device.createCommandEncoder({ label: 'rlx run' });
      const pass = enc.beginComputePass({ label: 'rlx dispatches' });
      let current = -1; // a pipeline stays set across its consecutive dispatches (each call costs host time)
      plan.steps.forEach((st, k) => {
        if (st.pipeline !== current) pass.setPipeline(this.pipelines[(current = st.pipeline)].pipeline);
        pass.setBindGroup(0, this.bindGroups[k]);
        pass.dispatchWorkgroups(st.groups[0], st.groups[1], st.groups[2]);
      });
      pass.end();
      for (const a of plan.assign) {
        const [b, offset, size] = a.from;
        if (b !== a.buffer || offset !== 0) enc.copyBufferToBuffer(this.buffers[b], offset, this.buffers[a.buffer], 0, size);
      }
      encode?.(enc);
      if (read) {
        plan.outputs.forEach((o, i) => {
          const [b, offset, size] = o.value;
          enc.copyBufferToBuffer(this.buffers[b], offset, this.staging, this.outputSlots[i], size);
        });
      }
      device.queue.submit([enc.finish()]);
      if (validate) {
        const err = await device.popErrorScope();
        if (err) throw new Error(`WebGPU run failed: ${err.message}`);
        this.validated = true;
      }
      if (!read) return null; // submitted; the queue orders what comes next after it
      try {
        await this.staging.mapAsync(GPUMapMode.READ);
      } catch (err) {
        await Promise.race([this.device.lost, new Promise((r) => setTimeout(r, 0))]);
        this.checkLost();
        throw err;
      }
      this.checkLost();
      const all = this.staging.getMappedRange();
      this.outputs = plan.outputs.map((o, i) => new Float32Array(all.slice(this.outputSlots[i], this.outputSlots[i] + o.value[2])));
      this.staging.unmap();
      return this.outputs;
    });
  }

  /**
   * One run with a compute pass per dispatch and GPU timestamps around each
   * (the device needs the 'timestamp-query' feature): resolves to
   * [{ index, op, node, key, ms }] per dispatch (key: the pipeline's).  For
   * tuning kernels; params change as in run(), outputs are not read.
   */
  profile() {
    return this.enqueue(async () => {
      await this.prepare();
      this.checkLost();
      const { device, plan } = this;
      if (!device.features?.has('timestamp-query')) throw new Error('profile: the device lacks the timestamp-query feature');
      const n = plan.steps.length;
      const querySet = device.createQuerySet({ type: 'timestamp', count: 2 * n });
      const resolve = device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      const read = device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = device.createCommandEncoder({ label: 'rlx profile' });
      plan.steps.forEach((st, k) => {
        const pass = enc.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * k, endOfPassWriteIndex: 2 * k + 1 } });
        pass.setPipeline(this.pipelines[st.pipeline].pipeline);
        pass.setBindGroup(0, this.bindGroups[k]);
        pass.dispatchWorkgroups(st.groups[0], st.groups[1], st.groups[2]);
        pass.end();
      });
      enc.resolveQuerySet(querySet, 0, 2 * n, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, read, 0, 16 * n);
      device.queue.submit([enc.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const t = new BigInt64Array(read.getMappedRange().slice(0));
      read.unmap();
      read.destroy(); resolve.destroy(); querySet.destroy();
      return plan.steps.map((st, k) => ({ index: k, op: st.op, node: st.node, key: plan.pipelines[st.pipeline].key, ms: Number(t[2 * k + 1] - t[2 * k]) / 1e6 }));
    });
  }

  outputShape(i) { return this.plan.outputs[i]?.shape.slice(); }
  /**
   * Where a value lives on the GPU once prepared: ('output', i) or
   * ('input', name) -> { buffer, offset, size } (bytes), for commands a
   * caller adds to a run (run's options.encode): e.g. reading the logits
   * and writing the next token's id without a round trip to the host.
   */
  gpuValue(kind, which) {
    if (!this.ready) throw new Error('gpuValue: prepare() the session first');
    const { plan } = this;
    if (kind === 'output') {
      const [b, offset, size] = plan.outputs[which].value;
      return { buffer: this.buffers[b], offset, size };
    }
    const inp = plan.inputs[this._index(this.inputs, 'input', which)];
    return { buffer: this.buffers[inp.buffer], offset: 0, size: inp.size };
  }

  get dispatchCount() { return this.plan.steps.length; }
  get pipelineCount() { return this.plan.pipelines.length; }

  // Destroys the buffers this session made (not those of sharedParams).
  destroyOwned() {
    (this.buffers ?? []).forEach((b, i) => { if (!this.shared.has(i)) b.destroy(); });
  }

  /** Releases the GPU buffers (the device stays; pipelines stay cached; shared params stay). */
  free() {
    if (this.freed) return;
    this.freed = true;
    this.destroyOwned();
    this.staging?.destroy();
    if (this.buffers) this.buffers = [];
    this.pending.clear();
  }
}
