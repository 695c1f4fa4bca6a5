//! Unit tests of the mail plan and header: recipients, refusals, every header line, the
//! charset choice, folding and RFC 2047 encoding.

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    pairs
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

fn config() -> MailConfig {
    MailConfig {
        host: b"vm".to_vec(),
        charset: "US-ASCII".to_string(),
        command: MailCommand::Sendmail(crate::paths::SENDMAIL.into()),
    }
}

fn job<'a>(env: &'a [(Vec<u8>, Vec<u8>)], command: &'a [u8], exit: JobExit) -> JobMail<'a> {
    JobMail {
        user: b"alice",
        command,
        env,
        exit,
        timed_out: None,
        not_run: None,
    }
}

fn sent(plan: Plan) -> (Vec<Vec<u8>>, String) {
    match plan {
        Plan::Send { recipients, header } => (recipients, String::from_utf8(header).unwrap()),
        other => panic!("expected a mail, got {other:?}"),
    }
}

#[test]
fn the_header_has_every_line_in_debian_order_then_a_blank_line() {
    let e = env(&[
        ("SHELL", "/bin/sh"),
        ("HOME", "/home/alice"),
        ("LOGNAME", "alice"),
    ]);
    let (to, h) = sent(plan(
        &job(&e, b"date", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert_eq!(to, vec![b"alice".to_vec()]);
    assert_eq!(
        h,
        "From: root (Cron Daemon)\n\
         To: alice\n\
         Subject: Cron <alice@vm> date\n\
         MIME-Version: 1.0\n\
         Content-Type: text/plain; charset=US-ASCII\n\
         Content-Transfer-Encoding: 8bit\n\
         Auto-Submitted: auto-generated\n\
         Precedence: bulk\n\
         X-Cron-Env: <SHELL=/bin/sh>\n\
         X-Cron-Env: <HOME=/home/alice>\n\
         X-Cron-Env: <LOGNAME=alice>\n\
         \n"
    );
}

#[test]
fn a_job_that_reached_its_time_limit_says_so_in_the_subject() {
    let e = env(&[]);
    let killed = JobExit::Signaled {
        signal: 15,
        core_dumped: false,
    };
    let timed_out = JobMail {
        timed_out: Some(90),
        ..job(&e, b"sleep 100", killed)
    };
    let (_, h) = sent(plan(&timed_out, &config(), false, TextKind::Ascii));
    // Unfolded (a fold is a newline before a space).
    let h = h.replace("\n ", " ");
    assert!(
        h.contains(
            "\nSubject: Cron <alice@vm> sleep 100 (timed out after 1m30s) (killed by signal 15)\n"
        ),
        "{h}"
    );
}

#[test]
fn a_slot_that_did_not_run_says_so_and_why_in_the_subject() {
    let e = env(&[]);
    let skipped = JobMail {
        not_run: Some("overlap"),
        ..job(&e, b"backup.sh", JobExit::Exited(0))
    };
    let (_, h) = sent(plan(&skipped, &config(), false, TextKind::Ascii));
    assert!(
        h.contains("\nSubject: Cron <alice@vm> backup.sh (did not run: overlap)\n"),
        "{h}"
    );
}

#[test]
fn a_failed_job_says_how_in_the_subject() {
    let e = env(&[]);
    let (_, h) = sent(plan(
        &job(&e, b"false", JobExit::Exited(3)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert!(
        h.contains("\nSubject: Cron <alice@vm> false (exit status 3)\n"),
        "{h}"
    );
    let killed = JobExit::Signaled {
        signal: 9,
        core_dumped: false,
    };
    let (_, h) = sent(plan(
        &job(&e, b"sleep 9", killed),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert!(
        h.contains("\nSubject: Cron <alice@vm> sleep 9 (killed by signal 9)\n"),
        "{h}"
    );
}

#[test]
fn no_mail_for_empty_output_empty_mailto_or_mail_off() {
    let e = env(&[]);
    let j = job(&e, b"true", JobExit::Exited(0));
    assert_eq!(plan(&j, &config(), true, TextKind::Ascii), Plan::Empty);
    let e = env(&[("MAILTO", "")]);
    let j = job(&e, b"true", JobExit::Exited(0));
    assert_eq!(
        plan(&j, &config(), false, TextKind::Ascii),
        Plan::MailtoEmpty
    );
    let e = env(&[]);
    let j = job(&e, b"true", JobExit::Exited(0));
    let off = MailConfig {
        command: MailCommand::Off,
        ..config()
    };
    assert_eq!(plan(&j, &off, false, TextKind::Ascii), Plan::Off);
}

#[test]
fn mailto_lists_become_one_argument_per_address() {
    let e = env(&[("MAILTO", "bob,carol@example.org")]);
    let (to, h) = sent(plan(
        &job(&e, b"date", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert_eq!(to, vec![b"bob".to_vec(), b"carol@example.org".to_vec()]);
    assert!(h.contains("\nTo: bob,carol@example.org\n"));
}

#[test]
fn unsafe_addresses_are_refused() {
    for bad in [
        "-oQ/tmp",
        "bob,-oQ/tmp",
        "bob carol",
        "bob\nBcc: eve",
        ",",
        "bob;rm",
        "bób",
    ] {
        let e = env(&[("MAILTO", bad)]);
        let got = plan(
            &job(&e, b"date", JobExit::Exited(0)),
            &config(),
            false,
            TextKind::Ascii,
        );
        assert_eq!(
            got,
            Plan::Unsafe {
                value: bad.as_bytes().to_vec()
            },
            "MAILTO={bad:?}"
        );
    }
}

#[test]
fn an_unsafe_mailfrom_falls_back_to_the_default_sender_and_the_mail_is_sent() {
    let e = env(&[("MAILFROM", "cron\nBcc: eve")]);
    let got = plan(
        &job(&e, b"date", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    );
    let Plan::Send { header, .. } = got else {
        panic!("not sent: {got:?}");
    };
    let header = String::from_utf8(header).unwrap();
    assert!(header.contains("From: root (Cron Daemon)\n"), "{header}");
    // The value still shows in X-Cron-Env, on one line: it starts no header of its own.
    assert!(!header.lines().any(|l| l.starts_with("Bcc:")), "{header}");
}

#[test]
fn safe_p_accepts_what_debian_accepts() {
    // The rule lives in crontab/address.rs (the parser checks it too); mail uses that one.
    for good in ["bob", "bob@example.org", "a.b+c=d/e%f!g:h_i-j", "1root"] {
        assert!(is_safe_address(good.as_bytes()), "{good}");
    }
    for bad in ["", ".bob", "@bob", "bob carol", "bob\"", "bob<x>", "b\x7f"] {
        assert!(!is_safe_address(bad.as_bytes()), "{bad:?}");
    }
}

#[test]
fn mailfrom_replaces_the_from_line() {
    let e = env(&[("MAILFROM", "cron@example.org")]);
    let (_, h) = sent(plan(
        &job(&e, b"date", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert!(h.starts_with("From: cron@example.org\n"), "{h}");
}

#[test]
fn newlines_in_variables_cannot_start_a_header() {
    let e = env(&[
        ("CONTENT_TYPE", "text/html\nBcc: eve"),
        ("CONTENT_TRANSFER_ENCODING", "base64\r\nX: y"),
        ("NOTE", "a\nb\rc"),
    ]);
    let (_, h) = sent(plan(
        &job(&e, b"date", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    assert!(h.contains("\nContent-Type: text/html Bcc: eve\n"), "{h}");
    assert!(
        h.contains("\nContent-Transfer-Encoding: base64  X: y\n"),
        "{h}"
    );
    assert!(h.contains("\nX-Cron-Env: <NOTE=a b c>\n"), "{h}");
    assert!(!h.contains("\nBcc:"));
    for line in h.lines() {
        assert!(!line.contains('\r'));
    }
}

#[test]
fn the_charset_follows_the_locale_and_is_corrected_for_8bit_output_under_c() {
    let e = env(&[]);
    let j = job(&e, b"date", JobExit::Exited(0));
    let (_, h) = sent(plan(&j, &config(), false, TextKind::Utf8));
    assert!(h.contains("charset=UTF-8\n"), "{h}");
    let (_, h) = sent(plan(&j, &config(), false, TextKind::Other8Bit));
    assert!(h.contains("charset=unknown-8bit\n"), "{h}");
    let latin1 = MailConfig {
        charset: "ISO-8859-1".into(),
        ..config()
    };
    let (_, h) = sent(plan(&j, &latin1, false, TextKind::Other8Bit));
    assert!(h.contains("charset=ISO-8859-1\n"), "{h}");
}

#[test]
fn locale_variables_give_the_codeset() {
    assert_eq!(charset_from_locale(None, None, None), "US-ASCII");
    assert_eq!(charset_from_locale(None, None, Some("C")), "US-ASCII");
    assert_eq!(
        charset_from_locale(Some(""), None, Some("POSIX")),
        "US-ASCII"
    );
    assert_eq!(
        charset_from_locale(None, None, Some("en_US.UTF-8")),
        "UTF-8"
    );
    assert_eq!(charset_from_locale(None, None, Some("C.utf8")), "UTF-8");
    assert_eq!(
        charset_from_locale(Some("de_DE.iso88591"), Some("C"), None),
        "ISO-8859-1"
    );
    assert_eq!(
        charset_from_locale(None, Some("ru_RU.KOI8-R"), Some("C")),
        "KOI8-R"
    );
    assert_eq!(
        charset_from_locale(None, None, Some("de_DE@euro")),
        "ISO-8859-1"
    );
    assert_eq!(
        charset_from_locale(None, None, Some("sr_RS.UTF-8@latin")),
        "UTF-8"
    );
}

#[test]
fn the_subject_host_is_short_unless_asked() {
    assert_eq!(subject_host(b"web1.example.org", false), b"web1");
    assert_eq!(subject_host(b"web1.example.org", true), b"web1.example.org");
}

fn decode_b64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 {c}"),
    };
    let mut out = Vec::new();
    for q in s.as_bytes().chunks(4) {
        let pad = q.iter().filter(|&&c| c == b'=').count();
        let n = q
            .iter()
            .take(4 - pad)
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (u32::from(val(c)) << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..4 - pad]);
    }
    out
}

/// Decodes an RFC 2047 header value made only of `=?cs?B?...?=` words.
fn decode_words(value: &str) -> (String, Vec<u8>) {
    let mut out = Vec::new();
    let mut charset = String::new();
    for word in value.split_whitespace() {
        let inner = word
            .strip_prefix("=?")
            .and_then(|w| w.strip_suffix("?="))
            .expect(word);
        let mut parts = inner.splitn(3, '?');
        charset = parts.next().unwrap().to_string();
        assert_eq!(parts.next().unwrap(), "B");
        out.extend(decode_b64(parts.next().unwrap()));
        assert!(word.len() <= 75, "encoded word too long: {word}");
    }
    (charset, out)
}

#[test]
fn a_non_ascii_subject_is_encoded_folded_and_decodes_back() {
    let e = env(&[]);
    let cmd = "echo 'Grüße aus Köln — 東京の天気は晴れです、明日もきっと晴れるでしょう' && ünïcode"
        .as_bytes();
    let (_, h) = sent(plan(
        &job(&e, cmd, JobExit::Exited(1)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    let start = h.find("Subject: ").unwrap();
    let end = h[start..].find("\nMIME-Version").unwrap() + start;
    let field = &h[start..end];
    for line in field.lines() {
        assert!(line.len() <= 78, "line too long: {line:?}");
        assert!(line.is_ascii());
    }
    let (charset, decoded) = decode_words(field.strip_prefix("Subject: ").unwrap());
    assert_eq!(charset, "UTF-8");
    let mut want = b"Cron <alice@vm> ".to_vec();
    want.extend_from_slice(cmd);
    want.extend_from_slice(b" (exit status 1)");
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

#[test]
fn a_latin1_subject_is_labelled_unknown_8bit_under_c() {
    let e = env(&[]);
    let (_, h) = sent(plan(
        &job(&e, b"echo caf\xe9", JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    let line = h.lines().find(|l| l.starts_with("Subject: ")).unwrap();
    let (charset, decoded) = decode_words(line.strip_prefix("Subject: ").unwrap());
    assert_eq!(charset, "unknown-8bit");
    assert_eq!(decoded, b"Cron <alice@vm> echo caf\xe9");
}

#[test]
fn a_long_ascii_subject_folds_at_spaces() {
    let e = env(&[]);
    let cmd = "run-parts --report /etc/cron.daily && find /var/tmp -mtime +30 -delete && echo done with the cleanup".as_bytes();
    let (_, h) = sent(plan(
        &job(&e, cmd, JobExit::Exited(0)),
        &config(),
        false,
        TextKind::Ascii,
    ));
    let start = h.find("Subject: ").unwrap();
    let end = h[start..].find("\nMIME-Version").unwrap() + start;
    let field = &h[start..end];
    assert!(field.lines().count() > 1, "{field}");
    for (i, line) in field.lines().enumerate() {
        assert!(line.len() <= 78, "{line:?}");
        if i > 0 {
            assert!(
                line.starts_with(' '),
                "continuation lines start with a space: {line:?}"
            );
            assert!(!line.trim().is_empty());
        }
    }
    let unfolded = field.replace('\n', "");
    assert_eq!(
        unfolded.as_bytes(),
        [b"Subject: Cron <alice@vm> ".as_slice(), cmd].concat()
    );
}

#[test]
fn base64_matches_the_rfc_vectors() {
    for (plain, enc) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), enc);
        assert_eq!(decode_b64(enc), plain.as_bytes());
    }
}

#[test]
fn outcomes_map_to_debian_log_lines() {
    assert_eq!(MailOutcome::Sent { bytes: 3 }.log_line(b"bob"), None);
    assert_eq!(MailOutcome::Disabled.log_line(b"bob"), None);
    assert_eq!(
        MailOutcome::NoMta.log_line(b"bob").unwrap().to_string(),
        "(CRON) info (No MTA installed, discarding output)"
    );
    assert_eq!(
        MailOutcome::MtaFailed {
            bytes: 5,
            status: 0x100
        }
        .log_line(b"bob")
        .unwrap()
        .to_string(),
        "(bob) MAIL (mailed 5 bytes of output but got status 0x0001 from MTA)"
    );
    let unsafe_to = MailOutcome::UnsafeAddress {
        value: b"-x".to_vec(),
    };
    assert_eq!(
        unsafe_to.log_line(b"bob").unwrap().to_string(),
        "(bob) UNSAFE MAIL (-x)"
    );
}
