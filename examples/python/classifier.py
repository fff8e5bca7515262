#!/usr/bin/env python3
"""classifier.py - a small image classifier described in code with the RLX
Python bindings (python/rlx), trained and then used for inference.

The model, the same as examples/c/classifier.c:
    logits = relu(x W1 + b1) W2 + b2        x[B, 784] -> [B, 128] -> [B, 10]
    loss   = mean softmax cross-entropy of logits against the labels

W1 is He-uniform, W2 and the biases start at zero, so every class starts
equally likely and the first loss is ln(10).  Training runs 100 Adam steps
on batches of 64 Fashion-MNIST images (from $RLX_DATA_DIR or
/usr/share/datasets/fashion-mnist; synthetic images when the files are
missing or with --synthetic), then a second graph with a larger batch
classifies held-out images with the trained weights.

Checks (exit status 1 when one fails): the first loss is ln(10) +- 0.05 and
the loss falls (the mean of the last 10 steps is under 70% of the first).

Run: PYTHONPATH=python python3 examples/python/classifier.py [--synthetic] [--steps N]
"""

import argparse
import array
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import rlx  # noqa: E402

IN, HID, OUT = 784, 128, 10
BATCH, EVAL_BATCH = 64, 1000
LR = 1e-3
SYNTHETIC_POOL = 640  # synthetic training images, cycled


def build_classifier(g, batch):
    """Adds the classifier for a batch size to graph g: returns (logits, loss)."""
    x = g.input("x", (batch, IN))
    labels = g.input("labels", (batch,), dtype="i32")
    w1, b1 = g.param("w1", (IN, HID)), g.param("b1", (HID,))
    w2, b2 = g.param("w2", (HID, OUT)), g.param("b2", (OUT,))
    hidden = (x @ w1 + b1).relu()
    logits = hidden @ w2 + b2
    loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels))
    return logits, loss


class Lcg:
    """The 32-bit LCG of the C example, so both draw the same numbers."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def uniform(self):  # [0, 1)
        self.state = (self.state * 1664525 + 1013904223) & 0xFFFFFFFF
        return (self.state >> 8) / 16777216.0


def he_uniform(rng, fan_in, n):
    bound = math.sqrt(6.0 / fan_in)
    return [(2.0 * rng.uniform() - 1.0) * bound for _ in range(n)]


def synthetic_data(n_train, n_eval, seed=7):
    """Ten random prototype images; sample i is the prototype of class i mod
    10, half-blended with uniform noise.  Returns (train_x, train_y, eval_x,
    eval_y) as arrays."""
    rng = Lcg(seed)
    protos = [[rng.uniform() for _ in range(IN)] for _ in range(OUT)]

    def samples(n):
        x, y = array.array("f"), array.array("i")
        for i in range(n):
            x.extend([0.5 * p + 0.5 * rng.uniform() for p in protos[i % OUT]])
            y.append(i % OUT)
        return x, y
    return samples(n_train) + samples(n_eval)


def load_data(synthetic, n_train):
    """(name, train_x, train_y, eval_x, eval_y): Fashion-MNIST when present
    (training images from its training set, held-out ones from its test set),
    else synthetic images."""
    directory = os.environ.get("RLX_DATA_DIR", "/usr/share/datasets/fashion-mnist")
    path = lambda f: os.path.join(directory, f)  # noqa: E731
    if not synthetic and os.path.exists(path("train-images-idx3-ubyte.gz")):
        with rlx.load_dataset(path("train-images-idx3-ubyte.gz"), path("train-labels-idx1-ubyte.gz")) as train, \
                rlx.load_dataset(path("t10k-images-idx3-ubyte.gz"), path("t10k-labels-idx1-ubyte.gz")) as test:
            n_train = min(n_train, len(train) // BATCH * BATCH)
            return ("Fashion-MNIST (%s)" % directory,) + train.batch(0, n_train) + test.batch(0, EVAL_BATCH)
    return ("synthetic",) + synthetic_data(SYNTHETIC_POOL, EVAL_BATCH)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synthetic", action="store_true", help="use synthetic images even if Fashion-MNIST is there")
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()

    name, train_x, train_y, eval_x, eval_y = load_data(args.synthetic, args.steps * BATCH)
    n_train = len(train_y)
    print("data: %s, %d training images; model 784 -> 128 relu -> 10, Adam lr %g, batch %d"
          % (name, n_train, LR, BATCH))

    # ---- training ---------------------------------------------------------
    g = rlx.Graph()
    _, loss = build_classifier(g, BATCH)
    step = g.compile_train(loss, optimizer="adam", lr=LR)
    g.close()
    step.set_param("w1", he_uniform(Lcg(42), IN, IN * HID))  # w2, b1, b2 stay zero

    losses = []
    t0 = time.perf_counter()
    for i in range(args.steps):
        start = (i * BATCH) % n_train
        step.set_input("x", train_x[start * IN:(start + BATCH) * IN])
        step.set_input("labels", train_y[start:start + BATCH])
        losses.append(step.run())
        if i == 0 or (i + 1) % 10 == 0:
            print("step %3d  loss %.6f" % (i + 1, losses[-1]))
    train_s = time.perf_counter() - t0
    print("first loss %.6f (ln 10 = %.6f); %d steps in %.3f s (%.2f ms/step)"
          % (losses[0], math.log(10), len(losses), train_s, 1e3 * train_s / len(losses)))

    # ---- inference: the same model for a bigger batch, the trained weights ----
    g = rlx.Graph()
    logits, _ = build_classifier(g, EVAL_BATCH)
    infer = g.compile(logits)
    g.close()
    for p in ("w1", "b1", "w2", "b2"):
        infer.set_param(p, step.get_param(p))
    x, y = eval_x, eval_y
    t0 = time.perf_counter()
    infer.run({"x": x})  # "labels" is not needed for the logits
    infer_ms = 1e3 * (time.perf_counter() - t0)
    out = infer.output(0)
    predicted = [max(range(OUT), key=lambda c: out[r * OUT + c]) for r in range(EVAL_BATCH)]
    correct = sum(p == t for p, t in zip(predicted, y))
    print("inference: %d held-out images in %.2f ms, accuracy %.1f%%; first predictions %s, labels %s"
          % (EVAL_BATCH, infer_ms, 100.0 * correct / EVAL_BATCH, predicted[:8], list(y[:8])))
    infer.close()
    step.close()

    # ---- checks -----------------------------------------------------------
    failures = []
    if abs(losses[0] - math.log(10)) > 0.05:
        failures.append("the first loss %.6f is not ln(10) = %.6f +- 0.05" % (losses[0], math.log(10)))
    tail = losses[-10:]
    if sum(tail) / len(tail) >= 0.7 * losses[0]:
        failures.append("the loss did not fall: mean of the last %d steps %.6f vs first %.6f"
                        % (len(tail), sum(tail) / len(tail), losses[0]))
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    if failures:
        return 1
    print("OK: first loss is ln(10), the loss falls")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (rlx.RlxError, rlx.RlxLibraryError) as e:
        print("rlx error: %s" % e, file=sys.stderr)
        sys.exit(2)
