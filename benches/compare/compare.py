#!/usr/bin/env python3
"""crond side by side with the crons it replaces, in one run, on this machine (not a test: it
asserts nothing, it prints one Markdown table).

Peers, each when it can be found:
  crond          $CROND or target/release/crond, as root (PAM through etc/pam.d/cron)
  crond-nopam    the same with --no-pam
  busybox        `busybox crond` (Debian's busybox-static)
  debian         Debian's cron 3.0pl1 in a Debian root ($DEBIAN_ROOT, default the one
                 tests/install/debian.rs bootstraps under target/tmp; made with debootstrap here if
                 missing), run with chroot in a private mount namespace
  cronie         cronie built from source by benches/compare/build-cronie.sh ($CRONIE, default
                 /var/tmp/cronie-build/src/crond), in a private mount namespace where its
                 compiled-in paths (/etc/crontab, /etc/cron.d, /var/spool/cron, /var/run, and
                 /etc/pam.d for its PAM service `crond`, Debian's `cron` service under that
                 name) are this run's directories
  floor          benches/compare/floor.c: fork and exec `sh -c` per job and nothing else
Every job of every peer runs benches/compare/stamp.c (static), which appends its start time and
its entry's index to one file; both programs are compiled (gcc) into a temporary directory.

Figures:
  1 due: start          ms after the minute boundary at which the one job due started
  N due: first / last   ms after the boundary (N = --burst, default 10,000), with how many ran
                        and how many ran twice (an entry's index seen twice)
  RSS 1,000 / 100,000   the daemon's VmRSS and VmHWM (peak) once loaded: 1,000 entries in one
                        user crontab (root's), 100,000 in ten system files of 10,000 (Debian's
                        cron ignores a longer file; busybox, which has no system files: one
                        crontab of root's)
  load CPU 100,000      the daemon's CPU (schedstat) from its start until loaded
  reload CPU            its CPU for a reload after one line of the 100,000 changed (its file is
                        replaced by a rename; busybox is also told through cron.update; Debian's
                        cron finds it at its next minute's check)

Bursts use real time: each daemon starts a few seconds before a real minute boundary, so every
burst waits for one (about 15 minutes in all at the defaults). Run as root, from anywhere:
    cargo build --release && python3 benches/compare/compare.py [--burst N] [--peers a,b]
"""

import argparse
import glob
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CROND = os.environ.get("CROND") or os.path.join(REPO, "target", "release", "crond")
# Another build of crond (an earlier commit's) to measure in the same run, as crond-before and
# crond-before-nopam.
CROND_BEFORE = os.environ.get("CROND_BEFORE")
MIRROR = "http://deb.debian.org/debian"


def codename():
    with open("/etc/os-release") as f:
        for line in f:
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return "bookworm"


CRONIE = os.environ.get("CRONIE") or "/var/tmp/cronie-build/src/crond"

DEBIAN_ROOT = os.environ.get("DEBIAN_ROOT") or os.path.join(
    REPO, "target", "tmp", f"debian-{codename()}")


def build_tools(tmp):
    stamp, floor = os.path.join(tmp, "stamp"), os.path.join(tmp, "floor")
    subprocess.run(["gcc", "-O2", "-static", "-o", stamp, os.path.join(HERE, "stamp.c")],
                   check=True)
    subprocess.run(["gcc", "-O2", "-o", floor, os.path.join(HERE, "floor.c")], check=True)
    return stamp, floor


