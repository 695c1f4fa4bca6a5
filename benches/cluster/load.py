#!/usr/bin/env python3
"""What cluster mode costs at the minute boundary, and at load: one /etc/cron.d-style file of N entries `* * * * *` under
CRON_CLUSTER, due at one minute, run three ways in one invocation, each at a real minute
boundary (no faketime), against one private PostgreSQL on a Unix socket:

  local    one crond, the file without CRON_CLUSTER (the baseline)
  one      one crond in cluster mode
  two      two crond in cluster mode (two hosts on this machine, each its own tree and name)

Each job is benches/compare/stamp.c writing its start time and index to the file its host's
crontab names (`$OUT`: an environment line, so the entries are the same entries on both hosts).
For each way: how many of the N ran, how many ran twice, the first and last start in ms after
the boundary, the share each host ran, and last start / the local last start.

    sudo benches/cluster/load.py [--entries N] [--pam] [--only local,one,two] [--kill-after S]

With --kill-after S, the `two` way is a fault: S seconds after the boundary the second host's
crond, its helper and every job of it get SIGKILL (a host that dies), and the count waits 87 s:
`lost` runs never ran on any host, `unknown` runs are those the database ended as unknown (the
dead host had marked them started; some of them ran before the kill). At most 64 runs of a
host are marked started and not forked, so lost ≤ 64. With --rerun as well, the entries have
CRON_CLUSTER_RERUN=unknown: each unknown run is started again by the other host as attempt 2
(`again` in the printed dict), so none is lost, and `twice` counts those that had run before
the kill.

Needs root, gcc, Debian's postgresql, and target/release/{crond,cronctl} (cargo build
--release; --debug for target/debug). About a minute per way.
"""
import argparse, glob, os, shutil, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_pg(work):
    bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    data, sock = os.path.join(work, "pg"), os.path.join(work, "sock")
    os.makedirs(sock)
    shutil.chown(work, "postgres")
    shutil.chown(sock, "postgres")
    run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run_as + [f"{bindir}/initdb", "-A", "trust", "-U", "postgres", "-D", data],
                   check=True, stdout=subprocess.DEVNULL, cwd=work)
    port = free_port()
    opts = f"-k {sock} -p {port} -c listen_addresses=''"
    subprocess.run(run_as + [f"{bindir}/pg_ctl", "-w", "-D", data, "-o", opts, "-l",
                             os.path.join(work, "pg.log"), "start"],
                   check=True, stdout=subprocess.DEVNULL, cwd=work)
    return bindir, data, f"host={sock} port={port} dbname=postgres user=postgres"


def host_tree(work, name, stamp, entries, clustered, rerun=False, at=None):
    """A host's tree and the file its jobs stamp; `at`: the one minute (Unix seconds) the
    entries are due, else every minute."""
    tree = tempfile.mkdtemp(dir=work, prefix=name + "-")
    for d in ("spool", "cron.d", "out", "state"):
        os.makedirs(os.path.join(tree, d))
    open(os.path.join(tree, "crontab"), "w").close()
    out = os.path.join(tree, "out", "stamps")
    lines = [f"OUT={out}"] + (["CRON_CLUSTER=bench"] if clustered else [])
    lines += ["CRON_CLUSTER_RERUN=unknown"] if rerun else []
    when = "* * * * *" if at is None else time.strftime("%M %H %d %m *", time.gmtime(at))
    lines += [f"{when} root {stamp} $OUT {k}" for k in range(entries)]
    tab = os.path.join(tree, "cron.d", "bench")
    with open(tab, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tab, 0o644)
    return tree, out


def crond_args(bins, tree, pam):
    args = [os.path.join(bins, "crond"), "-f", "--log", "stderr", "-m", "off",
            "--spool-dir", f"{tree}/spool", "--system-crontab", f"{tree}/crontab",
            "--cron-d", f"{tree}/cron.d", "--pid-file", f"{tree}/out/pid",
            "--reboot-marker", f"{tree}/out/reboot", "--state-dir", f"{tree}/state"]
    return args if pam else args + ["--no-pam"]


def kill_host(pid):
    """SIGKILL to a crond and all its descendants, its helper first (no lease given back)."""
    def children(p):
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                return [int(c) for c in f.read().split()]
        except OSError:
            return []

    def cmdline(p):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                return f.read()
        except OSError:
            return b""
    todo, family = [pid], []
    while todo:
        p = todo.pop()
        family.append(p)
        todo.extend(children(p))
    helpers = [p for p in family if b"\0helper\0" in cmdline(p)]
    for p in helpers + [pid] + [p for p in family if p not in helpers and p != pid]:
        try:
            os.kill(p, 9)
        except OSError:
            pass


def psql(conninfo, sql):
    return subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-XAtq", "-d", conninfo,
                           "-c", sql], check=True, capture_output=True, text=True).stdout.strip()


