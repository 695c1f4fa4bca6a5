//! Cluster mode's tables and statements (docs/cluster.md "Tables" and "Protocol"). Every time
//! that decides (leases, claims, takeovers) is the database's `now()`, never a host's clock: the
//! hosts' clocks only name the minute a run is due.
//!
//! Parameters are text (the client sends them so); arrays are PostgreSQL array literals made by
//! [`array()`], so a batch of runs is one statement.

/// The tables, created by the first helper that connects (an advisory lock keeps two helpers
/// from racing on `CREATE TABLE IF NOT EXISTS`).
pub const SCHEMA: &str = "
SELECT pg_advisory_xact_lock(7243);
CREATE TABLE IF NOT EXISTS crond_hosts (
    host        text PRIMARY KEY,
    session     bigint NOT NULL,
    lease_until timestamptz NOT NULL,
    started     timestamptz NOT NULL DEFAULT now(),
    seen        timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS crond_runs (
    cluster    text NOT NULL,
    owner      text NOT NULL,
    entry      text NOT NULL,
    minute     timestamptz NOT NULL,
    host       text NOT NULL,
    session    bigint NOT NULL,
    claimed    timestamptz NOT NULL DEFAULT now(),
    started    timestamptz,
    ended      timestamptz,
    status     integer,
    taken_from text,
    trigger    text,
    run_ms     bigint,
    ended_ms   bigint,
    exit       integer,
    signal     integer,
    timed_out  boolean,
    user_us    bigint,
    system_us  bigint,
    max_rss_kib bigint,
    output_bytes bigint,
    mail       text,
    mail_words text,
    reason     text,
    words      text,
    PRIMARY KEY (cluster, owner, entry, minute)
);
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                   WHERE table_schema = current_schema() AND table_name = 'crond_runs'
                     AND column_name = 'words') THEN
        ALTER TABLE crond_runs ADD COLUMN trigger text, ADD COLUMN run_ms bigint,
            ADD COLUMN ended_ms bigint, ADD COLUMN exit integer, ADD COLUMN signal integer,
            ADD COLUMN timed_out boolean, ADD COLUMN user_us bigint,
            ADD COLUMN system_us bigint, ADD COLUMN max_rss_kib bigint,
            ADD COLUMN output_bytes bigint, ADD COLUMN mail text, ADD COLUMN mail_words text,
            ADD COLUMN reason text, ADD COLUMN words text;
    END IF;
END $$;
CREATE INDEX IF NOT EXISTS crond_runs_by_minute ON crond_runs (minute);
CREATE INDEX IF NOT EXISTS crond_runs_open ON crond_runs (host) WHERE ended IS NULL;
CREATE INDEX IF NOT EXISTS crond_runs_unstarted ON crond_runs (claimed)
    WHERE started IS NULL AND ended IS NULL;
CREATE TABLE IF NOT EXISTS crond_paused (
    cluster text NOT NULL,
    owner   text NOT NULL,
    entry   text NOT NULL,
    since   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, owner, entry)
);
CREATE TABLE IF NOT EXISTS crond_entries (
    cluster text NOT NULL,
    owner   text NOT NULL,
    entry   text NOT NULL,
    host    text NOT NULL,
    place   text NOT NULL,
    command text NOT NULL,
    seen    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, owner, entry, host)
);
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                   WHERE table_schema = current_schema() AND table_name = 'crond_entries'
                     AND column_name = 'rerun') THEN
        ALTER TABLE crond_entries ADD COLUMN rerun boolean NOT NULL DEFAULT false;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                   WHERE table_schema = current_schema() AND table_name = 'crond_runs'
                     AND column_name = 'attempt') THEN
        ALTER TABLE crond_runs ADD COLUMN attempt integer NOT NULL DEFAULT 1;
    END IF;
END $$;
";

