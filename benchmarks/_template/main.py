#!/usr/bin/env python
"""A minimal milabench benchmark: a CPU-bound loop that reports its throughput.

It speaks milabench's data protocol directly (JSON lines on the file descriptor named by
DATA_FD, or smuggled in stdout when DATA_FD=1), so it needs nothing but Python. Replace the
`step` function with real work; keep the reporting.
"""

import argparse
import json
import os
import sys
import time


def data_channel():
    """Return a function that sends one record to milabench (a no-op outside milabench)."""
    fd = os.environ.get("DATA_FD")
    if fd is None:
        return lambda record: None
    if fd == "1":
        def send(record):
            # One JSON line per record, newline included, as voir smuggles them.
            payload = (json.dumps(record) + "\n").encode().hex()
            smuggled = payload.translate(str.maketrans("abcdef", ":;<=>?"))
            sys.stdout.write(f"\x1b[{smuggled}z")
            sys.stdout.flush()
        return send
    stream = os.fdopen(int(fd), "w", buffering=1)

    def send(record):
        stream.write(json.dumps(record) + "\n")

    return send


def step(batch_size, state):
    """One training step stand-in: some arithmetic over `batch_size` items."""
    total = 0.0
    for i in range(batch_size * 100):
        total += (i * state) % 7
    return total / (batch_size * 100)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--observations", type=int,
                        default=int(os.environ.get("VOIR_EARLYSTOP_COUNT", "10")))
    parser.add_argument("--interval", type=float, default=0.5,
                        help="seconds per rate observation")
    args = parser.parse_args()

    send = data_channel()
    state = 1.0
    for observation in range(args.observations):
        items = 0
        start = time.perf_counter()
        while time.perf_counter() - start < args.interval:
            state = step(args.batch_size, state) + 1
            items += args.batch_size
        elapsed = time.perf_counter() - start
        send({"task": "train", "rate": items / elapsed, "units": "items/s"})
        send({"task": "train", "loss": 1.0 / (observation + 1)})
        send({"task": "early_stop", "progress": [observation + 1, args.observations]})
    print(f"done: {args.observations} observations")


if __name__ == "__main__":
    main()