def schedstat_ms(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def smaps_kib(pid):
    """PSS, USS (private clean + dirty) and anonymous memory from /proc/PID/smaps_rollup: what
    the machine pays for the process (RSS counts every shared library page in full)."""
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    fields[parts[0].rstrip(":")] = int(parts[1])
    except OSError:
        return None, None, None
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return fields.get("Pss"), uss, fields.get("Anonymous")


def negative_dentries():
    """The kernel's count of cached names that do not exist (/proc/sys/fs/dentry-state, the
    fifth field). A watch on a directory (crond's and cronie's inotify of /etc) walks every
    cached name under it, existing or not: on a machine where something created and removed
    many files in /etc (a test suite adding users: each leaves a lock file's name), that walk
    costs milliseconds of the start; `echo 2 > /proc/sys/vm/drop_caches` empties the cache."""
    try:
        with open("/proc/sys/fs/dentry-state") as f:
            return int(f.read().split()[4])
    except (OSError, IndexError, ValueError):
        return -1


def proactive_reclaim():
    """What DAMON is set to page out on this machine, if anything: a kdamond that is on with
    a `pageout` scheme evicts page-cache pages that have gone unused for a while, without any
    memory pressure. Pages no process maps (the files PAM reads with read(), code a job child
    ran before it exited) are then read from
    disk again by the next job after an idle minute: the "1 due" and "first start" rows
    include those reads. None when nothing is set up (or the interface is absent)."""
    root = "/sys/kernel/mm/damon/admin/kdamonds"
    found = []
    for kd in glob.glob(os.path.join(root, "[0-9]*")):
        try:
            with open(os.path.join(kd, "state")) as f:
                if f.read().strip() != "on":
                    continue
        except OSError:
            continue
        for scheme in glob.glob(os.path.join(kd, "contexts", "[0-9]*", "schemes", "[0-9]*")):
            try:
                with open(os.path.join(scheme, "action")) as f:
                    if f.read().strip() != "pageout":
                        continue
                with open(os.path.join(scheme, "access_pattern", "age", "min")) as f:
                    age = int(f.read())
                aggr = os.path.join(scheme, "..", "..", "monitoring_attrs", "intervals", "aggr_us")
                with open(aggr) as f:
                    idle_s = age * int(f.read()) / 1e6
            except (OSError, ValueError):
                continue
            found.append(f"DAMON pages out page cache idle {idle_s:.0f} s or more")
    return "; ".join(found) or None


def settle(pid, quiet_s=1.0, limit_s=60):
    """Waits until the process has used no CPU for quiet_s (it has loaded); returns its CPU."""
    end = time.time() + limit_s
    last = schedstat_ms(pid)
    still_since = time.time()
    while time.time() < end:
        time.sleep(0.1)
        now = schedstat_ms(pid)
        if now - last > 0.5:
            last, still_since = now, time.time()
        elif time.time() - still_since >= quiet_s:
            break
    return schedstat_ms(pid)


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Crond:
    """Our daemon, on a private tree of paths."""
    system_user_field = True

    def __init__(self, stamp, pam=True, binary=None):
        self.stamp, self.pam = stamp, pam
        self.binary = binary or CROND
        base = "crond-before" if binary else "crond"
        self.name = base if pam else base + "-nopam"

    def available(self):
        return os.access(self.binary, os.X_OK)

    def prepare(self):
        self.dir = tempfile.mkdtemp(prefix="compare-crond")
        for sub in ("spool", "cron.d", "pam.d", "out"):
            os.mkdir(os.path.join(self.dir, sub))
        open(os.path.join(self.dir, "crontab"), "w").close()
        shutil.copy(os.path.join(REPO, "etc", "pam.d", "cron"), os.path.join(self.dir, "pam.d"))
        for name in os.listdir("/etc/pam.d"):
            if name.startswith("common-"):
                os.symlink(os.path.join("/etc/pam.d", name),
                           os.path.join(self.dir, "pam.d", name))
        # Not beside `crontab`: the daemon watches that directory (as /etc for /etc/crontab),
        # and each job's stamp would wake it twice, which no job writing elsewhere does.
        self.starts = os.path.join(self.dir, "out", "starts")
        return self.stamp, self.starts

    def write_system(self, lines):
        for name, part in split(lines):
            self._write(os.path.join(self.dir, "cron.d", name), part, 0o644)

    def write_user(self, lines):
        self._write(os.path.join(self.dir, "spool", "root"), lines, 0o600)

    def _write(self, path, lines, mode):
        """Writes beside, then renames over: the daemon never sees half a file."""
        new = os.path.join(self.dir, "new")
        with open(new, "w") as f:
            f.writelines(lines)
        os.chmod(new, mode)
        os.rename(new, path)

    def start(self):
        args = [self.binary, "-f", "--log", "stderr", "--spool-dir", os.path.join(self.dir, "spool"),
                "--system-crontab", os.path.join(self.dir, "crontab"),
                "--cron-d", os.path.join(self.dir, "cron.d"),
                "--pid-file", os.path.join(self.dir, "pid"),
                "--reboot-marker", os.path.join(self.dir, "reboot"),
                "--pam-dir", os.path.join(self.dir, "pam.d")]
        if not self.pam:
            args.append("--no-pam")
        log = open(os.path.join(self.dir, "log"), "w")
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log,
                                env={"PATH": "/usr/bin:/bin", "TZ": "UTC"})

    def told_of_change(self):
        pass

    def write_changed(self, lines):
        """Rewrites the file holding the first line (the one changed), and only it."""
        self.write_system(lines[:FILE_LINES])

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Busybox(Crond):
    system_user_field = False

    def __init__(self, stamp):
        self.stamp, self.name = stamp, "busybox"

    def available(self):
        return shutil.which("busybox") is not None and subprocess.run(
            ["busybox", "crond", "--help"], capture_output=True).returncode in (0, 1)

    def prepare(self):
        self.dir = tempfile.mkdtemp(prefix="compare-busybox")
        os.mkdir(os.path.join(self.dir, "crontabs"))
        self.starts = os.path.join(self.dir, "starts")
        return self.stamp, self.starts

    def write_system(self, lines):
        self.write_user(lines)

    def write_user(self, lines):
        self._write(os.path.join(self.dir, "crontabs", "root"), lines, 0o600)

    def start(self):
        return subprocess.Popen(
            ["busybox", "crond", "-f", "-l", "8", "-L", os.path.join(self.dir, "log"),
             "-c", os.path.join(self.dir, "crontabs")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "TZ": "UTC", "SHELL": "/bin/sh"})

    def told_of_change(self):
        with open(os.path.join(self.dir, "crontabs", "cron.update"), "w") as f:
            f.write("root\n")

    def write_changed(self, lines):
        self.write_user(lines)


