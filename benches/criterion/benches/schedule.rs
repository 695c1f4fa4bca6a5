//! Benchmarks (not tests: nothing here asserts a timing) of the schedule engine and the crontab
//! parser, run with `cd benches/criterion && cargo bench`.
//!
//! * `next_after/{crond,croner}/EXPR`: one next-fire-time query in America/New_York, crond's
//!   `Schedule::next_after` side by side with croner's `find_next_occurrence` on the same
//!   expressions and the same start times (spread across a year, cycled one per iteration), so
//!   the two are measured in the same run on the same machine. Goal: crond ≤ 0.25 × croner.
//! * `parse/100000-lines`: `crontab::parse` of a 100,000-line user crontab with a realistic
//!   mix of entries, variables, comments and blank lines; the throughput line is lines per
//!   second. Goal: ≥ 1,000,000 lines/s.
//!
//! This crate is a workspace member of its own so that criterion never enters the build of
//! crond's `cargo test`.

use std::hint::black_box;
use std::str::FromStr;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use crond::crontab::{self, Format, Limits, ParseOptions};
use crond::schedule::{When, Zone, parse_expression};
use croner::Cron;
use jiff::Timestamp;

const EXPRESSIONS: [&str; 4] = [
    "*/5 * * * *",
    "0 0 29 2 *",
    "0 12 * * MON-FRI",
    "30 2 * * *",
];

/// 2026-01-01T00:00:00Z.
const YEAR_START: i64 = 1_767_225_600;

/// 101 start times across 2026, at uneven seconds so they land at every time of day.
fn starts() -> Vec<Timestamp> {
    (0..101)
        .map(|i| Timestamp::from_second(YEAR_START + i * 312_251).expect("in range"))
        .collect()
}

fn next_after(c: &mut Criterion) {
    let zone = Zone::get("America/New_York").expect("tzdata is installed");
    let starts = starts();
    let zoned: Vec<_> = starts
        .iter()
        .map(|t| t.to_zoned(zone.time_zone().clone()))
        .collect();
    let mut group = c.benchmark_group("next_after");
    for expr in EXPRESSIONS {
        let When::Periodic(schedule) = parse_expression(expr, 0).expect("valid") else {
            unreachable!("no @reboot here")
        };
        let cron = Cron::from_str(expr).expect("croner reads it");
        // Both must give the same answers, or the comparison means nothing.
        for (t, z) in starts.iter().zip(&zoned) {
            let theirs = cron
                .find_next_occurrence(z, false)
                .ok()
                .map(|z| z.timestamp());
            assert_eq!(schedule.next_after(*t, &zone), theirs, "{expr} after {t}");
        }
        let mut i = 0;
        group.bench_function(format!("crond/{expr}"), |b| {
            b.iter(|| {
                i = (i + 1) % starts.len();
                schedule.next_after(black_box(starts[i]), &zone)
            })
        });
        let mut i = 0;
        group.bench_function(format!("croner/{expr}"), |b| {
            b.iter(|| {
                i = (i + 1) % zoned.len();
                cron.find_next_occurrence(black_box(&zoned[i]), false)
            })
        });
    }
    group.finish();
}

