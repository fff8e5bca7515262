// worker-rpc.js - calls into the pages' module Workers (vision-worker.js,
// train-worker.js): a page calls a command and gets a Promise of its result,
// with progress messages on the way; a 'stop' message goes past the queue.
//
//   page:    const call = connect(worker, onError);
//            const result = await call('train', { ... }, (progress) => ...);
//   worker:  serve({ hello, train: (msg, post) => ... }, () => { stopRequested = true; });

/** A page-side caller of the worker's commands. */
export function connect(worker, onError) {
  const pending = new Map(); // id -> { resolve, reject, onProgress }
  let nextId = 1;
  worker.onmessage = (event) => {
    const msg = event.data;
    const entry = pending.get(msg.id);
    if (!entry) return;
    if (msg.progress) {
      entry.onProgress?.(msg.progress);
      return;
    }
    pending.delete(msg.id);
    if (msg.ok) entry.resolve(msg.result);
    else entry.reject(new Error(msg.error));
  };
  worker.onerror = (event) => onError(new Error(`the worker failed: ${event.message ?? 'could not start'}`));
  return (cmd, args = {}, onProgress) => {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, onProgress });
      worker.postMessage({ id, cmd, ...args });
    });
  };
}

/** Worker side: runs handlers[cmd](msg, post) for each message; post(progress) reports on the way. */
export function serve(handlers, onStop) {
  self.onmessage = async (event) => {
    const msg = event.data ?? {};
    if (msg.cmd === 'stop') {
      onStop();
      return;
    }
    try {
      if (!Object.hasOwn(handlers, msg.cmd)) throw new Error(`unknown command ${msg.cmd}`);
      const result = await handlers[msg.cmd](msg, (progress) => postMessage({ id: msg.id, progress }));
      postMessage({ id: msg.id, ok: true, result });
    } catch (err) {
      postMessage({ id: msg.id, ok: false, error: String(err?.message ?? err) });
    }
  };
}

/** Lets queued messages (e.g. 'stop') in, without setTimeout's 4 ms clamp. */
export function yieldToEvents() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(0);
  });
}
