#!/usr/bin/env python3
"""Instructions to start and load 100,000 entries, counted by valgrind (not a test: it prints
figures). A count, unlike the CPU time `benches/compare` gives, is the same from run to run on
a shared machine, so a change to the load can be judged by one run of each build.

Each daemon runs under `valgrind --tool=cachegrind --cache-sim=no` on the lines of
benches/compare's load row (ten /etc/cron.d files of 10,000 entries due on 1 January, commands
of WIDTH bytes), is stopped once its CPU has been quiet for two seconds, and its instruction
count (the main process's, not the forked child that checks PAM's modules) is printed.
busybox's crond, when installed, runs the same lines as one root crontab. The count covers the
start and the stop as well as the load; it leaves out the kernel's work (page faults, reads).

    apt-get install valgrind busybox   # once
    python3 benches/daemon/load_instructions.py [--width 20] BINARY [BINARY ...]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare"))
import compare  # noqa: E402


def instructions(peer, argv, env):
    """Runs `argv` (the peer's daemon) under cachegrind until it is idle; its count."""
    out = os.path.join(peer.dir, "cachegrind.out")
    p = subprocess.Popen(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                          f"--cachegrind-out-file={out}"] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    time.sleep(1)
    compare.settle(p.pid, quiet_s=2.0, limit_s=300)
    p.terminate()
    _, err = p.communicate()
    counts = re.findall(r"I\s+refs:\s+([\d,]+)", err.decode(errors="replace"))
    # The last one printed is the main process's: a forked child's ends first.
    return int(counts[-1].replace(",", "")) if counts else None


def crond(binary, lines):
    peer = compare.Crond(None, binary=binary)
    peer.prepare()
    peer.write_system(lines)
    d = peer.dir
    argv = [binary, "-f", "--log", "stderr", "--spool-dir", d + "/spool",
            "--system-crontab", d + "/crontab", "--cron-d", d + "/cron.d",
            "--pid-file", d + "/pid", "--reboot-marker", d + "/reboot", "--pam-dir", d + "/pam.d"]
    try:
        return instructions(peer, argv, {"PATH": "/usr/bin:/bin", "TZ": "UTC"})
    finally:
        peer.cleanup()


def busybox(lines):
    peer = compare.Busybox(None)
    peer.prepare()
    peer.write_system([line.replace(" root ", " ", 1) for line in lines])
    argv = ["busybox", "crond", "-f", "-l", "8", "-L", os.path.join(peer.dir, "log"),
            "-c", os.path.join(peer.dir, "crontabs")]
    try:
        return instructions(peer, argv, {"PATH": "/usr/bin:/bin", "TZ": "UTC", "SHELL": "/bin/sh"})
    finally:
        peer.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=20, help="bytes of each command")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the daemons load /etc/cron.d-style files and PAM")
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    lines = [f"{i % 60} {(i // 60) % 24} 1 1 * root " + f"/bin/true {i} ".ljust(args.width, "x")
             + "\n" for i in range(100_000)]
    for binary in args.binaries:
        print(f"{binary}: {crond(binary, lines):,} instructions", flush=True)
    if shutil.which("busybox"):
        print(f"busybox crond: {busybox(lines):,} instructions", flush=True)


if __name__ == "__main__":
    main()
