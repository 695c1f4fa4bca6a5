#!/usr/bin/env python3
"""Cluster mode under faults for a long while: three crond hosts share one private PostgreSQL
(Unix socket) and one /etc/cron.d-style file of N entries `* * * * *` under CRON_CLUSTER (each
job is benches/compare/stamp.c writing its start time and its entry's number to its host's
file). Every few minutes one host, chosen at random, dies at a random second of the minute:
its crond, its helper and its jobs get SIGKILL (no lease given back); it comes back 10 s later
under the same name. Optionally (--stop-every) hosts are also stopped cleanly (SIGTERM) and
started again, as in a rolling restart.

At the end every daemon is stopped and the record is checked, slot by slot: each row of
crond_runs (one per entry and minute) is matched with the jobs that wrote their number on the
row's host (the entry's number is read from its command in crond_entries). Printed:

  slots      rows in crond_runs (every slot of every minute the hosts saw)
  ran        slots whose host's job wrote its number
  unknown    slots ended `unknown` (their host died after marking them started)
  lost       slots that never ran: must each be `unknown`
  twice      runs beyond one per slot (on any host): must be 0

    sudo benches/cluster/soak.py [--entries N] [--minutes M] [--kill-every K] [--stop-every S]

Needs root, gcc, Debian's postgresql, and target/release/{crond,cronctl} (or --bins DIR).
"""
import argparse, os, random, subprocess, sys, tempfile, time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load  # noqa: E402  (the same trees, daemons and database as load.py)


def start_host(bins, tree, h, conninfo, n):
    args = load.crond_args(bins, tree, False)
    args += ["--cluster-db", conninfo, "--cluster-host", f"host{h}",
             "--cluster-helper", os.path.join(bins, "cronctl")]
    log = open(os.path.join(tree, "out", f"log.{n}"), "w")
    return subprocess.Popen(args, stderr=log)


def stamps_by_host(trees):
    """Per host: how many times each entry's number was written."""
    counts = []
    for _, out in trees:
        c = Counter()
        if os.path.exists(out):
            for line in open(out):
                parts = line.split()
                if len(parts) == 2:
                    c[int(parts[1])] += 1
        counts.append(c)
    return counts


FNV_PRIME, WORD = 0x100000001b3, 1 << 64


def command_part(command):
    """The bytes an entry's id hashes last: the command's length (8 bytes, little-endian), then
    the command (src/cluster/entry_id.rs)."""
    data = command.encode()
    return len(data).to_bytes(8, "little") + data


def entry_numbers(conninfo, stamp, entries):
    """Each entry's id -> its number. A host lists its entries to the database
    (crond_entries) within a bound, and may not have listed them all yet; the ids of the rest
    are made here from one listed id: FNV-1a is undone over its command's bytes to the state the other parts leave (the same
    for every entry: one schedule, no zone, one user), then run forward over each command.
    Every listed id is checked against the one made."""
    listed = {}
    for row in load.psql(conninfo, "SELECT DISTINCT entry, command FROM crond_entries").splitlines():
        entry, command = row.split("|", 1)
        listed[entry] = command
    some_id, some_command = next(iter(listed.items()))
    inverse = pow(FNV_PRIME, -1, WORD)
    state = int(some_id, 16)
    for b in reversed(command_part(some_command)):
        state = (state * inverse) % WORD
        state ^= b
    numbers = {}
    for k in range(entries):
        h = state
        for b in command_part(f"{stamp} $OUT {k}"):
            h = ((h ^ b) * FNV_PRIME) % WORD
        numbers[f"{h:016x}"] = k
    for entry, command in listed.items():
        assert numbers.get(entry) == int(command.split()[-1]), (entry, command)
    return numbers