/// This host's cluster entries as its daemon listed them: $1..$5 the arrays of their clusters,
/// owners, ids, places and commands, $6 host, $7 session, $8 whether each is to be run again
/// when its outcome is lost (`CRON_CLUSTER_RERUN=unknown`). The host's rows become these (an
/// entry twice in the list keeps its first place); nothing is written unless this session
/// holds the host's lease, and a row comes back only when it was written.
pub const LIST: &str = "
WITH me AS (SELECT 1 FROM crond_hosts
            WHERE host = $6 AND session = $7::bigint AND lease_until > now()),
     q AS (SELECT DISTINCT ON (cluster, owner, entry) cluster, owner, entry, place, command,
                  rerun
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                       $8::boolean[])
                WITH ORDINALITY AS q(cluster, owner, entry, place, command, rerun, n)
           ORDER BY cluster, owner, entry, n),
     gone AS (DELETE FROM crond_entries e
              WHERE e.host = $6 AND EXISTS (SELECT 1 FROM me)
                AND NOT EXISTS (SELECT 1 FROM q
                    WHERE (q.cluster, q.owner, q.entry) = (e.cluster, e.owner, e.entry))),
     put AS (INSERT INTO crond_entries (cluster, owner, entry, host, place, command, rerun)
             SELECT cluster, owner, entry, $6, place, command, rerun FROM q
             WHERE EXISTS (SELECT 1 FROM me)
             ON CONFLICT (cluster, owner, entry, host) DO UPDATE
                 SET place = EXCLUDED.place, command = EXCLUDED.command,
                     rerun = EXCLUDED.rerun, seen = now())
SELECT 1 FROM me";

/// Takes or renews this host's lease: $1 host, $2 session, $3 lease seconds. Returns a row
/// only when the name is this session's, or free (no live lease of another session): two
/// daemons given the same host name can't both hold it. The row has the server's clock (Unix
/// ms), to compare the host's with.
pub const LEASE: &str = "
INSERT INTO crond_hosts AS h (host, session, lease_until)
VALUES ($1, $2::bigint, now() + make_interval(secs => $3::int))
ON CONFLICT (host) DO UPDATE
    SET session = EXCLUDED.session, lease_until = EXCLUDED.lease_until, seen = now(),
        started = CASE WHEN h.session = EXCLUDED.session THEN h.started ELSE now() END
    WHERE h.session = EXCLUDED.session OR h.lease_until <= now()
RETURNING host, (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text";

/// Gives the lease up (the daemon is gone): $1 host, $2 session.
pub const RELEASE: &str =
    "UPDATE crond_hosts SET lease_until = now() WHERE host = $1 AND session = $2::bigint";

/// The rows of a batch of runs: $1 clusters, $2 owners, $3 entries, $4 minutes (unix seconds).
const BATCH: &str = "unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) \
     AS q(cluster, owner, entry, minute)";

/// This host holds a live lease: $5 host, $6 session.
const LIVE: &str = "EXISTS (SELECT 1 FROM crond_hosts me \
     WHERE me.host = $5 AND me.session = $6::bigint AND me.lease_until > now())";

/// Claims a batch; one row per run asked for: cluster, owner, entry, minute, and what became
/// of it: `claimed` (this session holds the claim, new or from an earlier try), `started` (this
/// session holds it and marked it started on an earlier try whose answer was lost: start it),
/// `lease` (this host's lease is not live: no claim), `paused`, `ran` (started by the host
/// given) or `taken` with the host that has it and has not started it.
pub fn claim() -> String {
    format!(
        "WITH q AS (SELECT * FROM {BATCH}),
         ins AS (
            INSERT INTO crond_runs (cluster, owner, entry, minute, host, session)
            SELECT q.cluster, q.owner, q.entry, to_timestamp(q.minute), $5, $6::bigint FROM q
            WHERE {LIVE}
              AND NOT EXISTS (SELECT 1 FROM crond_paused p
                  WHERE (p.cluster, p.owner, p.entry) = (q.cluster, q.owner, q.entry))
            ON CONFLICT DO NOTHING
            RETURNING cluster, owner, entry, minute)
         SELECT q.cluster, q.owner, q.entry, q.minute::text,
            CASE WHEN NOT {LIVE} THEN 'lease'
                 WHEN EXISTS (SELECT 1 FROM crond_paused p
                     WHERE (p.cluster, p.owner, p.entry) = (q.cluster, q.owner, q.entry))
                     THEN 'paused'
                 WHEN EXISTS (SELECT 1 FROM ins i
                     WHERE (i.cluster, i.owner, i.entry, i.minute)
                         = (q.cluster, q.owner, q.entry, to_timestamp(q.minute)))
                     THEN 'claimed'
                 WHEN r.host = $5 AND r.session = $6::bigint AND r.started IS NULL THEN 'claimed'
                 WHEN r.host = $5 AND r.session = $6::bigint THEN 'started'
                 WHEN r.started IS NOT NULL THEN 'ran'
                 ELSE 'taken' END,
            coalesce(r.host, '')
         FROM q LEFT JOIN crond_runs r
              ON (r.cluster, r.owner, r.entry, r.minute)
                 = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))"
    )
}