class Debian(Crond):
    """Debian's cron in a copy of a Debian root, in a private mount namespace."""

    def __init__(self, stamp):
        self.stamp, self.name = stamp, "debian"

    def available(self):
        if os.path.exists(os.path.join(DEBIAN_ROOT, "usr", "sbin", "cron")):
            return True
        if not shutil.which("debootstrap"):
            return False
        subprocess.run(["debootstrap", "--variant=minbase", "--include=cron", codename(),
                        DEBIAN_ROOT, MIRROR], check=True, capture_output=True)
        return True

    def prepare(self):
        self.dir = tempfile.mkdtemp(prefix="compare-debian", dir="/var/tmp")
        self.root = os.path.join(self.dir, "root")
        subprocess.run(["cp", "-a", DEBIAN_ROOT, self.root], check=True)
        shutil.copy(self.stamp, os.path.join(self.root, "stamp"))
        self.starts = os.path.join(self.root, "starts")
        return "/stamp", "/starts"

    def write_system(self, lines):
        for name, part in split(lines):
            self._write(os.path.join(self.root, "etc", "cron.d", name), part, 0o644)

    def write_user(self, lines):
        path = os.path.join(self.root, "var", "spool", "cron", "crontabs", "root")
        self._write(path, lines, 0o600)
        gid = next((int(l.split(":")[2]) for l in open(os.path.join(self.root, "etc", "group"))
                    if l.startswith("crontab:")), 0)
        os.chown(path, 0, gid)

    def start(self):
        script = f"mount -t proc proc '{self.root}/proc' && exec chroot '{self.root}' \"$@\""
        return subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
             "env", "TZ=UTC", "/usr/sbin/cron", "-f", "-L", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Cronie(Crond):
    """cronie built from source, its compiled-in paths bound to private ones."""
    system_user_field = True

    def __init__(self, stamp):
        self.stamp, self.name = stamp, "cronie"

    def available(self):
        return os.access(CRONIE, os.X_OK)

    def prepare(self):
        self.dir = tempfile.mkdtemp(prefix="compare-cronie")
        for sub in ("spool", "cron.d", "run", "out"):
            os.mkdir(os.path.join(self.dir, sub))
        open(os.path.join(self.dir, "crontab"), "w").close()
        # Its PAM service is `crond`: Debian's `cron` service under that name, beside the rest.
        pam = os.path.join(self.dir, "pam.d")
        shutil.copytree("/etc/pam.d", pam, symlinks=True)
        shutil.copy(os.path.join(REPO, "etc", "pam.d", "cron"), os.path.join(pam, "crond"))
        self.starts = os.path.join(self.dir, "out", "starts")
        return self.stamp, self.starts

    def write_user(self, lines):
        self._write(os.path.join(self.dir, "spool", "root"), lines, 0o600)

    def start(self):
        # The bind mounts need their mount points: a machine without a cron package has no
        # /etc/cron.d or /etc/crontab (made here, empty, if missing).
        for d in ("/var/spool/cron", "/etc/cron.d"):
            os.makedirs(d, exist_ok=True)
        if not os.path.exists("/etc/crontab"):
            open("/etc/crontab", "a").close()
        binds = [("spool", "/var/spool/cron"), ("cron.d", "/etc/cron.d"),
                 ("crontab", "/etc/crontab"), ("run", "/run"), ("pam.d", "/etc/pam.d")]
        script = " && ".join(f"mount --bind '{os.path.join(self.dir, mine)}' '{theirs}'"
                             for mine, theirs in binds) + ' && exec "$@"'
        return subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
             "env", "TZ=UTC", CRONIE, "-n", "-m", "off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})


