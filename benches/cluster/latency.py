#!/usr/bin/env python3
"""What cluster mode adds at the minute boundary (issue 15): the same N entries run by crond
once as local entries and once under CRON_CLUSTER=bench with a private PostgreSQL on a Unix
socket (claims and starts through `cronctl helper`), in real time, one after the other in one
invocation. Each job is benches/compare/stamp.c, which appends its start time; the table shows
the first and the last start in ms after the boundary, and the ratio cluster/local.

    sudo benches/cluster/latency.py [--entries N] [--rounds R]

Needs root, gcc, Debian's postgresql (initdb, pg_ctl under /usr/lib/postgresql/*/bin), and
target/debug/{crond,cronctl} (cargo build). Each round waits for a real minute boundary.
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
    opts = f"-k {sock} -p {port} -c listen_addresses='' -c fsync=off"
    subprocess.run(run_as + [f"{bindir}/pg_ctl", "-w", "-D", data, "-o", opts, "-l",
                             os.path.join(work, "pg.log"), "start"],
                   check=True, stdout=subprocess.DEVNULL, cwd=work)
    return bindir, data, f"host={sock} port={port} dbname=postgres user=postgres"


def one_round(work, stamp, entries, conninfo):
    tree = tempfile.mkdtemp(dir=work)
    for d in ("spool", "cron.d", "out", "state"):
        os.makedirs(os.path.join(tree, d))
    open(os.path.join(tree, "crontab"), "w").close()
    out = os.path.join(tree, "out", "stamps")
    lines = ["CRON_CLUSTER=bench"] if conninfo else []
    lines += [f"* * * * * {stamp} {out} {k}" for k in range(entries)]
    tab = os.path.join(tree, "spool", "root")
    with open(tab, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tab, 0o600)
    # Start 10 s before a boundary.
    now = time.time()
    wait = (60 - now % 60) - 10
    time.sleep(wait if wait > 0 else wait + 60)
    args = [os.path.join(ROOT, "target/debug/crond"), "-f", "--log", "stderr", "--no-pam",
            "--spool-dir", f"{tree}/spool", "--system-crontab", f"{tree}/crontab",
            "--cron-d", f"{tree}/cron.d", "--pid-file", f"{tree}/out/pid",
            "--reboot-marker", f"{tree}/out/reboot", "--state-dir", f"{tree}/state"]
    if conninfo:
        args += ["--cluster-db", conninfo, "--cluster-host", "bench"]
    daemon = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    boundary = (int(time.time()) // 60 + 1) * 60
    deadline = boundary + 30
    stamps = []
    while time.time() < deadline:
        time.sleep(0.2)
        if os.path.exists(out):
            stamps = [float(l.split()[0]) for l in open(out)]
            if len(stamps) >= entries:
                break
    daemon.terminate()
    daemon.wait()
    if len(stamps) < entries:
        sys.exit(f"only {len(stamps)} of {entries} jobs started")
    return (min(stamps) - boundary) * 1000, (max(stamps) - boundary) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="crond-cluster-bench-")
    os.chmod(work, 0o755)
    stamp = os.path.join(work, "stamp")
    subprocess.run(["gcc", "-O2", "-static", "-o", stamp,
                    os.path.join(ROOT, "benches/compare/stamp.c")], check=True)
    bindir, data, conninfo = start_pg(work)
    try:
        rows = []
        for r in range(a.rounds):
            local = one_round(work, stamp, a.entries, None)
            cluster = one_round(work, stamp, a.entries, conninfo)
            rows.append((r, local, cluster))
        print(f"{a.entries} entries due at one minute, ms after the boundary "
              f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores)")
        print("| round | local first | local last | cluster first | cluster last | last: cluster/local |")
        print("|---|---|---|---|---|---|")
        for r, (lf, ll), (cf, cl) in rows:
            print(f"| {r + 1} | {lf:.1f} | {ll:.1f} | {cf:.1f} | {cl:.1f} | {cl / ll:.2f} |")
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", f"{bindir}/pg_ctl", "-D", data,
                        "-m", "immediate", "stop"], stdout=subprocess.DEVNULL, cwd=work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
