// software-gpu.js - how much slower a software GPU (a CPU rasterizer such as
// SwiftShader, which a browser without a usable graphics driver offers as
// WebGPU or WebGL2) runs a page's own work than RLX's CPU executor, measured
// on that work, never assumed: the GPU's time for some steps of the run
// against the same step on the CPU (after one untimed call that compiles
// it).  'auto' never takes such a backend (runtime/backends.js); the pages
// warn with the measured figure when one was picked by name.  Pure JS: the
// Workers time, the pages word the warning.
//
//   const probe = new SoftwareProbe(env.webgpu.software, 'webgpu', 'a training step');
//   if (probe.add(gpuMs)) post({ slowdown: await probe.measure(() => bench.train_step('cpu', ...)) });
//   page: el.textContent = slowdownText(p.slowdown, 'pick cpu');
import { BACKEND_LABEL } from './runtime/backends.js';

export const GPU_SAMPLES = 3; // GPU steps timed (after the one that compiles): their median
const CPU_SAMPLES = 3;        // CPU calls timed after the compiling one: their median

export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/** Median ms of `step` (sync or async) on the CPU, after one untimed call that compiles its plan. */
export async function cpuMs(step, samples = CPU_SAMPLES) {
  await step();
  const times = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await step();
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** { backend, software, what, gpuMs, cpuMs, ratio } from the two times (ratio = gpuMs / cpuMs). */
export function slowdown(backend, software, what, gpuMs, cpuMsValue) {
  return { backend, software, what, gpuMs, cpuMs: cpuMsValue, ratio: gpuMs / cpuMsValue };
}

/** Collects a run's GPU step times and, once it has enough, measures the CPU on the same step. */
export class SoftwareProbe {
  /** software: the renderer's name (null or '' for a hardware GPU or the CPU: the probe then does nothing). */
  constructor(software, backend, what) {
    this.active = Boolean(software) && backend !== 'cpu';
    Object.assign(this, { software, backend, what, times: [] });
  }

  /** Adds a GPU step's ms; true when the CPU should be measured now (enough samples, or `last`). */
  add(ms, last = false) {
    if (!this.active) return false;
    this.times.push(ms);
    return this.times.length === GPU_SAMPLES || (last && this.times.length < GPU_SAMPLES);
  }

  /** Times cpuStep and returns the slowdown (once; later calls return null). */
  async measure(cpuStep) {
    if (!this.active || !this.times.length) return null;
    this.active = false;
    return slowdown(this.backend, this.software, this.what, median(this.times), await cpuMs(cpuStep));
  }
}

/** A GPU backend's name for people ('WebGPU', 'WebGL2': ./runtime/backends.js); undefined for the CPU. */
export const gpuName = (backend) => (backend === 'cpu' ? undefined : BACKEND_LABEL[backend]);
// Two significant digits below 100 ms, whole ms above (99.5 and up round to 100: toPrecision(2) would write 1.0e+2).
const ms = (v) => (v >= 99.5 ? `${v.toFixed(0)} ms` : `${v.toPrecision(2)} ms`);

/** The measured figure: "26x" or "1.4x". */
export function ratioText(ratio) {
  const r = ratio >= 1 ? ratio : 1 / ratio;
  return `${r >= 10 ? r.toFixed(0) : r.toFixed(1)}x`;
}

/** The warning for a software GPU picked by name; advice: what to pick instead (used when it is slower). */
export function slowdownText(s, advice) {
  const name = gpuName(s.backend) ?? s.backend;
  const head = `${name} here is ${s.software}, a software renderer (no graphics hardware):`;
  const times = `${s.what} took ${ms(s.gpuMs)} on it and ${ms(s.cpuMs)} on the CPU (measured in this run)`;
  if (s.ratio >= 1) return `${head} ${ratioText(s.ratio)} slower than the CPU; ${times}. ${advice}`;
  return `${head} ${ratioText(s.ratio)} faster than the CPU here; ${times}.`;
}

/** The note before a run on a software GPU picked by name (the figure comes once it is measured). */
export function softwareNotice(backend, software) {
  return `${gpuName(backend) ?? backend} here is ${software}, a software renderer (no graphics hardware): ` +
    'usually much slower than the CPU; the run measures by how much.';
}
