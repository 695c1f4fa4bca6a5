#!/usr/bin/env python3
"""The history writer's queries on a full store: 1,000,000 outcomes over 30 days.

Fills a store in the writer's own schema (the writer makes the file, then this script inserts
the rows with Python's sqlite3 module, through the writer's triggers), starts the real
`cronctl history-writer` on it with a SOCK_SEQPACKET pair as its standard input, as the daemon
does, and times the answers to queries passed with a connection of ours, as the daemon passes
a client's:

  * one entry's last 100 outcomes (`cronctl history ID`), asked by root and by the entry's
    user;
  * the failures of the last day (`cronctl history --failed --since 1d`, 100 of them), by root
    and by a user.

Each query is asked --repeat times; the median and the slowest are printed, from the query's
send to the end of its answer. Nothing is asserted.

usage: benches/history/bench.py [--rows N] [--entries N] [--users N] [--repeat N] [--keep DIR]
  CRONCTL=/path/to/cronctl picks the binary (default: target/release/cronctl).
"""

import argparse
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time

DAY_MS = 86_400_000


def field(name, value):
    if isinstance(value, int):
        value = str(value)
    if isinstance(value, str):
        value = value.encode()
    return name.encode() + b" " + str(len(value)).encode() + b"\n" + value + b"\n"


def query(asked, now_ms, all_=True, uid=0, name=None, **fields):
    """A `query` message, as crond::history::Query::encode writes it."""
    m = field("kind", "query") + field("asked", asked)
    for key, value in fields.items():
        m += field(key, value)
    if all_:
        m += field("all", 1)
    m += field("uid", uid)
    if name is not None:
        m += field("name", name)
    m += field("now_ms", now_ms) + field("zone", "UTC") + field("max_answer", 1 << 20)
    return m


def start_writer(cronctl, store):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    writer = subprocess.Popen(
        [cronctl, "history-writer", "--store", store, "--host", "bench",
         "--keep-runs", "1000", "--max-size", str(64 << 30), "--journal", "none"],
        stdin=theirs, stdout=subprocess.DEVNULL)
    theirs.close()
    return writer, ours


def ask(sock, message):
    """Sends `message` with a connection passed beside it; the answer's bytes and seconds."""
    client, passed = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    start = time.perf_counter()
    socket.send_fds(sock, [message], [passed.fileno()])
    passed.close()
    chunks = []
    while True:
        chunk = client.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    took = time.perf_counter() - start
    client.close()
    return b"".join(chunks), took


def fill(store, rows, entries, users, now_ms):
    rng = random.Random(1)
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA synchronous=OFF")
    per_entry = rows // entries

    def gen():
        for e in range(entries):
            entry = f"{e:012x}"
            user = f"user{e % users}"
            uid = 2000 + e % users
            for i in range(per_entry):
                at = now_ms - 30 * DAY_MS + 3_600_000 + (i * (30 * DAY_MS - 7_200_000)) // per_entry
                at += rng.randrange(60_000)
                failed = rng.random() < 0.05
                exit_ = 1 if failed else 0
                yield (entry, f"crontabs/{user}:{e % 50 + 1}", user, uid, "run-report --daily",
                       "schedule", at // 60_000 * 60, "bench", at, at + 1500, exit_, 0, 1000,
                       200, 4096, 40, b"report done\n", b"", int(failed), 240)

    conn.executemany(
        "INSERT INTO runs (entry, place, user, owner_uid, command, trigger, slot, host, at_ms,"
        " ended_ms, exit, timed_out, user_us, system_us, max_rss_kib, output_bytes, head, tail,"
        " failed, size) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", gen())
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--entries", type=int, default=1_000)
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--keep", help="make (or reuse) the store in this directory")
    args = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    cronctl = os.environ.get("CRONCTL", os.path.join(here, "../../target/release/cronctl"))
    tmp = args.keep or tempfile.mkdtemp(prefix="history-bench-")
    store = os.path.join(tmp, "history.db")
    now_ms = int(time.time() * 1000)
    if not os.path.exists(store):
        writer, sock = start_writer(cronctl, store)
        sock.close()
        writer.wait()
        t = time.perf_counter()
        fill(store, args.rows, args.entries, args.users, now_ms)
        print(f"filled {args.rows} rows in {time.perf_counter() - t:.1f} s, "
              f"{os.path.getsize(store) >> 20} MiB")
    t = time.perf_counter()
    writer, sock = start_writer(cronctl, store)
    ask(sock, query("history", now_ms, limit=1))
    print(f"writer up (quick_check, first prune) in {time.perf_counter() - t:.2f} s")
    e = args.entries // 2
    entry = f"{e:012x}"
    cases = [
        ("one entry's last 100, root", query("history", now_ms, entry=entry, limit=100)),
        ("one entry's last 100, its user",
         query("history", now_ms, all_=False, uid=2000 + e % args.users,
               name=f"user{e % args.users}", entry=entry, limit=100)),
        ("--failed --since 1d, root",
         query("history", now_ms, failed=1, since_ms=now_ms - DAY_MS, limit=100)),
        ("--failed --since 1d, a user",
         query("history", now_ms, all_=False, uid=2007, name="user7", failed=1,
               since_ms=now_ms - DAY_MS, limit=100)),
        ("all of a user's, last 100", query("history", now_ms, all_=False, uid=2007,
                                             name="user7", limit=100)),
        ("all of a user with none", query("history", now_ms, all_=False, uid=999,
                                          name="nobody", limit=100)),
        ("logs of its last run, root", query("logs", now_ms, entry=entry)),
    ]
    print(f"{'query':36} {'median':>9} {'slowest':>9} {'answer':>8}")
    for name, message in cases:
        times = []
        for _ in range(args.repeat):
            answer, took = ask(sock, message)
            assert answer.startswith(b"OK\n"), answer[:200]
            times.append(took)
        print(f"{name:36} {statistics.median(times) * 1000:8.1f}ms {max(times) * 1000:8.1f}ms "
              f"{len(answer):7}B")
    sock.close()
    writer.wait()
    if not args.keep:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
