#!/usr/bin/env python3
"""Soak (not a test: it prints figures and a verdict, and is not in the suite).

N entries (default 10,000) due every minute for M minutes (default 30), in real time: the real
crond, as root, each job appending `INDEX HH:MM` (the minute by `date`) to one file. At the end:
every entry must have run exactly once in every whole minute of the run, and the daemon's
descriptor count, RSS and child count at the end must equal those after the first minute; no
zombie may be left.

    cargo build --release && sudo python3 benches/soak.py [--entries N] [--minutes M]
    (CROND=/path/to/crond picks another build)
"""

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "daemon"))
import bench  # noqa: E402  (tree, start, wait_log)


def snapshot(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = bench.rss_kib(pid)
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = f.read().split()
    zombies = 0
    for child in children:
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    zombies += 1
        except FileNotFoundError:
            pass
    return {"fds": fds, "rss_kib": rss, "children": len(children), "zombies": zombies}


def wait_for_second(sec_of_minute):
    now = time.time()
    target = (int(now) // 60) * 60 + sec_of_minute
    if target <= now:
        target += 60
    time.sleep(target - now)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--minutes", type=int, default=30)
    args = ap.parse_args()
    d = bench.tree()
    stamps = os.path.join(d, "out", "stamps")
    bench.write_cron_d(d, [f"* * * * * root echo {i} $(date -u +\\%H:\\%M) >> {stamps}\n"
                           for i in range(args.entries)])
    wait_for_second(50)
    p = bench.start(d, {"TZ": "UTC"})
    bench.wait_log(d, "entries loaded")
    first_minute = int(time.time()) // 60 + 1
    # After the first whole minute has run (and its jobs had 50 s to end).
    wait_for_second(50)
    first = snapshot(p.pid)
    time.sleep(max(0, (first_minute + args.minutes) * 60 - time.time()))
    # The last minute's jobs end; the next minute's are not due yet.
    wait_for_second(50)
    last = snapshot(p.pid)
    p.send_signal(signal.SIGTERM)
    p.wait()
    counts = collections.Counter()
    with open(stamps) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                counts[tuple(parts)] += 1
    minutes = [time.strftime("%H:%M", time.gmtime((first_minute + k) * 60))
               for k in range(args.minutes)]
    missing = doubled = 0
    for m in minutes:
        for i in range(args.entries):
            n = counts[(str(i), m)]
            missing += n == 0
            doubled += n > 1
    with open(os.path.join(d, "log")) as f:
        postponed = sum(1 for l in f if "not started last minute" in l)
    print(f"soak: {args.entries} entries x {args.minutes} minutes ({minutes[0]}-{minutes[-1]} UTC), "
          f"{sum(counts.values())} runs logged; missing {missing}, doubled {doubled}; "
          f"minutes with a backlog carried over: {postponed}")
    print(f"after the first minute: {first}")
    print(f"at the end:             {last}")
    same = all(first[k] == last[k] for k in ("fds", "children")) and last["zombies"] == 0
    print("verdict:", "ok" if missing == 0 and doubled == 0 and same else "FAILED",
          f"(RSS {first['rss_kib']} -> {last['rss_kib']} KiB)")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