/// A user crontab of `lines` lines: about 70% entries of many shapes (some with `%` input),
/// 10% variables (a few `CRON_TZ`), 15% comments and 5% blank lines.
fn crontab_text(lines: usize) -> Vec<u8> {
    const ENTRIES: [&str; 12] = [
        "*/5 * * * * /usr/local/bin/poll-queue --quiet",
        "0 3 * * * /usr/sbin/logrotate /etc/logrotate.conf",
        "15 2 * * mon-fri cd /srv/app && ./backup.sh > /dev/null 2>&1",
        "0 0 1 * * /usr/bin/find /tmp -mtime +30 -delete",
        "@hourly /usr/lib/sa/sa1 1 1",
        "@daily run-parts /etc/cron.daily",
        "30 6,18 * * * mail -s \"report\" ops@example.org%Daily report%-- cron",
        "0 */2 1-15 jan,apr,jul,oct * /opt/bin/quarterly --dry-run",
        "45 23 28-31 * * [ \"$(date +\\%d -d tomorrow)\" = 01 ] && /opt/bin/month-end",
        "0 12 * * 1-5 curl -fsS https://example.org/ping >/dev/null",
        "5-55/10 8-17 * * mon,wed,fri /home/alice/bin/sync",
        "0 0 29 2 * echo leap",
    ];
    const ENV: [&str; 4] = [
        "MAILTO=ops@example.org",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "SHELL = /bin/bash",
        "CRON_TZ=America/New_York",
    ];
    let mut out = Vec::new();
    for n in 0..lines {
        let line = match n % 20 {
            0..=13 => ENTRIES[(n / 20 + n) % ENTRIES.len()],
            14 | 15 => ENV[(n / 20) % ENV.len()],
            16..=18 => "# a comment explaining the entries below, as people write them",
            _ => "",
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

fn parse(c: &mut Criterion) {
    const LINES: usize = 100_000;
    let text = crontab_text(LINES);
    let mut zones = |name: &str| Zone::get(name);
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(LINES as u64));
    group.sample_size(20);
    group.bench_function("100000-lines", |b| {
        b.iter(|| {
            let mut options = ParseOptions {
                format: Format::User,
                limits: Limits::SYSTEM,
                seed: 1,
                file: "crontabs/bench",
                zones: &mut zones,
                privileged: false,
            };
            let parsed = crontab::parse(black_box(&text), &mut options);
            assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
            parsed
        })
    });
    group.finish();
}

/// The daemon's work at a minute boundary with 10,000 entries due: the cycle pops them and
/// queues the runs (`Cycle::on_wake`), and the first job comes up (`Cycle::next_to_start`);
/// then each one's next fire time is computed (`Cycle::next_wake`, which the daemon asks after
/// the first jobs started).
fn minute(c: &mut Criterion) {
    use crond::schedule::{When, parse_expression};
    use crond::timeline::{Cycle, UtcMinute};
    const DUE: usize = 10_000;
    let Ok(When::Periodic(schedule)) = parse_expression("0 10 * * *", 0) else {
        panic!("a schedule");
    };
    // 2026-11-21 10:00 UTC, in minutes since the epoch.
    let ten = UtcMinute(1_795_255_200 / 60);
    let mut group = c.benchmark_group("minute");
    group.throughput(Throughput::Elements(DUE as u64));
    group.sample_size(20);
    let due_cycle = || {
        let mut cycle: Cycle<u32> = Cycle::new(UtcMinute(ten.0 - 1), Zone::utc());
        for i in 0..DUE {
            cycle.add(schedule, None, i as u32, 0);
        }
        cycle
    };
    // Until the first job can start; then the whole boundary, with the next fire times.
    for settle in [false, true] {
        let name = if settle {
            "10000-due-then-settle"
        } else {
            "10000-due"
        };
        group.bench_function(name, |b| {
            b.iter_batched(
                due_cycle,
                |mut cycle| {
                    let woke = cycle.on_wake(black_box(ten));
                    assert_eq!(woke.queued, DUE);
                    assert!(cycle.next_to_start(ten.0 * 60_000).is_some());
                    if settle {
                        // The other runs are still queued (nothing started them): the next
                        // wake is the next minute.
                        assert_eq!(cycle.next_wake(ten, false), UtcMinute(ten.0 + 1));
                    }
                    cycle
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    // The per-minute cost grows with the entries due, not with the entries: 10 due among
    // 1,000 and among 100,000 (the others fire once a year).
    let Ok(When::Periodic(yearly)) = parse_expression("0 0 1 1 *", 0) else {
        panic!("a schedule");
    };
    for total in [1_000usize, 100_000] {
        group.throughput(Throughput::Elements(10));
        group.bench_function(format!("10-due-of-{total}"), |b| {
            b.iter_batched(
                || {
                    let mut cycle: Cycle<u32> = Cycle::new(UtcMinute(ten.0 - 1), Zone::utc());
                    for i in 0..total {
                        let s = if i < 10 { schedule } else { yearly };
                        cycle.add(s, None, i as u32, 0);
                    }
                    cycle
                },
                |mut cycle| {
                    let woke = cycle.on_wake(black_box(ten));
                    assert_eq!(woke.queued, 10);
                    cycle
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = next_after, parse, minute
}
criterion_main!(benches);