def check(conninfo, trees, hosts, stamp, entries):
    numbers = entry_numbers(conninfo, stamp, entries)
    rows = load.psql(conninfo, "SELECT entry, host, started IS NOT NULL, "
                               "coalesce(reason, '') FROM crond_runs").splitlines()
    owed = Counter()  # (host, number) -> slots that host started
    unknown = 0
    not_started = Counter()
    for row in rows:
        entry, host, started, reason = row.split("|")
        if reason == "unknown":
            unknown += 1
        if started == "t":
            owed[(host, numbers[entry])] += 1
        else:
            not_started[reason or "claimed, never started"] += 1
    stamps = stamps_by_host(trees)
    ran = twice = lost = 0
    for h in range(hosts):
        name = f"host{h}"
        keys = set(k for (hn, k) in owed if hn == name) | set(stamps[h])
        for k in keys:
            done, due = stamps[h][k], owed[(name, k)]
            ran += min(done, due)
            twice += max(0, done - due)
            lost += max(0, due - done)
    return dict(slots=len(rows), ran=ran, unknown=unknown, lost=lost, twice=twice,
                not_started=dict(not_started))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--minutes", type=int, default=30)
    ap.add_argument("--kill-every", type=int, default=5, help="minutes between kills")
    ap.add_argument("--stop-every", type=int, default=0, help="minutes between clean restarts")
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--bins", help="the directory of crond and cronctl (default target/release)")
    ap.add_argument("--seed", type=int)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    bins = a.bins or os.path.join(load.ROOT, "target", "release")
    work = tempfile.mkdtemp(prefix="crond-cluster-soak-")
    os.chmod(work, 0o755)
    stamp = os.path.join(work, "stamp")
    subprocess.run(["gcc", "-O2", "-static", "-o", stamp,
                    os.path.join(load.ROOT, "benches/compare/stamp.c")], check=True)
    bindir, data, conninfo = load.start_pg(work)
    trees = [load.host_tree(work, f"host{h}", stamp, a.entries, True) for h in range(a.hosts)]
    starts = [0] * a.hosts
    events = []
    try:
        now = time.time()
        wait = (60 - now % 60) - 15
        time.sleep(wait if wait > 0 else wait + 60)
        daemons = [start_host(bins, t, h, conninfo, 0) for h, (t, _) in enumerate(trees)]
        first = (int(time.time()) // 60 + 1) * 60
        end = first + a.minutes * 60
        for m in range(1, a.minutes):
            at = first + m * 60
            kill = a.kill_every and m % a.kill_every == 0
            stop = a.stop_every and m % a.stop_every == 0
            if not (kill or stop):
                continue
            h = rng.randrange(a.hosts)
            offset = rng.uniform(0.0, 30.0)
            time.sleep(max(0.0, at + offset - time.time()))
            if kill:
                load.kill_host(daemons[h].pid)
            else:
                daemons[h].terminate()
            daemons[h].wait()
            events.append(f"minute {m}: host{h} {'killed' if kill else 'stopped'} "
                          f"{offset:.1f} s after the boundary")
            print(events[-1], flush=True)
            time.sleep(10)
            starts[h] += 1
            daemons[h] = start_host(bins, trees[h][0], h, conninfo, starts[h])
        # The last minute's runs, and takeovers after it.
        time.sleep(max(0.0, end + 75 - time.time()))
        for d in daemons:
            d.terminate()
        for d in daemons:
            d.wait()
        r = check(conninfo, trees, a.hosts, stamp, a.entries)
        print(f"\n{a.hosts} hosts, {a.entries} cluster entries every minute, {a.minutes} minutes "
              f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
              f"seed {seed})")
        print("| slots | ran | unknown | lost | twice | not started (why) |")
        print("|---|---|---|---|---|---|")
        print(f"| {r['slots']} | {r['ran']} | {r['unknown']} | {r['lost']} | {r['twice']} | "
              f"{r['not_started']} |")
        ok = r["twice"] == 0 and r["lost"] <= r["unknown"]
        print("ok" if ok else "FAILED: a slot ran twice, or one was lost without being unknown")
        sys.exit(0 if ok else 1)
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", f"{bindir}/pg_ctl", "-D", data,
                        "-m", "immediate", "stop"], stdout=subprocess.DEVNULL, cwd=work)
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