/// The hosts holding a live lease, by name: the hosts runs are spread over.
pub const LIVE_HOSTS: &str =
    "SELECT host FROM crond_hosts WHERE lease_until > now() ORDER BY host LIMIT 1000";

/// Marks this host's claimed runs of a batch started; returns the runs marked (a run not
/// returned is no longer this host's: its lease ended and another took it over).
pub fn start() -> String {
    format!(
        "UPDATE crond_runs r SET started = now() FROM {BATCH}
         WHERE (r.cluster, r.owner, r.entry, r.minute)
               = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))
           AND r.host = $5 AND r.session = $6::bigint AND r.started IS NULL AND {LIVE}
         RETURNING r.cluster, r.owner, r.entry, q.minute::text"
    )
}

/// Gives back runs this session marked started that its daemon, stopping, did not fork: each is
/// a claim again (not started), which another host takes over once this host's lease ends.
/// Returns the runs given back.
pub fn unstart() -> String {
    format!(
        "UPDATE crond_runs r SET started = NULL FROM {BATCH}
         WHERE (r.cluster, r.owner, r.entry, r.minute)
               = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))
           AND r.host = $5 AND r.session = $6::bigint AND r.started IS NOT NULL
           AND r.ended IS NULL AND r.ended_ms IS NULL AND r.reason IS NULL
         RETURNING r.cluster, r.owner, r.entry, q.minute::text"
    )
}

/// Takes over runs no daemon is waiting for, of entries this host has listed, whose holder's
/// session holds no live lease (its host stopped, died, or gave them back stopping), claimed
/// in the last hour (by the database's clock): claims not started, and, for an entry listed
/// with `CRON_CLUSTER_RERUN=unknown`, a first attempt ended `unknown` (its host died after
/// starting it), which becomes the second attempt of the same slot. At most $3 of them, oldest
/// first, are made this session's and marked started at once (the caller tells its daemon to
/// start each): $1 host, $2 session, $4 the latest minute taken (unix seconds, by this host's
/// clock: a run whose minute has not come is not started early). Rows another helper is
/// taking at the same moment are skipped (`SKIP LOCKED`), so each goes to one host. Returns
/// their keys (cluster, owner, entry, minute in unix seconds) and attempts.
pub const ADOPT: &str = "
WITH found AS (
    SELECT r.cluster, r.owner, r.entry, r.minute FROM crond_runs r
    JOIN crond_entries e
      ON (e.cluster, e.owner, e.entry, e.host) = (r.cluster, r.owner, r.entry, $1)
    WHERE ((r.started IS NULL AND r.ended IS NULL AND r.reason IS NULL)
           OR (e.rerun AND r.reason = 'unknown' AND r.attempt = 1))
      AND r.claimed > now() - interval '1 hour' AND r.minute <= to_timestamp($4::bigint)
      AND NOT EXISTS (SELECT 1 FROM crond_hosts h
          WHERE h.host = r.host AND h.session = r.session AND h.lease_until > now())
      AND EXISTS (SELECT 1 FROM crond_hosts me
          WHERE me.host = $1 AND me.session = $2::bigint AND me.lease_until > now())
    ORDER BY r.minute
    LIMIT $3::int
    FOR UPDATE OF r SKIP LOCKED)
