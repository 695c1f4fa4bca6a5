#!/usr/bin/env python3
"""Benchmark of the real crond daemon (not a test: it asserts nothing, it prints figures).

1. burst: N entries (default 10,000) all due at one minute. The daemon starts in real time a
   few seconds before a real minute boundary (this waits up to a minute); each job appends its
   start time (date +%s.%N) to one file. Prints the delay from the boundary to the first and
   the last job start, and how many ran.
2. idle: 1,000 and 100,000 entries with nothing due for days. RSS after loading, and CPU used
   per (fake) minute over 30 fake minutes with libfaketime at x60; once with inotify and TZ set
   (the timer sleeps until the next due minute, so nothing wakes), once with inotify and the
   zone from /etc/localtime (a wake and a stat of the zone file every minute), once with -i (a
   wake and an mtime check every minute).

3. --notify N: bursts of N jobs (shipped PAM) in turn without and with `CRON_NOTIFY=failure`
   at the top of the file (no job fails), twice. --ping N: the same without and with
   `CRON_PING` (each run's start and success pinged) to an HTTP server on loopback that this
   script runs, with the pings it received. Each burst prints the daemon's CPU (schedstat)
   from its start to the end of the burst.

4. --pam-cost N: only N jobs through the shipped PAM service (etc/pam.d/cron with this machine's
   common-* files), then N with --no-pam; the job children's CPU per job says what PAM costs.

5. --memory: only the sizes and the load and reload costs, in real time (no waiting): RSS and
   peak (VmHWM) after loading 1,000 entries (one user crontab) and 100,000 (one /etc/cron.d
   file), the daemon's CPU to start and load the 100,000, and its CPU to reload after one line
   of that file changed (from /proc/PID/schedstat, in ns).

Run as root (jobs run as root from /etc/cron.d-format files), from the repository:
    cargo build --release && sudo python3 benches/daemon/bench.py [--burst N]
or, for another build:
    sudo CROND=/path/to/crond python3 benches/daemon/bench.py
"""

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
# $CROND picks another build (e.g. an older commit's, to compare two in one run).
CROND = os.environ.get("CROND") or os.path.join(
    os.path.dirname(__file__), "..", "..", "target", "release", "crond")


def tree():
    d = tempfile.mkdtemp(prefix="crond-bench")
    for sub in ("spool", "cron.d", "out", "state"):
        os.mkdir(os.path.join(d, sub))
    open(os.path.join(d, "crontab"), "w").close()
    os.chmod(d, 0o755)
    return d


def start(d, env_extra=None, args=()):
    env = {"PATH": "/usr/bin:/bin", "TZ": "UTC"}
    env.update(env_extra or {})
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen(
        [CROND, "-f", "--log", "stderr",
         "--spool-dir", os.path.join(d, "spool"),
         "--system-crontab", os.path.join(d, "crontab"),
         "--cron-d", os.path.join(d, "cron.d"),
         "--pid-file", os.path.join(d, "pid"),
         "--reboot-marker", os.path.join(d, "reboot"),
         "--state-dir", os.path.join(d, "state"), *args],
        stdout=subprocess.DEVNULL, stderr=log, env=env)
    return p


def wait_log(d, needle, secs=120):
    end = time.time() + secs
    while time.time() < end:
        with open(os.path.join(d, "log")) as f:
            if needle in f.read():
                return
        time.sleep(0.05)
    raise SystemExit(f"no {needle!r} in the log")


def write_cron_d(d, lines):
    path = os.path.join(d, "cron.d", "bench")
    with open(path, "w") as f:
        f.writelines(lines)
    os.chmod(path, 0o644)


def cpu_ns(pid):
    # schedstat's first field: nanoseconds on a CPU (utime+stime have 10 ms ticks only).
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def rss_kib(pid, field="VmRSS"):
    """A size from /proc/PID/status in KiB: VmRSS now, or VmHWM (the peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def children_cpu_ms(pid):
    """CPU of the daemon's reaped children (cutime + cstime of /proc/PID/stat), in ms: every job
    child and what it waited for."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[13]) + int(fields[14])) * 1000 / ticks


def pam_dir(d):
    """The shipped PAM service and links to the system's common-* files, as the tests set up."""
    pd = os.path.join(d, "pam.d")
    os.mkdir(pd)
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "etc", "pam.d", "cron"), pd)
    for name in os.listdir("/etc/pam.d"):
        if name.startswith("common-"):
            os.symlink(os.path.join("/etc/pam.d", name), os.path.join(pd, name))
    return pd


# The history writer for `--history on` (by default the cronctl beside $CROND).
CRONCTL = os.environ.get("CRONCTL") or os.path.join(os.path.dirname(CROND), "cronctl")


