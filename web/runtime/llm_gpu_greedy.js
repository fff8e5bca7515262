// llm_gpu_greedy.js - greedy decoding kept on the GPU for loadGguf's
// backend 'webgpu' (./llm_webgpu.js).  Each 1-token step is followed, in
// its own command buffer, by llm_argmax.wgsl (src/webgpu/wgsl/): the argmax
// of the step's logits is written straight into the step's ids input, so
// the next step can be submitted before the host has seen the token, and
// into a small buffer copied to one of a ring of mappable buffers that the
// host reads when it gets there.  Up to DEPTH steps are in flight: the GPU
// never waits for the host's readback, and only 4 bytes come back per
// token (not the logits).  The host still decides everything else through
// the module's generator (rlx_llm_generator_next_chosen: end of generation,
// stop strings, max tokens), so the tokens and text are those of the CPU's
// greedy sampler; steps submitted past the end are wasted work whose cache
// rows are never read (the model's position stays at the accepted tokens).
//
//   const dec = new GreedyDecoder(steps, fn, firstId, pos, limit);
//   const id = await dec.next();   // the argmax after the previous token (-1: NaN / +inf logits)
//   await dec.close();             // waits for what is in flight
const DEPTH = 3; // steps submitted ahead of the host
const RING = DEPTH + 1;

/** The argmax pipeline and buffers of one step session (made once, kept with the steps). */
export function greedyKernel(steps, session) {
  const { device } = steps;
  const m = steps.mod;
  const code = m.scoped((t) => m.cstring(m.call('rlx_llm_webgpu_shader', t.str('llm_argmax').ptr)));
  if (!code) throw new Error('llm_argmax.wgsl is not embedded in this module');
  const module = device.createShaderModule({ label: 'rlx llm_argmax', code });
  const logits = session.gpuValue('output', 0);
  const pipeline = device.createComputePipeline({
    label: 'rlx llm_argmax', layout: 'auto',
    compute: { module, entryPoint: 'main', constants: { V: steps.nVocab } },
  });
  const U = GPUBufferUsage;
  const picked = device.createBuffer({ label: 'rlx greedy picked', size: 16, usage: U.STORAGE | U.COPY_SRC });
  const ring = Array.from({ length: RING }, (_, i) => device.createBuffer({ label: `rlx greedy id ${i}`, size: 16,
    usage: U.MAP_READ | U.COPY_DST }));
  const ids = session.gpuValue('input', 'ids');
  const bindGroup = device.createBindGroup({
    label: 'rlx llm_argmax', layout: pipeline.getBindGroupLayout(0), entries: [
      { binding: 0, resource: { buffer: logits.buffer, offset: logits.offset, size: 4 * steps.nVocab } },
      { binding: 1, resource: { buffer: ids.buffer, offset: 0, size: 4 } },
      { binding: 2, resource: { buffer: picked, offset: 0, size: 4 } },
    ],
  });
  return {
    pipeline, bindGroup, picked, ring,
    destroy() { picked.destroy(); for (const b of ring) b.destroy(); },
  };
}

/** Greedy tokens after firstId at position pos, at most `limit` of them (see the top of this file). */
export class GreedyDecoder {
  constructor(steps, fn, firstId, pos, limit) {
    this.steps = steps;
    this.fn = fn;
    this.firstId = firstId;
    this.pos = pos;
    this.limit = limit;
    this.submitted = 0;
    this.inflight = []; // Promises of the ids, oldest first
    this.kernel = null;
    this.session = null;
    this.chain = Promise.resolve(); // submissions in order
  }

  // Submits step `submitted`: its ids are firstId (the first) or what the
  // previous step's argmax wrote; its argmax goes to ring slot i % RING.
  async submit() {
    const i = this.submitted++;
    const { steps } = this;
    const k = steps.sizes.length - 1; // the 1-token step
    if (!this.session) {
      this.session = await steps.step(this.fn, k);
      this.kernel = steps.greedyKernel(this.session);
    }
    const { kernel } = this;
    const slot = kernel.ring[i % RING];
    const feeds = i === 0 ? { ids: Int32Array.of(this.firstId), pos: Int32Array.of(this.pos) } : { pos: Int32Array.of(this.pos + i) };
    await this.session.run(feeds, {
      read: false,
      encode: (enc) => {
        const pass = enc.beginComputePass({ label: 'rlx greedy argmax' });
        pass.setPipeline(kernel.pipeline);
        pass.setBindGroup(0, kernel.bindGroup);
        pass.dispatchWorkgroups(1);
        pass.end();
        enc.copyBufferToBuffer(kernel.picked, 0, slot, 0, 4);
      },
    });
    const id = slot.mapAsync(GPUMapMode.READ).then(() => {
      const value = new Int32Array(slot.getMappedRange(0, 4))[0];
      slot.unmap();
      return value;
    });
    return { id }; // not the Promise itself: the next submission waits for this one's submit, not its readback
  }

  /** The next token id (the argmax of the logits after the previous one); keeps DEPTH steps in flight. */
  async next() {
    if (this.inflight.length === 0 && this.submitted >= this.limit) throw new Error('GreedyDecoder: past its limit');
    while (this.submitted < this.limit && this.inflight.length < DEPTH) {
      // each submission waits for the one before (the pos write must follow its submit)
      const p = this.chain.then(() => this.submit());
      this.chain = p.then(() => {}, () => {});
      const id = p.then((s) => s.id);
      id.catch(() => {}); // handled when next() or close() gets to it
      this.inflight.push(id);
    }
    try {
      return await this.inflight.shift();
    } catch (err) {
      throw this.steps.gpuError(this.fn, err);
    }
  }

  /** Waits for the steps still in flight (their ids are dropped). */
  async close() {
    const left = this.inflight;
    this.inflight = [];
    await Promise.allSettled(left);
  }
}
