#!/usr/bin/env python3
"""Page faults per job, by the mapping they fall in: what a job child (and its shell before
exec) pays in memory for being a forked copy of the daemon. Not a test: it asserts nothing.

    cargo build --release && sudo python3 benches/daemon/job_faults.py [--jobs N] [--no-pam] [BINARY...]

For each BINARY (default target/release/crond) in turn: a private tree as benches/compare
makes, N `stamp` jobs (default 1,000) due at the next minute boundary at least 12 s away,
`perf record -a -e page-faults -c 1 -d` from the daemon's idle start to the last job's stamp.
Each fault of a process named after the binary other than the daemon (the job children, and
the shell between its vfork and exec) is put in the daemon's mapping its address falls in
(read from /proc/PID/maps before the minute: the children are forks, so the same layout);
"(new)" is a mapping made after the fork (the job arena's fresh blocks, glibc's mmaps). The
faults at the binary's code are also counted by 64 KiB window of the file (the kernel maps the
cached pages of that much around a fault): what benches/link-order's order is for.
Fault counts do not move with this machine's noise the way times do: compare builds by them.
Needs perf.
"""

import argparse
import bisect
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benches", "compare"))
import compare  # noqa: E402


def mappings(pid):
    """The daemon's mappings as (start, end, "file perms", offset in the file), sorted."""
    found = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            name = os.path.basename(fields[5]) if len(fields) > 5 else "[anon]"
            found.append((start, end, f"{name} {fields[1]}", int(fields[2], 16)))
    return sorted(found)


def one(binary, jobs, pam, stamp, tmp):
    peer = compare.Crond(stamp, pam=pam, binary=binary)
    _, starts = peer.prepare()
    b = compare.boundary_ahead(12)
    t = time.gmtime(b)
    peer.write_system([f"{t.tm_min} {t.tm_hour} * * * root {stamp} {starts} {i}\n"
                       for i in range(jobs)])
    time.sleep(max(0, b - 8 - time.time()))
    p = peer.start()
    compare.settle(p.pid, quiet_s=1.0, limit_s=30)
    maps = mappings(p.pid)
    starts_of_maps = [m[0] for m in maps]
    data = os.path.join(tmp, "faults.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "page-faults", "-c", "1", "-d",
                             "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    compare.wait_starts(starts, jobs, b)
    time.sleep(2)
    perf.send_signal(2)
    perf.wait()
    compare.stop(p)
    ran = len(compare.read_starts(starts)[0])
    peer.cleanup()
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,addr"],
                            capture_output=True, text=True, check=True).stdout
    comm = os.path.basename(binary)[:15]
    by_mapping = collections.Counter()
    # The binary's code by 64 KiB window of the file (the kernel maps that much around a fault).
    code_windows = collections.Counter()
    for line in script.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0] != comm or int(fields[1]) == p.pid:
            continue
        addr = int(fields[2], 16)
        i = bisect.bisect_right(starts_of_maps, addr) - 1
        inside = i >= 0 and addr < maps[i][1]
        by_mapping[maps[i][2] if inside else "(new)"] += 1
        if inside and maps[i][2] == f"{os.path.basename(binary)} r-xp":
            code_windows[(addr - maps[i][0] + maps[i][3]) >> 16] += 1
    total = sum(by_mapping.values())
    mode = "PAM" if pam else "--no-pam"
    print(f"{binary} ({mode}): {ran} of {jobs} jobs ran; {total / max(ran, 1):.1f} faults a job")
    for name, count in by_mapping.most_common():
        if count / max(ran, 1) >= 0.5:
            print(f"  {count / max(ran, 1):6.1f}  {name}")
    windows = ", ".join(f"{w:#x}0000: {c / max(ran, 1):.1f}" for w, c in sorted(code_windows.items())
                        if c / max(ran, 1) >= 0.05)
    print(f"  the binary's code by 64 KiB window of the file: {windows}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--no-pam", action="store_true")
    ap.add_argument("binaries", nargs="*")
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("perf"):
        sys.exit("run as root, with perf installed")
    binaries = [os.path.abspath(b) for b in args.binaries] or [compare.CROND]
    tmp = tempfile.mkdtemp(prefix="job-faults")
    try:
        stamp, _ = compare.build_tools(tmp)
        for binary in binaries:
            one(binary, args.jobs, not args.no_pam, stamp, tmp)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
