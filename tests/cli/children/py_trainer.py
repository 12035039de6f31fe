"""A Python stand-in for a training script: steps of uneven length, one log line each.

    py_trainer.py --steps N --step-ms MS [--jitter F] [--seed S] [--setup-ms MS] [--stamps FILE]

--stamps FILE writes, at the end, the CLOCK_MONOTONIC nanoseconds at which each step line was
written: the tests compute each step's exact energy from them.  Output is plain print(), as in
most trainers (line-buffered on a terminal, block-buffered on a pipe unless PYTHONUNBUFFERED).
"""
import argparse
import random
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-ms", type=float, default=100.0)
    p.add_argument("--jitter", type=float, default=0.4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--setup-ms", type=float, default=300.0)
    p.add_argument("--stamps")
    a = p.parse_args()
    rng = random.Random(a.seed)
    print("loading dataset and building the model...")
    time.sleep(a.setup_ms / 1000)
    stamps = []
    loss = 10.5
    for s in range(1, a.steps + 1):
        ms = a.step_ms * (1.0 + a.jitter * (2.0 * rng.random() - 1.0))
        time.sleep(ms / 1000)
        loss = loss * 0.97 + 0.08
        stamps.append(time.monotonic_ns())
        print(f"step {s}/{a.steps} | loss {loss:.4f} | lr 3.0e-04 | dt {ms:.1f}ms")
    print("training done")
    if a.stamps:
        with open(a.stamps, "w") as f:
            f.write("".join(f"{t}\n" for t in stamps))


if __name__ == "__main__":
    main()