def one_way(work, bins, stamp, entries, conninfo, hosts, pam, kill_after=None, rerun=False):
    # Start 15 s before a boundary: time to load and connect. With a kill the entries are due at
    # that minute only, so that every run the count sees (runs taken over late, started again)
    # is of that minute.
    now = time.time()
    wait = (60 - now % 60) - 15
    wait = wait if wait > 0 else wait + 60
    at = None if kill_after is None else round(now + wait + 15)
    trees = [host_tree(work, f"host{h}", stamp, entries, conninfo is not None, rerun, at)
             for h in range(hosts)]
    time.sleep(max(0.0, now + wait - time.time()))
    daemons = []
    for h, (tree, _) in enumerate(trees):
        args = crond_args(bins, tree, pam)
        if conninfo:
            args += ["--cluster-db", conninfo, "--cluster-host", f"host{h}",
                     "--cluster-helper", os.path.join(bins, "cronctl")]
        log = open(os.path.join(tree, "out", "log"), "w")
        daemons.append(subprocess.Popen(args, stderr=log))
    boundary = (int(time.time()) // 60 + 1) * 60
    deadline = boundary + (87 if kill_after is not None else 55)
    per_host = [[] for _ in trees]
    if kill_after is not None:
        time.sleep(max(0.0, boundary + kill_after - time.time()))
        kill_host(daemons[-1].pid)
    while time.time() < deadline:
        time.sleep(0.5)
        per_host = [[l.split() for l in open(out)] if os.path.exists(out) else []
                    for _, out in trees]
        if kill_after is None and sum(map(len, per_host)) >= entries:
            time.sleep(1.0)  # a run twice would come after the last first run
            per_host = [[l.split() for l in open(out)] if os.path.exists(out) else []
                        for _, out in trees]
            break
    for d in daemons:
        d.terminate()
    for d in daemons:
        d.wait()
    # Without a kill the entries are due every minute: the first minute's runs only.
    if kill_after is None:
        per_host = [[(t, k) for t, k in rows if float(t) < boundary + 60] for rows in per_host]
    ks = [k for rows in per_host for _, k in rows]
    times = [float(t) for rows in per_host for t, _ in rows]
    not_run = entries - len(set(ks))
    twice = len(ks) - len(set(ks))
    first = (min(times) - boundary) * 1000 if times else float("nan")
    last = (max(times) - boundary) * 1000 if times else float("nan")
    shares = [len(rows) for rows in per_host]
    give_up = sum(open(os.path.join(t, "out", "log")).read().count("not run") for t, _ in trees)
    unknown = again = None
    if kill_after is not None:
        unknown = int(psql(conninfo, "SELECT count(*) FROM crond_runs WHERE reason = 'unknown' "
                                     f"AND minute = to_timestamp({boundary})"))
        again = int(psql(conninfo, "SELECT count(*) FROM crond_runs WHERE attempt = 2 "
                                   f"AND minute = to_timestamp({boundary})"))
        # The minute's rows by attempt, reason, started and ended: where lost runs stand.
        print(psql(conninfo, "SELECT attempt, coalesce(reason, '-'), started IS NOT NULL, "
                             "ended IS NOT NULL, count(*) FROM crond_runs "
                             f"WHERE minute = to_timestamp({boundary}) GROUP BY 1, 2, 3, 4"),
              flush=True)
    return dict(ran=len(set(ks)), not_run=not_run, twice=twice, first=first, last=last,
                shares=shares, not_run_lines=give_up, unknown=unknown, again=again)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--pam", action="store_true", help="jobs through PAM (default --no-pam)")
    ap.add_argument("--debug", action="store_true", help="target/debug binaries")
    ap.add_argument("--only", default="local,one,two")
    ap.add_argument("--kill-after", type=float, help="kill the second host S s after the minute")
    ap.add_argument("--rerun", action="store_true",
                    help="the entries with CRON_CLUSTER_RERUN=unknown (with --kill-after)")
    ap.add_argument("--bins", help="the directory of crond and cronctl (default target/release)")
    a = ap.parse_args()
    bins = a.bins or os.path.join(ROOT, "target", "debug" if a.debug else "release")
    work = tempfile.mkdtemp(prefix="crond-cluster-load-")
    os.chmod(work, 0o755)
    stamp = os.path.join(work, "stamp")
    subprocess.run(["gcc", "-O2", "-static", "-o", stamp,
                    os.path.join(ROOT, "benches/compare/stamp.c")], check=True)
    bindir, data, conninfo = start_pg(work)
    try:
        results = {}
        for way in a.only.split(","):
            if way == "local":
                results[way] = one_way(work, bins, stamp, a.entries, None, 1, a.pam)
            elif way == "one":
                results[way] = one_way(work, bins, stamp, a.entries, conninfo, 1, a.pam)
            elif way == "two":
                results[way] = one_way(work, bins, stamp, a.entries, conninfo, 2, a.pam,
                                       a.kill_after, a.rerun)
            print(way, results[way], flush=True)
        base = results.get("local", {}).get("last")
        print(f"\n{a.entries} cluster entries due at one minute, ms after the boundary "
              f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
              f"{'PAM' if a.pam else '--no-pam'})")
        print("| way | ran | not run | twice | unknown | first | last | last ÷ local | shares |")
        print("|---|---|---|---|---|---|---|---|---|")
        for way, r in results.items():
            ratio = f"{r['last'] / base:.2f}" if base else ""
            shares = " / ".join(f"{s * 100 / a.entries:.1f} %" for s in r["shares"])
            unknown = "" if r["unknown"] is None else r["unknown"]
            print(f"| {way} | {r['ran']} | {r['not_run']} | {r['twice']} | {unknown} | "
                  f"{r['first']:.0f} | "
                  f"{r['last']:.0f} | {ratio} | {shares} |")
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", f"{bindir}/pg_ctl", "-D", data,
                        "-m", "immediate", "stop"], stdout=subprocess.DEVNULL, cwd=work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
