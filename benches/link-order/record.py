#!/usr/bin/env python3
"""Records the order the release crond is linked in (benches/link-order/crond.order, read by
build.rs): the functions of crond's binary that a job child runs, then those the daemon runs
once loaded (a minute's jobs started and reaped, an idle minute's wake), each list in the order
callgrind first saw them. Not a test: it asserts nothing.

    cargo build --release && sudo python3 benches/link-order/record.py [--check] [BINARY]

Runs BINARY (default target/release/crond) three times at once under valgrind's callgrind, on
private trees as benches/compare does: with PAM, with --no-pam, and with --no-pam mailing the
jobs' output (to /bin/cat). Three `stamp` jobs and two that print are due at the next minute
boundary at least 20 s away; the daemon's counts are zeroed when it unmaps the code it ran to
start and load (`sys::memory::unmap_idle_file_pages`, after every load), a job child's when it
enters `sys::job_arena::enter` (its first call after the fork), so neither list holds the
start or the load. The child's list also gets what it runs where callgrind can't see it: its
output loop (only where pidfd_open works, which valgrind 3.19 lacks), the shell's vfork child
up to the exec and the end of the fork it returns into (UNSEEN_IN_CHILD). Takes about two minutes.

--check: prints how many of the listed names BINARY still has, and writes nothing. The names
carry a hash of the build (the toolchain, the dependencies' versions): after a change of
either, record again.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ORDER = os.path.join(HERE, "crond.order")
sys.path.insert(0, os.path.join(REPO, "benches", "compare"))
import compare  # noqa: E402

ENTER = "_ZN5crond3sys9job_arena5enter"
# Where the daemon's counting starts: it unmaps the code it ran to start and load (every load
# ends so), and whatever it runs from there on is mapped again.
UNMAP = "_ZN5crond3sys6memory21unmap_idle_file_pages"
# What a job child runs that callgrind can't show it running, joined to the child's list
# wherever the binary has them. Its output loop: valgrind 3.19 has no pidfd_open, so under it
# the child reads the output to end-of-file instead of until the shell's exit
# (`job::shell::capture`, the poll registry). The shell's vfork child, from the clone to the
# execve (`sys::as_user::child_main`): valgrind writes no counts for a process that execs. The
# rest of the fork the child returns into, counted before its zeroing at ENTER.
UNSEEN_IN_CHILD = re.compile(r"^_ZN5crond3job5shell18capture_until_exit|"
                             r"^_ZN5crond3job5shell9read_some|"
                             r"^_ZN5crond3sys4pipe13bytes_waiting|"
                             r"^_ZN5crond3sys7process10exit_watch|"
                             r"^_ZN5crond3sys7as_user10child_main|"
                             r"^_ZN5crond3sys7as_user11Credentials10become_raw|"
                             r"^_ZN5crond3sys4poll17Registry\$LT\$T\$GT\$4wait|"
                             r"^_ZN5crond3sys5spawn20fork_single_threaded")


def names_in(binary):
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3}


def check(binary):
    listed = open(ORDER).read().split()
    have = names_in(binary)
    found = sum(1 for name in listed if name in have)
    print(f"{found} of {len(listed)} listed functions are in {binary}"
          + ("" if found >= len(listed) * 0.9 else ": record again"))


def functions(dump, binary_path):
    """The functions of binary_path with a cost in one callgrind dump, in first-seen order."""
    names, objects, found = {}, {}, []
    current, current_object, obj = None, None, None
    pattern = re.compile(r"^(c?ob|c?fn|c?fi|c?fe|fl)=\((\d+)\)(?: (.*))?$")
    with open(dump, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = pattern.match(line)
            if m:
                kind, ident, name = m.groups()
                if name is not None and kind.endswith("ob"):
                    objects[ident] = name
                elif name is not None and kind.endswith("fn"):
                    names[ident] = name
                if kind == "ob":
                    obj = objects.get(ident)
                elif kind == "fn":
                    current, current_object = names.get(ident), obj
                continue
            if current and (line[:1].isdigit() or line[:1] == "+"):
                costs = line.split()[1:]
                if (any(c.isdigit() and int(c) > 0 for c in costs)
                        and current_object == binary_path and current not in found):
                    found.append(current)
    return found


def start(binary, mode, out_dir, stamp, boundary):
    peer = compare.Crond(stamp, pam=(mode == "pam"), binary=binary)
    _, starts = peer.prepare()
    t = time.gmtime(boundary)
    when = f"{t.tm_min} {t.tm_hour} * * * root"
    peer.write_system([f"{when} {stamp} {starts} {i}\n" for i in range(3)]
                      + [f"{when} echo output {i}; {stamp} {starts} o{i}\n" for i in range(2)]
                      + [f"0 0 1 1 * root never {i}\n" for i in range(20)])
    args = ["valgrind", "-q", "--tool=callgrind", "--demangle=no",
            f"--zero-before={ENTER}*", f"--zero-before={UNMAP}*",
            f"--callgrind-out-file={out_dir}/cg.%p",
            binary, "-f", "--log", "stderr",
            "--spool-dir", os.path.join(peer.dir, "spool"),
            "--system-crontab", os.path.join(peer.dir, "crontab"),
            "--cron-d", os.path.join(peer.dir, "cron.d"),
            "--pid-file", os.path.join(peer.dir, "pid"),
            "--reboot-marker", os.path.join(peer.dir, "reboot"),
            "--pam-dir", os.path.join(peer.dir, "pam.d"),
            "-m", "/bin/cat" if mode == "mail" else "off"]
    if mode != "pam":
        args.append("--no-pam")
    log = open(os.path.join(peer.dir, "log"), "w")
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log,
                         env={"PATH": "/usr/bin:/bin", "TZ": "UTC"})
    return peer, p


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    binary = os.path.abspath(args[0] if args else os.path.join(REPO, "target", "release", "crond"))
    if "--check" in sys.argv:
        return check(binary)
    if os.geteuid() != 0 or not shutil.which("valgrind"):
        sys.exit("run as root, with valgrind installed")
    tmp = tempfile.mkdtemp(prefix="link-order")
    stamp, _ = compare.build_tools(tmp)
    boundary = compare.boundary_ahead(20)
    runs = []
    for mode in ("nopam", "pam", "mail"):
        out_dir = os.path.join(tmp, mode)
        os.mkdir(out_dir)
        runs.append((out_dir, *start(binary, mode, out_dir, stamp, boundary)))
    for _, _, p in runs:
        compare.settle(p.pid, quiet_s=2.0, limit_s=30)
    for _, peer, _ in runs:
        compare.wait_starts(peer.starts, 5, boundary)
    # One idle minute's wake after the jobs.
    time.sleep(max(0, boundary + 65 - time.time()))
    child, daemon = [], []
    for out_dir, peer, p in runs:
        compare.stop(p)
        time.sleep(1)
        for dump in sorted(glob.glob(os.path.join(out_dir, "cg.*"))):
            pid = int(dump.rsplit(".", 1)[1])
            with open(dump, errors="replace") as f:
                is_child = ENTER in f.read()
            # Other processes (PAM's trial load at start) ran before the zeroing: left out.
            if is_child or pid == p.pid:
                target = child if is_child else daemon
                target += [n for n in functions(dump, binary) if n not in target]
        peer.cleanup()
    shutil.rmtree(tmp)
    child += sorted(n for n in names_in(binary) if UNSEEN_IN_CHILD.match(n) and n not in child)
    both = [n for n in child if n in daemon]
    order = ([n for n in child if n not in daemon] + both
             + [n for n in daemon if n not in child])
    with open(ORDER, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{len(child)} functions in the job children, {len(daemon)} in the daemon, "
          f"{len(both)} in both: {len(order)} written to {ORDER}")


if __name__ == "__main__":
    main()