UPDATE crond_runs r SET host = $1, session = $2::bigint, claimed = now(), started = now(),
       taken_from = r.host,
       attempt = CASE WHEN r.reason = 'unknown' THEN r.attempt + 1 ELSE r.attempt END,
       ended = NULL, status = NULL, reason = NULL, words = NULL
FROM found f
WHERE (r.cluster, r.owner, r.entry, r.minute) = (f.cluster, f.owner, f.entry, f.minute)
RETURNING r.cluster, r.owner, r.entry, extract(epoch FROM r.minute)::bigint::text,
          r.attempt::text";

/// Looks at runs claimed elsewhere: takes over each that is not started and whose host's
/// session holds no live lease, and reports the rest. One row per run: cluster, owner, entry,
/// minute, `mine` (taken over: start it), `ran` (started there), `waiting` or `gone` (the claim
/// was deleted), and the host. A run this session holds and has not started is `mine` too:
/// a claim can see a run as another's when the row is this session's own, inserted by an
/// earlier try of the same claim that the helper gave up on (its call timed out) and that
/// committed while the new try ran (READ COMMITTED: `ON CONFLICT DO NOTHING` waits for that
/// row, but the statement's snapshot does not show it). Without this such a run waited for
/// its own live lease to end, and never started.
pub fn take_over() -> String {
    format!(
        "WITH q AS (SELECT * FROM {BATCH}),
         took AS (
            UPDATE crond_runs r SET host = $5, session = $6::bigint, claimed = now(),
                   taken_from = CASE WHEN r.host = $5 AND r.session = $6::bigint
                                     THEN r.taken_from ELSE r.host END
            FROM q
            WHERE (r.cluster, r.owner, r.entry, r.minute)
                  = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))
              AND r.started IS NULL AND {LIVE}
              AND ((r.host = $5 AND r.session = $6::bigint)
                   OR NOT EXISTS (SELECT 1 FROM crond_hosts h
                       WHERE h.host = r.host AND h.session = r.session AND h.lease_until > now()))
            RETURNING r.cluster, r.owner, r.entry, r.minute)
         SELECT q.cluster, q.owner, q.entry, q.minute::text,
            CASE WHEN r.cluster IS NULL THEN 'gone'
                 WHEN EXISTS (SELECT 1 FROM took t
                     WHERE (t.cluster, t.owner, t.entry, t.minute)
                         = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))) THEN 'mine'
                 WHEN r.started IS NOT NULL THEN 'ran'
                 ELSE 'waiting' END,
            coalesce(r.host, '')
         FROM q LEFT JOIN crond_runs r
              ON (r.cluster, r.owner, r.entry, r.minute)
                 = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))"
    )
}

/// Runs that ended, a batch of them: $1..$4 their keys (as [`BATCH`]), $5 host, $6 session,
/// $7 their exit statuses.
pub const END: &str = "UPDATE crond_runs r SET ended = now(), status = q.status,
        reason = CASE WHEN r.reason = 'unknown' THEN NULL ELSE r.reason END,
        words = CASE WHEN r.reason = 'unknown' THEN NULL ELSE r.words END
     FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $7::int[])
          AS q(cluster, owner, entry, minute, status)
     WHERE (r.cluster, r.owner, r.entry, r.minute)
           = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))
       AND r.host = $5 AND r.session = $6::bigint";

