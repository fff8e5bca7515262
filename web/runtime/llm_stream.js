// llm_stream.js - what GgufModel.generate returns: the Promise of the
// result (await it, or then/catch/finally) that is also an async iterable
// of the generated pieces, each { text, id } as it comes:
//
//   for await (const { text } of model.generate('Once upon a time', { maxTokens: 64 })) out.append(text);
//   const { stoppedBy, stats } = await model.generate(prompt);
//
// Leaving the loop early (break, return, a throw) stops the generation
// (stoppedBy 'abort'); an error of the generation is thrown by the loop
// and rejects the Promise.
export class Generation {
  /** run(push, stopRequested) -> Promise of the result; push({ text, id }) for each piece. */
  constructor(run) {
    this.queue = [];
    this.waiter = null; // { resolve, reject } of a pending next()
    this.finished = false;
    this.failure = undefined;
    this.stopRequested = false;
    this.iterating = false;
    // Started a microtask later, so a for-await loop written right after
    // generate() is reading before the first token.
    this.promise = Promise.resolve().then(() => run((piece) => this.push(piece), () => this.stopRequested));
    this.promise.then(() => this.finish(undefined), (e) => this.finish(e));
  }

  /** Queues a piece; true when a loop is reading them (the generation then lets it run before going on). */
  push(piece) {
    if (this.waiter) {
      const { resolve } = this.waiter;
      this.waiter = null;
      resolve({ value: piece, done: false });
    } else {
      this.queue.push(piece);
    }
    return this.iterating;
  }

  finish(error) {
    this.finished = true;
    this.failure = error;
    if (!this.waiter) return;
    const { resolve, reject } = this.waiter;
    this.waiter = null;
    if (error !== undefined) reject(error);
    else resolve({ value: undefined, done: true });
  }

  then(onFulfilled, onRejected) { return this.promise.then(onFulfilled, onRejected); }
  catch(onRejected) { return this.promise.catch(onRejected); }
  finally(onFinally) { return this.promise.finally(onFinally); }

  [Symbol.asyncIterator]() {
    this.iterating = true;
    return {
      next: () => {
        if (this.queue.length) return Promise.resolve({ value: this.queue.shift(), done: false });
        if (this.finished) {
          return this.failure !== undefined ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => { this.waiter = { resolve, reject }; });
      },
      return: () => {
        this.stopRequested = true;
        this.queue.length = 0;
        return this.promise.then(() => ({ value: undefined, done: true }), () => ({ value: undefined, done: true }));
      },
      [Symbol.asyncIterator]() { return this; },
    };
  }
}