# Debian's cron ignores a crontab of more than 10,000 lines ("crontab must not be longer than
# 10000 lines, this crontab file will be ignored"): system entries go in files of 10,000.
FILE_LINES = 10_000


def split(lines):
    """(file name, lines) for each file of at most FILE_LINES lines."""
    return [(f"bench{i // FILE_LINES}", lines[i:i + FILE_LINES])
            for i in range(0, len(lines), FILE_LINES)]


def boundary_ahead(lead_s):
    now = time.time()
    b = (int(now) // 60 + 1) * 60
    if b - now < lead_s:
        b += 60
    return b


def read_starts(path):
    try:
        with open(path) as f:
            rows = [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return [], 0
    times = sorted(float(r[0]) for r in rows)
    indexes = [r[1] for r in rows]
    return times, len(indexes) - len(set(indexes))


def burst(peer, n, lead_s=8):
    """Runs one burst of n jobs due at a real minute boundary; returns the figures."""
    stamp, starts = peer.prepare()
    b = boundary_ahead(lead_s + 2)
    t = time.gmtime(b)
    user = " root" if peer.system_user_field else ""
    peer.write_system([f"{t.tm_min} {t.tm_hour} * * *{user} {stamp} {starts} {i}\n"
                       for i in range(n)])
    time.sleep(max(0, b - lead_s - time.time()))
    p = peer.start()
    wait_starts(peer.starts, n, b)
    times, twice = read_starts(peer.starts)
    # The daemon's size once the burst is over: what running the jobs left mapped.
    settle(p.pid, quiet_s=2.0, limit_s=60)
    pss_after, _, _ = smaps_kib(p.pid)
    stop(p)
    peer.cleanup()
    return {**figures(times, twice, b), "pss_after": pss_after}


def floor_burst(floor, stamp, n):
    d = tempfile.mkdtemp(prefix="compare-floor")
    starts = os.path.join(d, "starts")
    b = boundary_ahead(3)
    subprocess.run([floor, str(b), str(n), stamp, starts], check=True)
    times, twice = read_starts(starts)
    shutil.rmtree(d)
    return figures(times, twice, b)


def wait_starts(path, n, boundary):
    last, last_change = -1, time.time()
    while time.time() < boundary + 180:
        time.sleep(0.5)
        count = len(read_starts(path)[0])
        if count >= n:
            return
        if count != last:
            last, last_change = count, time.time()
        elif count > 0 and time.time() - last_change > 15:
            return


def figures(times, twice, b):
    if not times:
        return {"ran": 0, "twice": twice, "first": None, "last": None}
    return {"ran": len(times), "twice": twice, "first": (times[0] - b) * 1000,
            "last": (times[-1] - b) * 1000}


def memory(peer):
    """RSS with 1,000 and 100,000 entries, load CPU and the reload of one changed line."""
    out = {}
    stamp, _ = peer.prepare()
    peer.write_user([f"{i % 60} {(i // 60) % 24} 1 1 * /bin/true job{i}\n" for i in range(1000)])
    p = peer.start()
    time.sleep(1)
    settle(p.pid)
    out["rss1k"], out["hwm1k"] = status_kib(p.pid, "VmRSS"), status_kib(p.pid, "VmHWM")
    out["pss1k"], out["uss1k"], out["anon1k"] = smaps_kib(p.pid)
    stop(p)
    peer.cleanup()

    lines, p, out["load"] = load_100k(peer, 20)
    out["rss100k"], out["hwm100k"] = status_kib(p.pid, "VmRSS"), status_kib(p.pid, "VmHWM")
    before = schedstat_ms(p.pid)
    lines[0] = "1" + lines[0][1:]
    peer.write_changed(lines)
    peer.told_of_change()
    # Wait for the reload to start (Debian's and busybox's crons look once a minute), then
    # for it to end.
    end = time.time() + 75
    while time.time() < end and schedstat_ms(p.pid) - before < 5:
        time.sleep(0.2)
    out["reload"] = settle(p.pid, quiet_s=2.0) - before
    stop(p)
    peer.cleanup()
    out["load_long"], out["rss100k_long"] = long_command_load(peer)
    if isinstance(peer, Crond) and not isinstance(peer, (Busybox, Debian)):
        # crond and cronie: one system file of 100,000 lines.
        out["reload1"] = single_file_reload(peer, lines)
    elif isinstance(peer, Busybox):
        # Busybox's crontab is one file already: its reload above is of a single file.
        out["reload1"] = out["reload"]
    return out


def load_100k(peer, width):
    """Starts the peer on 100,000 entries whose commands are `width` bytes (`/bin/true 12345
    xxxx`, padded), due on 1 January: the lines, the process, and its CPU once it has loaded."""
    peer.prepare()
    user = " root" if peer.system_user_field else ""
    lines = [f"{i % 60} {(i // 60) % 24} 1 1 *{user} " + f"/bin/true {i} ".ljust(width, "x")
             + "\n" for i in range(100_000)]
    peer.write_system(lines)
    p = peer.start()
    time.sleep(0.5)
    return lines, p, settle(p.pid, quiet_s=2.0)


def long_command_load(peer):
    """CPU to start and load 100,000 entries whose commands are 110 bytes (the ones above are
    20), and the RSS after."""
    _, p, load = load_100k(peer, 110)
    rss = status_kib(p.pid, "VmRSS")
    stop(p)
    peer.cleanup()
    return load, rss


def single_file_reload(peer, lines):
    """crond's reload of one changed line in a single 100,000-line /etc/cron.d file (Debian's
    cron refuses such a file; busybox's one crontab is one anyway)."""
    peer.prepare()
    peer._write(os.path.join(peer.dir, "cron.d", "single"), lines, 0o644)
    p = peer.start()
    time.sleep(0.5)
    settle(p.pid, quiet_s=2.0)
    before = schedstat_ms(p.pid)
    lines = list(lines)
    lines[0] = "2" + lines[0][1:]
    peer._write(os.path.join(peer.dir, "cron.d", "single"), lines, 0o644)
    # cronie, like Debian's cron, rereads at its next minute's check.
    end = time.time() + 75
    while time.time() < end and schedstat_ms(p.pid) - before < 5:
        time.sleep(0.2)
    used = settle(p.pid, quiet_s=2.0) - before
    stop(p)
    peer.cleanup()
    # No CPU spent: it did not reload (or refused the file).
    return used if used >= 5 else None


def cell(value, fmt="{:.0f}"):
    return "–" if value is None else fmt.format(value)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst", type=int, default=10_000)
    ap.add_argument("--peers", default="crond,crond-nopam,busybox,debian,cronie,floor")
    ap.add_argument("--only", default="burst,memory")
    ap.add_argument("--repeat", type=int, default=1,
                    help="bursts of --burst jobs per peer, alternating; the median is shown")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: jobs run as root and Debian's cron runs in a chroot")
    started = time.time()
    negative_dentries_at_start = negative_dentries()
    reclaim = proactive_reclaim()
    tmp = tempfile.mkdtemp(prefix="compare-tools")
    stamp, floor = build_tools(tmp)
    wanted = args.peers.split(",")
    peers = [Crond(stamp), Crond(stamp, pam=False), Busybox(stamp), Debian(stamp),
             Cronie(stamp)]
    if CROND_BEFORE:
        peers += [Crond(stamp, binary=CROND_BEFORE), Crond(stamp, pam=False, binary=CROND_BEFORE)]
    peers = [p for p in peers if p.name in wanted]
    names = [p.name for p in peers]
    missing = [p.name for p in peers if not p.available()]
    peers = [p for p in peers if p.name not in missing]
    results = {p.name: {} for p in peers}
    if "floor" in wanted:
        results["floor"] = {}
        names.append("floor")
    if "burst" in args.only:
        many = {p.name: [] for p in peers}
        if "floor" in wanted:
            results["floor"]["one"] = floor_burst(floor, stamp, 1)
            many["floor"] = []
        for r in range(args.repeat):
            # Every other round in the reverse order: no peer always runs first. The floor's
            # burst runs in each round too: the ratios divide by a median, not by one run.
            for p in (peers if r % 2 == 0 else peers[::-1]):
                if r == 0:
                    results[p.name]["one"] = burst(p, 1)
                many[p.name].append(burst(p, args.burst))
            if "floor" in many:
                many["floor"].append(floor_burst(floor, stamp, args.burst))
        for name, runs in many.items():
            # The run with the median last start stands for the peer.
            runs.sort(key=lambda f: f["last"] if f["last"] is not None else float("inf"))
            results[name]["many"] = runs[(len(runs) - 1) // 2]
    if "memory" in args.only:
        for p in peers:
            if p.name != "crond-nopam":
                results[p.name].update(memory(p))
    shutil.rmtree(tmp)

    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {os.cpu_count()} cores"
          f" ({cpu}), Linux {platform.release()}; `python3 benches/compare/compare.py "
          f"{' '.join(sys.argv[1:])}` took {(time.time() - started) / 60:.0f} min;"
          f" {negative_dentries_at_start:,} negative dentries cached at the start"
          + (f"; {reclaim}" if reclaim else ""))
    if missing:
        print(f"not found: {', '.join(missing)}")
    print()
    shown = [n for n in names if n not in missing]
    print("| figure | " + " | ".join(shown) + " | crond ÷ best peer |")
    print("|---|" + "---|" * (len(shown) + 1))

    def row(label, get, fmt="{:.0f}", lower_is_better=True, peers_only=True):
        values = {n: get(results.get(n, {})) for n in shown}
        others = [v for n, v in values.items()
                  if v is not None and not n.startswith("crond") and (n != "floor" or not peers_only)]
        ratio = "–"
        if values.get("crond") is not None and others:
            best = min(others) if lower_is_better else max(others)
            ratio = f"{values['crond'] / best:.2f}" if best else "–"
        print(f"| {label} | " + " | ".join(cell(values[n], fmt) for n in shown) + f" | {ratio} |")

    g = lambda key, f: (lambda r: r.get(key, {}).get(f) if isinstance(r.get(key), dict) else None)
    row("1 due: start, ms", g("one", "first"), "{:.1f}")
    row(f"{args.burst:,} due: first start, ms", g("many", "first"), "{:.1f}")
    row(f"{args.burst:,} due: last start, ms", g("many", "last"))
    row(f"{args.burst:,} due: last start ÷ floor's", lambda r: (
        r["many"]["last"] / results["floor"]["many"]["last"]
        if r.get("many", {}).get("last") and results.get("floor", {}).get("many", {}).get("last")
        else None), "{:.2f}")
    print(f"| {args.burst:,} due: ran / ran twice | " + " | ".join(
        f"{results.get(n, {}).get('many', {}).get('ran', '–')} / "
        f"{results.get(n, {}).get('many', {}).get('twice', '–')}" for n in shown) + " | |")
    row("RSS, 1,000 entries, KiB", lambda r: r.get("rss1k"))
    row("PSS, 1,000 entries, KiB", lambda r: r.get("pss1k"))
    row("USS, 1,000 entries, KiB", lambda r: r.get("uss1k"))
    row("anonymous, 1,000 entries, KiB", lambda r: r.get("anon1k"))
    row(f"PSS after the {args.burst:,} due have started, KiB", g("many", "pss_after"))
    row("RSS, 100,000 entries, KiB", lambda r: r.get("rss100k"))
    row("peak RSS, 100,000 entries, KiB", lambda r: r.get("hwm100k"))
    row("CPU to start and load 100,000 (20-byte commands), ms", lambda r: r.get("load"))
    row("CPU to start and load 100,000 (110-byte commands), ms", lambda r: r.get("load_long"))
    row("RSS, 100,000 entries (110-byte commands), KiB", lambda r: r.get("rss100k_long"))
    row("reload CPU, one line of 100,000 changed, ms", lambda r: r.get("reload"))
    row("reload CPU, one line of a single 100,000-line file, ms", lambda r: r.get("reload1"))


if __name__ == "__main__":
    main()
