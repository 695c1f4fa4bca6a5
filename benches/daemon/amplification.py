#!/usr/bin/env python3
"""Benchmark (not a test: it prints figures): the daemon's memory for crontabs built to amplify.

Each case is a crontab of a few large variables, then `A=0` / `A=1` in turn between entries
(each assignment used to copy the whole environment for the entries below it). The daemon loads
it in the foreground; the script prints the file's size, the entries loaded and the daemon's
peak RSS (VmHWM) against the same daemon with an empty crontab, so the figure is what the file
cost. The bound docs/limits.md states: at most 8 x the file's size plus 512 bytes per entry.

Run as root from the repository:
    cargo build --release && sudo python3 benches/daemon/amplification.py
or, for another build (an older one needs far more memory: 3.6 GB for the last case):
    sudo CROND=/path/to/crond python3 benches/daemon/amplification.py [--cases 1]
"""

import argparse
import os
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bench  # noqa: E402  (tree, start, wait_log)

# (name, variables, bytes per variable, target file size)
CASES = [
    ("138 KB: 4 x 25 KB, 2,000 entries", 4, 25_000, 138_000),
    ("852 KiB: 6 x 125,000 B", 6, 125_000, 852 * 1024),
    ("1 MiB: 6 x 125,000 B", 6, 125_000, 1 << 20),
]


def text(variables, size, target, entry):
    out = [f"V{i}={'v' * size}\n" for i in range(variables)]
    n = sum(map(len, out))
    i = 0
    while n < target:
        line = f"A={i % 2}\n{entry}\n"
        out.append(line)
        n += len(line)
        i += 1
    return "".join(out)


def load(where, body):
    """Starts the daemon on a tree holding `body` (None: nothing), returns (peak KiB, log)."""
    d = bench.tree()
    if body is not None:
        if where == "user":
            path = os.path.join(d, "spool", "root")
            mode = 0o600
        else:
            path = os.path.join(d, "cron.d", "amplify")
            mode = 0o644
        with open(path, "w") as f:
            f.write(body)
        os.chmod(path, mode)
    p = bench.start(d)
    bench.wait_log(d, "entries loaded", secs=600)
    peak = bench.rss_kib(p.pid, "VmHWM")
    p.send_signal(signal.SIGTERM)
    p.wait()
    with open(os.path.join(d, "log")) as f:
        log = f.read()
    shutil.rmtree(d)
    return peak, log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=len(CASES))
    args = ap.parse_args()
    empty, _ = load("user", None)
    print(f"crond: {bench.CROND}; empty daemon: peak RSS {empty} KiB")
    for name, variables, size, target in CASES[:args.cases]:
        for where, entry in (("user", "* * * * * true"), ("cron.d", "* * * * * root true")):
            body = text(variables, size, target, entry)
            peak, log = load(where, body)
            loaded = [l for l in log.splitlines() if "entries loaded" in l]
            cost = (peak - empty) * 1024
            print(f"{name} ({where}): file {len(body)} B; {loaded[-1].split(': ', 1)[-1]}; "
                  f"peak RSS {peak} KiB, {cost / len(body):.1f} x the file above an empty daemon")


if __name__ == "__main__":
    main()