/// What a run recorded (the history writer of the host that ran it, `crond::history`): $1..$4
/// the runs' keys (as [`BATCH`]), $5 the host, then arrays of what each recorded: $6 trigger,
/// $7 start and $8 end (Unix ms), $9 exit code, $10 signal, $11 timed out, $12 user and $13
/// system CPU (µs), $14 peak RSS (KiB), $15 bytes of output, $16 the mail's fate and $17 its
/// words, $18 the reason it did not run and $19 its words. Only this host's rows are written:
/// a claim another host holds is not this host's to describe.
pub const RECORD: &str = "UPDATE crond_runs r SET trigger = q.trigger, run_ms = q.run_ms,
        ended_ms = q.ended_ms, exit = q.exit, signal = q.signal, timed_out = q.timed_out,
        user_us = q.user_us, system_us = q.system_us, max_rss_kib = q.max_rss_kib,
        output_bytes = q.output_bytes, mail = q.mail, mail_words = q.mail_words,
        reason = q.reason, words = q.words
     FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $6::text[], $7::bigint[],
                 $8::bigint[], $9::int[], $10::int[], $11::boolean[], $12::bigint[],
                 $13::bigint[], $14::bigint[], $15::bigint[], $16::text[], $17::text[],
                 $18::text[], $19::text[])
          AS q(cluster, owner, entry, minute, trigger, run_ms, ended_ms, exit, signal,
               timed_out, user_us, system_us, max_rss_kib, output_bytes, mail, mail_words,
               reason, words)
     WHERE (r.cluster, r.owner, r.entry, r.minute)
           = (q.cluster, q.owner, q.entry, to_timestamp(q.minute))
       AND r.host = $5";

/// The runs of one cluster entry that started on some host, newest first: $1 cluster, $2
/// owner, $3 entry, $4 the most rows, $5 only those due at or after this Unix second (or
/// NULL), $6 only failures (`t`). One row each: minute (Unix s), host, trigger, start and end
/// (Unix ms, the recorded ones or the claim's), exit, signal, status (the helper's: the exit
/// code, or minus the signal), timed out, user and system CPU, peak RSS, output bytes, mail,
/// mail words, reason, words, as text.
pub const ENTRY_RUNS: &str = "SELECT extract(epoch FROM minute)::bigint::text, host, trigger,
        coalesce(run_ms, (extract(epoch FROM started) * 1000)::bigint)::text,
        coalesce(ended_ms, (extract(epoch FROM ended) * 1000)::bigint)::text,
        exit::text, signal::text, status::text, timed_out::text, user_us::text,
        system_us::text, max_rss_kib::text, output_bytes::text, mail, mail_words, reason, words
     FROM crond_runs
     WHERE cluster = $1 AND owner = $2 AND entry = $3 AND started IS NOT NULL
       AND ($5::bigint IS NULL OR minute >= to_timestamp($5::bigint))
       AND (NOT coalesce($6::boolean, false) OR reason IS NOT NULL OR coalesce(timed_out, false)
            OR signal IS NOT NULL OR coalesce(exit, status, 0) <> 0)
     ORDER BY minute DESC LIMIT $4::int";

/// Runs started by a session that no longer holds a live lease, neither ended nor recorded:
/// their host stopped (died, froze past its lease, or its daemon was stopped) before their end
/// was written, so their outcome is not known. Each is ended now with the reason `unknown`
/// (an end written later, by a host that was only late, puts its status in). One row per run:
/// the host that started it.
pub const UNKNOWN: &str = "UPDATE crond_runs r SET ended = now(), reason = 'unknown',
        words = 'started on ' || r.host || ', which stopped before the end was written'
     WHERE r.ended IS NULL AND r.started IS NOT NULL AND r.ended_ms IS NULL
       AND r.reason IS NULL
       AND NOT EXISTS (SELECT 1 FROM crond_hosts h
           WHERE h.host = r.host AND h.session = r.session AND h.lease_until > now())
     RETURNING r.host";