def recorded(store):
    """Outcomes in the store (the sqlite3 command, read-only); -1 when it can't be read."""
    r = subprocess.run(["sqlite3", "-readonly", "-cmd", ".timeout 2000", store,
                        "SELECT count(*) FROM runs"], capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else -1


def ping_server():
    """An HTTP server on loopback in a thread that answers 200 and counts the requests: (port,
    a function giving the count)."""
    import http.server
    import threading
    seen = [0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with lock:
                seen[0] += 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], lambda: seen[0]


def burst(n, pam=None, history="off", head="", pings=None):
    """pam: None (the daemon's default: /etc/pam.d/cron), "shipped" (etc/pam.d/cron through
    --pam-dir) or "off" (--no-pam); history: "off" (--history off) or "on" (a store in the
    tree, written by $CRONCTL); head: lines at the top of the file (variables); pings: the
    count function of the server the head's CRON_PING names."""
    d = tree()
    args = []
    if pam == "shipped":
        args = ["--pam-dir", pam_dir(d)]
    elif pam == "off":
        args = ["--no-pam"]
    store = os.path.join(d, "history.db")
    if history == "on":
        args += ["--history", store, "--history-writer", CRONCTL]
    else:
        args += ["--history", "off"]
    starts = os.path.join(d, "out", "starts")
    # Wait so that the daemon starts 5 s before a real minute boundary.
    now = time.time()
    boundary = (int(now) // 60 + 1) * 60
    if boundary - now < 8:
        boundary += 60
    # Every entry is due at the boundary's minute (UTC).
    minute, hour = time.gmtime(boundary).tm_min, time.gmtime(boundary).tm_hour
    write_cron_d(d, [head] + [f"{minute} {hour} * * * root date +\\%s.\\%N >> {starts}\n"
                              for _ in range(n)])
    time.sleep(max(0, boundary - 5 - time.time()))
    p = start(d, args=args)
    wait_log(d, "entries loaded")
    # Wait for every job to have written its line (or 120 s).
    end = boundary + 120
    count = 0
    while time.time() < end:
        time.sleep(1)
        try:
            with open(starts) as f:
                count_now = sum(1 for _ in f)
        except FileNotFoundError:
            count_now = 0
        if count_now == n or (count_now == count and count_now > 0 and time.time() > boundary + 5):
            count = count_now
            break
        count = count_now
    with open(starts) as f:
        times = sorted(float(x) for x in f.read().split())
    lag = ""
    if history == "on":
        # How long after the last start every run is in the store.
        while recorded(store) < len(times) and time.time() < times[-1] + 60:
            time.sleep(0.1)
        lag = (f"; all {recorded(store)} recorded {time.time() - times[-1]:.1f} s after "
               f"the last start")
    time.sleep(2)  # the last job children exit and are reaped
    if pings:
        # Each run sends two (its start and its success; the default policy is `always`),
        # from helpers that do not hold the job up.
        while pings() < 2 * len(times) and time.time() < times[-1] + 60:
            time.sleep(0.2)
        lag += f"; {pings()} pings received"
    child_ms = children_cpu_ms(p.pid)
    daemon_ms = cpu_ns(p.pid) / 1e6
    p.send_signal(signal.SIGTERM)
    p.wait()
    with open(os.path.join(d, "log")) as f:
        postponed = [l for l in f if "not started last minute" in l]
    label = {None: "", "shipped": " (PAM: etc/pam.d/cron)", "off": " (--no-pam)"}[pam]
    label += f" (history {history})"
    if head:
        label += " (" + head.strip().replace("\n", "; ") + ")"
    print(f"burst{label}: {n} entries due at {time.strftime('%H:%M', time.gmtime(boundary))} UTC: "
          f"{len(times)} ran; first start +{(times[0] - boundary) * 1000:.1f} ms, "
          f"last start +{(times[-1] - boundary) * 1000:.1f} ms after the boundary; "
          f"postponed-log lines: {len(postponed)}; job children's CPU "
          f"{child_ms / max(len(times), 1):.2f} ms per job; the daemon's CPU "
          f"{daemon_ms:.0f} ms{lag}")
    shutil.rmtree(d)


def idle(n, args=(), zone_file=False):
    d = tree()
    # Each entry fires once a year, on January 1st; the fake clock is in November.
    write_cron_d(d, [f"{i % 60} {(i // 60) % 24} 1 1 * root true\n" for i in range(n)])
    fake = {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "@2026-11-21 10:00:00 x60",
            "FAKETIME_DONT_RESET": "1"}
    if zone_file:
        fake["TZ"] = ""
        args = [*args, "--localtime", "/etc/localtime"]
    t0 = time.time()
    p = start(d, fake, args)
    wait_log(d, "entries loaded")
    load_s = time.time() - t0
    time.sleep(0.5)
    rss = rss_kib(p.pid)
    c0, w0 = cpu_ns(p.pid), time.time()
    time.sleep(30)  # 30 fake minutes at x60
    c1, w1 = cpu_ns(p.pid), time.time()
    fake_minutes = (w1 - w0) * 60 / 60
    cpu_ms_per_min = (c1 - c0) / 1e6 / fake_minutes
    p.send_signal(signal.SIGTERM)
    p.wait()
    mode = "-i" if "-i" in args else "inotify"
    mode += ", zone file" if zone_file else ", TZ"
    print(f"idle ({mode}): {n} entries: loaded in {load_s:.2f} s; RSS {rss} KiB; "
          f"CPU {cpu_ms_per_min:.3f} ms per minute over {fake_minutes:.0f} fake minutes "
          f"({(c1 - c0) / 1e6:.3f} ms in all)")
    shutil.rmtree(d)


def schedstat_ms(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def memory():
    for n in (1_000, 100_000):
        d = tree()
        if n == 1_000:
            path = os.path.join(d, "spool", "root")
            with open(path, "w") as f:
                f.writelines(f"{i % 60} {(i // 60) % 24} 1 1 * /usr/bin/true job{i}\n"
                             for i in range(n))
            os.chmod(path, 0o600)
            where = "one user crontab"
        else:
            lines = [f"{i % 60} {(i // 60) % 24} 1 1 * root true {i}\n" for i in range(n)]
            write_cron_d(d, lines)
            where = "one cron.d file"
        p = start(d)
        wait_log(d, "entries loaded")
        time.sleep(1)
        load_ms = schedstat_ms(p.pid)
        rss, hwm = rss_kib(p.pid), rss_kib(p.pid, "VmHWM")
        line = (f"memory: {n} entries ({where}): RSS {rss} KiB, peak {hwm} KiB; "
                f"CPU to start and load {load_ms:.0f} ms")
        if n == 100_000:
            # One line changed (its minute), the file replaced by a rename, as an editor does.
            lines[0] = "1" + lines[0][1:]
            c0 = schedstat_ms(p.pid)
            new = os.path.join(d, "bench.new")
            with open(new, "w") as f:
                f.writelines(lines)
            os.chmod(new, 0o644)
            os.rename(new, os.path.join(d, "cron.d", "bench"))
            wait_log(d, "RELOAD")
            time.sleep(1.5)
            line += (f"; one line changed: reload CPU {schedstat_ms(p.pid) - c0:.0f} ms, "
                     f"RSS after {rss_kib(p.pid)} KiB")
        print(line)
        p.send_signal(signal.SIGTERM)
        p.wait()
        shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst", type=int, default=10_000)
    ap.add_argument("--skip-burst", action="store_true")
    ap.add_argument("--pam-cost", type=int, metavar="N",
                    help="only: N jobs through the shipped PAM service, then with --no-pam")
    ap.add_argument("--memory", action="store_true", help="only: sizes, load and reload costs")
    ap.add_argument("--notify", type=int, metavar="N",
                    help="only: N jobs without and with CRON_NOTIFY=failure, in turn")
    ap.add_argument("--ping", type=int, metavar="N",
                    help="only: N jobs without and with CRON_PING to a server on loopback")
    ap.add_argument("--history", type=int, metavar="N",
                    help="only: N jobs (shipped PAM) with the history off, then on, in turn")
    args = ap.parse_args()
    if args.memory:
        memory()
        return
    if args.history:
        for _ in range(2):
            burst(args.history, "shipped", "off")
            burst(args.history, "shipped", "on")
        return
    if args.notify:
        for _ in range(2):
            burst(args.notify, "shipped")
            burst(args.notify, "shipped", head="CRON_NOTIFY=failure\n")
        return
    if args.ping:
        port, count = ping_server()
        for _ in range(2):
            burst(args.ping, "shipped")
            seen = count()
            head = f"CRON_PING=http://127.0.0.1:{port}/check\n"
            burst(args.ping, "shipped", head=head, pings=lambda: count() - seen)
        return
    if args.pam_cost:
        burst(args.pam_cost, "shipped")
        burst(args.pam_cost, "off")
        return
    if not args.skip_burst:
        burst(args.burst)
    for n in (1_000, 100_000):
        idle(n)
        idle(n, zone_file=True)
        # Without inotify the daemon wakes every minute to compare mtimes (Debian's check).
        idle(n, ["-i"])


if __name__ == "__main__":
    main()
