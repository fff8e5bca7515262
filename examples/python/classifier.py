#!/usr/bin/env python3
"""classifier.py - a small image classifier described in code with the RLX
Python bindings (python/rlx), trained and then used for inference.

The model, the same as examples/c/classifier.c:
    logits = relu(x W1 + b1) W2 + b2        x[B, 784] -> [B, 128] -> [B, 10]
    loss   = mean softmax cross-entropy of logits against the labels

W1 is He-uniform, W2 and the biases start at zero, so every class starts
equally likely and the first loss is ln(10).  Training runs 100 Adam steps
(--steps) on batches of 64 Fashion-MNIST images (from $RLX_DATA_DIR or
/usr/share/datasets/fashion-mnist; synthetic images when the files are
missing or with --synthetic); a second graph with a larger batch computes
the logits and the loss of 1000 held-out images, with the weights before
and after training.

Checks (exit status 1 when one fails): the first loss is ln(10) +- 0.05,
and the loss fell: the held-out loss after training is at least 0.001 below
the one before (true of a healthy run of any length, even one step; never
of a run that learned nothing, such as --lr 0).  Exit status 2 on a library
error.

Uses the installed rlx package (pip install ./python), else the one of this
repository (python/rlx, with build/librlx.so: make build/librlx.so).
Run: python3 examples/python/classifier.py [--synthetic] [--steps N] [--lr LR]
"""

import argparse
import array
import math
import os
import sys
import time

try:
    import rlx
except ModuleNotFoundError as e:  # not installed: the package of this repository
    if e.name != "rlx":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import rlx

IN, HID, OUT = 784, 128, 10
BATCH, EVAL_BATCH = 64, 1000
LR = 1e-3
MIN_FALL = 0.001  # how far the held-out loss must fall
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


def positive_int(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, got %d" % n)
    return n


def learning_rate(text):
    lr = float(text)
    if not (0 <= lr < math.inf):
        raise argparse.ArgumentTypeError("must be a number >= 0, got %s" % text)
    return lr


def heldout(infer, params, x):
    """The held-out loss, logits and run time (ms) for params (a dict of arrays)."""
    for p, values in params.items():
        infer.set_param(p, values)
    infer.set_input("x", x)
    t0 = time.perf_counter()
    infer.run()
    ms = 1e3 * (time.perf_counter() - t0)
    return infer.output(1)[0], infer.output(0), ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synthetic", action="store_true", help="use synthetic images even if Fashion-MNIST is there")
    ap.add_argument("--steps", type=positive_int, default=100, help="training steps (default 100)")
    ap.add_argument("--lr", type=learning_rate, default=LR, help="Adam's learning rate (default %g)" % LR)
    args = ap.parse_args()

    name, train_x, train_y, eval_x, eval_y = load_data(args.synthetic, args.steps * BATCH)
    n_train = len(train_y)
    print("data: %s, %d training images; model 784 -> 128 relu -> 10, Adam lr %g, batch %d"
          % (name, n_train, args.lr, BATCH))

    # ---- the graphs: a training step, and the same model for a bigger batch --
    g = rlx.Graph()
    _, loss = build_classifier(g, BATCH)
    step = g.compile_train(loss, optimizer="adam", lr=args.lr)
    g.close()
    step.set_param("w1", he_uniform(Lcg(42), IN, IN * HID))  # w2, b1, b2 stay zero
    g = rlx.Graph()
    logits, eval_loss = build_classifier(g, EVAL_BATCH)
    infer = g.compile([logits, eval_loss])
    g.close()
    infer.set_input("labels", eval_y)
    params = lambda: {p: step.get_param(p) for p in ("w1", "b1", "w2", "b2")}  # noqa: E731
    before, _, _ = heldout(infer, params(), eval_x)

    # ---- training ---------------------------------------------------------
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

    # ---- inference: the held-out images with the trained weights ----------
    after, out, infer_ms = heldout(infer, params(), eval_x)
    predicted = [max(range(OUT), key=lambda c: out[r * OUT + c]) for r in range(EVAL_BATCH)]
    correct = sum(p == t for p, t in zip(predicted, eval_y))
    print("inference: %d held-out images in %.2f ms, loss %.6f (%.6f before training), accuracy %.1f%%; "
          "first predictions %s, labels %s"
          % (EVAL_BATCH, infer_ms, after, before, 100.0 * correct / EVAL_BATCH, predicted[:8], list(eval_y[:8])))
    infer.close()
    step.close()

    # ---- checks -----------------------------------------------------------
    failures = []
    if abs(losses[0] - math.log(10)) > 0.05:
        failures.append("the first loss %.6f is not ln(10) = %.6f +- 0.05" % (losses[0], math.log(10)))
    if not after <= before - MIN_FALL:
        failures.append("the loss did not fall: held-out loss %.6f after %d steps vs %.6f before training "
                        "(needs to fall by %g)" % (after, args.steps, before, MIN_FALL))
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    if failures:
        return 1
    print("OK: first loss is ln(10); the held-out loss fell from %.6f to %.6f" % (before, after))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (rlx.RlxError, rlx.RlxLibraryError) as e:
        print("rlx error: %s" % e, file=sys.stderr)
        sys.exit(2)