/// History goes when it is older than $1 days, or when it is more than the last $2 runs of its
/// entry and older than two hours (no claim of a run that old is still waited for: a watched
/// run is given up after an hour); hosts not seen for $1 days go too, and with them the
/// entries they listed.
pub const PRUNE: &str = "
WITH ranked AS (
        SELECT cluster, owner, entry, minute,
               row_number() OVER (PARTITION BY cluster, owner, entry ORDER BY minute DESC) AS n
        FROM crond_runs),
     runs AS (DELETE FROM crond_runs r USING ranked k
              WHERE (r.cluster, r.owner, r.entry, r.minute) = (k.cluster, k.owner, k.entry, k.minute)
                AND (r.minute < now() - make_interval(days => $1::int)
                     OR (k.n > $2::int AND r.minute < now() - interval '2 hours'))
              RETURNING 1),
     hosts AS (DELETE FROM crond_hosts WHERE lease_until < now() - make_interval(days => $1::int)
               RETURNING 1),
     entries AS (DELETE FROM crond_entries e WHERE NOT EXISTS (SELECT 1 FROM crond_hosts h
                     WHERE h.host = e.host
                       AND h.lease_until >= now() - make_interval(days => $1::int)))
SELECT (SELECT count(*) FROM runs)::text, (SELECT count(*) FROM hosts)::text";

/// A PostgreSQL array literal of `items` whose `None`s are NULL (`{"a",NULL}`), each value
/// quoted as [`array()`] quotes it (a quoted number reads as a number in a number array).
pub fn nullable_array<S: AsRef<str>>(items: impl IntoIterator<Item = Option<S>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            Some(item) => push_quoted(&mut out, item.as_ref()),
            None => out.push_str("NULL"),
        }
    }
    out.push('}');
    out
}

/// A PostgreSQL array literal of `items` (`{"a","b"}`), each quoted, `"` and `\` escaped.
pub fn array<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    nullable_array(items.into_iter().map(Some))
}

/// `item` as an array literal's quoted element.
fn push_quoted(out: &mut String, item: &str) {
    out.push('"');
    for c in item.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_literals_quote_every_item() {
        assert_eq!(array::<&str>([]), "{}");
        assert_eq!(array(["a", "b c"]), r#"{"a","b c"}"#);
        assert_eq!(array([r#"x"y\z"#, "NULL", ""]), r#"{"x\"y\\z","NULL",""}"#);
    }

    /// Every client runs [`SCHEMA`] (each `cronctl` command, each helper at its start), while
    /// helpers claim. An `ALTER TABLE` locks its table whole even when it changes nothing
    /// (`ADD COLUMN IF NOT EXISTS` too), and two in one batch, with a helper's statement
    /// holding one table and waiting for the other, made a deadlock (`40P01`, seen from
    /// `cronctl hosts`): each is run only when its column is missing.
    #[test]
    fn the_schema_alters_a_table_only_when_a_column_is_missing() {
        let mut in_do = false;
        for line in SCHEMA.lines() {
            in_do = match line.trim() {
                "DO $$ BEGIN" => true,
                "END $$;" => false,
                _ => in_do,
            };
            if line.trim_start().starts_with("ALTER TABLE") {
                assert!(in_do, "an ALTER TABLE outside a guarded block: {line}");
            }
        }
        assert_eq!(
            SCHEMA
                .matches("IF NOT EXISTS (SELECT 1 FROM information_schema")
                .count(),
            3
        );
    }

    #[test]
    fn nullable_array_literals_have_unquoted_nulls() {
        assert_eq!(nullable_array::<&str>([]), "{}");
        assert_eq!(
            nullable_array([Some("1"), None, Some("a}b")]),
            r#"{"1",NULL,"a}b"}"#
        );
        assert_eq!(nullable_array([Some("NULL"), None]), r#"{"NULL",NULL}"#);
    }
}
