"""The scale figure's benchmark: speaks the data protocol for SCALE_SECONDS seconds.

Every 100 ms a rate, every second a GPU-sample-sized event, a loss and a line on stdout;
every data event carries this process's id, its sequence number and the time it was written. The
processes start together: each says it is ready in SCALE_READY and waits until all SCALE_N
are (an orchestrator may take minutes to start hundreds). At the end the process writes
how many data events it wrote to SCALE_COUNTS/<id>.
"""

import json
import os
import sys
import time

seconds = float(os.environ.get("SCALE_SECONDS", "30"))
ident = f"{os.getpid()}-{time.time_ns()}"
out = os.fdopen(int(os.environ["DATA_FD"]), "w", buffering=1)
seq = 0
ready = os.environ["SCALE_READY"]
open(os.path.join(ready, ident), "w").close()
while len(os.listdir(ready)) < int(os.environ["SCALE_N"]):
    time.sleep(0.5)


def emit(record):
    global seq
    record["scale"] = [ident, seq, time.time()]
    out.write(json.dumps(record) + "\n")
    seq += 1


gpu = {
    "task": "main",
    "gpudata": {
        "0": {
            "memory": [61034.5, 81559.0],
            "load": 0.97,
            "temperature": 61,
            "power": 412.5,
        }
    },
}
start = time.monotonic()
tick = 0
while True:
    tick += 1
    target = start + tick * 0.1
    now = time.monotonic()
    if now - start >= seconds:
        break
    if target > now:
        time.sleep(target - now)
    emit({"task": "train", "rate": 100.0 + tick % 7, "units": "items/s"})
    if tick % 10 == 0:
        emit(dict(gpu))
        emit({"task": "train", "loss": 1.0 / tick})
        print(f"step {tick}: still running", flush=True)
out.close()
with open(os.path.join(os.environ["SCALE_COUNTS"], ident), "w") as counts:
    counts.write(str(seq))
sys.exit(0)
