"""A child that writes as fast as it can, for the throughput and memory figures of `wrap`.

    emit.py steps N      N step lines, nanoGPT/llm.c style: "step 12/N | loss 2.3456 | ..."
    emit.py plain BYTES  about BYTES of log text that holds no step line
    emit.py longline BYTES  BYTES of text with no newline at all

Output is built in blocks of about 1 MiB and written with os.write, so the child costs little
next to the tool reading it (its own rate: run it with stdout on /dev/null).
"""
import os
import sys


def write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def steps(n: int) -> None:
    block = 16384
    for start in range(1, n + 1, block):
        end = min(start + block, n + 1)
        write_all("".join(f"step {i}/{n} | loss 2.3456 | lr 3.0e-04 | dt 100.0ms\n"
                          for i in range(start, end)).encode())


def plain(total: int) -> None:
    line = b"INFO data: worker 3 prefetched shard 0042 of 1024 (65536 samples, 12.5 MB) ok\n"
    chunk = line * (1048576 // len(line))
    left = total
    while left > 0:
        part = chunk if left >= len(chunk) else chunk[:left]
        write_all(part)
        left -= len(part)


def longline(total: int) -> None:
    chunk = b"x" * 1048576
    left = total
    while left > 0:
        part = chunk if left >= len(chunk) else chunk[:left]
        write_all(part)
        left -= len(part)


def main():
    kind, count = sys.argv[1], int(float(sys.argv[2]))
    {"steps": steps, "plain": plain, "longline": longline}[kind](count)


if __name__ == "__main__":
    main()
