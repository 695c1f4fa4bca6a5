//! The real `crond` runs a user's job and its output leaves the job child the way docs/design.md
//! §5–§6 say: mailed through the real MTA (exim4's /usr/sbin/sendmail, read back from
//! /var/mail/USER) with Debian's headers and the exact body, the exit status in the subject,
//! nothing for MAILTO="", refused for an unsafe MAILTO; logged as CMDOUT lines with `-s` or
//! when there is no MTA; every byte of a large output handed to a `-m` command; the `%` text
//! fed to the job whether it reads it or not; the MTA run as the job's user with the job's
//! environment; spilled output in a nameless file of the job's user; an MTA that hangs killed
//! after ten minutes with the output logged. Time is libfaketime's, ten times faster (a hundred
//! for the hanging MTA), starting seconds before 10:00; every job here fires at 10:00.
//!
//! No mocks: real users (useradd, removed after), real processes, the real MTA. The tests fail,
//! never skip, without root or exim.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};

use crate::support::daemon::{Crond, Tree, wait_for_file};
use crate::support::mail::{Message, TestUser, mail_user, unqualified};

/// The host as the subject shows it without `-n`.
fn short_host() -> String {
    let host = String::from_utf8_lossy(&crond::sys::hostname()).into_owned();
    host.split('.').next().unwrap_or("").to_string()
}

/// A header as written before folding (the fold is a newline inserted before a space).
fn unfolded(value: &str) -> String {
    value.replace('\n', "")
}

fn install(tree: &Tree, user: &TestUser, text: &str) {
    tree.user_crontab(&user.name, text, 0o600, &user.name);
}

fn single(user: &TestUser) -> Message {
    let mut msgs = user.wait_for_mail(1);
    assert_eq!(msgs.len(), 1, "exactly one mail");
    msgs.remove(0)
}

/// Waits until the log has `count` lines containing `needle`.
fn wait_for_count(crond: &Crond, needle: &str, count: usize, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let text = crond.log_text();
        if text.matches(needle).count() >= count {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {count} log lines with {needle:?} within {secs} s; the log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn root_a_jobs_output_arrives_in_the_users_mailbox_with_the_debian_headers_and_the_exact_body() {
    let user = mail_user();
    let tree = Tree::new();
    install(
        &tree,
        &user,
        "GREETING=hello world\n0 10 * * * echo out; echo err >&2; printf 'Gr\\303\\274\\303\\237e\\r\\n'\n",
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    let m = single(&user);
    assert_eq!(
        m.body,
        "out\nerr\nGrüße\n".as_bytes(),
        "stdout and stderr merged in order, \\r dropped, UTF-8 unchanged"
    );
    assert_eq!(unqualified(&m.header_str("From")), "root (Cron Daemon)");
    assert_eq!(unqualified(&m.header_str("To")), user.name);
    assert_eq!(
        unfolded(&m.header_str("Subject")),
        format!(
            "Cron <{}@{}> echo out; echo err >&2; printf 'Gr\\303\\274\\303\\237e\\r\\n'",
            user.name,
            short_host()
        )
    );
    assert_eq!(m.header_str("MIME-Version"), "1.0");
    assert_eq!(m.header_str("Content-Type"), "text/plain; charset=UTF-8");
    assert_eq!(m.header_str("Content-Transfer-Encoding"), "8bit");
    assert_eq!(m.header_str("Auto-Submitted"), "auto-generated");
    assert_eq!(m.header_str("Precedence"), "bulk");
    assert_eq!(
        m.all("X-Cron-Env"),
        vec![
            "<SHELL=/bin/sh>".to_string(),
            "<PATH=/usr/bin:/bin>".to_string(),
            "<HOME=/>".to_string(),
            format!("<LOGNAME={}>", user.name),
            format!("<USER={}>", user.name),
            "<GREETING=hello world>".to_string(),
        ],
        "exactly the job's environment, nothing of the daemon's"
    );
    let log = crond.wait_for_log(&format!("({}) END (", user.name), 10);
    assert!(
        log.ends_with("printf 'Gr\\303\\274\\303\\237e\\r\\n')"),
        "{log}"
    );
}

#[test]
fn root_a_failing_jobs_mail_subject_carries_its_exit_status_and_the_log_its_end() {
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "0 10 * * * echo boom; exit 3\n");
    let crond = Crond::start(&tree, 1, &["-L", "15", "-n"]);
    let m = single(&user);
    assert_eq!(m.body, b"boom\n");
    let host = String::from_utf8_lossy(&crond::sys::hostname()).into_owned();
    assert_eq!(
        m.header_str("Subject"),
        format!(
            "Cron <{}@{host}> echo boom; exit 3 (exit status 3)",
            user.name
        ),
        "-n puts the full host name in the subject"
    );
    let cmd = crond.wait_for_log(&format!("({}) CMD ([", user.name), 10);
    let pid: String = cmd
        .split("CMD ([")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    crond.wait_for_log(
        &format!("(CRON) error (grandchild #{pid} failed with exit status 3)"),
        10,
    );
    crond.wait_for_log(
        &format!("({}) END ([{pid}] echo boom; exit 3)", user.name),
        10,
    );
    // Debian's identities: the job child's lines are CRON's, the daemon's cron's; cronie's
    // CMDEND is not logged with Debian's options (it would follow END at once).
    std::thread::sleep(Duration::from_millis(500));
    let log = crond.log_text();
    for needle in [" CMD ([", " END (["] {
        let line = log
            .lines()
            .find(|l| l.contains(needle))
            .expect("the line is logged");
        assert!(line.contains(" CRON["), "{line}");
    }
    let started = log.lines().find(|l| l.contains(" loaded from ")).unwrap();
    assert!(started.contains(" cron["), "{started}");
    assert!(!log.contains("CMDEND"), "{log}");
}

#[test]
fn root_an_empty_mailto_sends_nothing_and_a_list_mails_every_user() {
    let user = mail_user();
    let first = mail_user();
    let second = mail_user();
    let tree = Tree::new();
    install(
        &tree,
        &user,
        &format!(
            "MAILTO=\"\"\n0 10 * * * echo quiet\nMAILTO={},{}\n0 10 * * * echo loud\n",
            first.name, second.name
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    for to in [&first, &second] {
        let m = single(to);
        assert_eq!(m.body, b"loud\n");
        assert_eq!(
            unqualified(&m.header_str("To")),
            format!("{},{}", first.name, second.name)
        );
    }
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 10);
    user.assert_no_mail();
}

#[test]
fn root_an_unsafe_mailto_is_refused_at_load_and_the_mail_goes_to_the_owner() {
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "MAILTO=-oQ/tmp\n0 10 * * * echo secret\n");
    let crond = Crond::start(&tree, 1, &[]);
    // The line is an error where the file is loaded, at the value's column...
    let log = crond.wait_for_log(":1:8: MAILTO may hold only", 15);
    assert!(log.contains(&format!("spool/{}:1:8:", user.name)), "{log}");
    // ...so it is not in force: the output goes to the crontab's owner, and no MTA option
    // was ever passed.
    let msg = single(&user);
    assert_eq!(msg.body, b"secret\n");
    assert!(!crond.log_text().contains("UNSAFE MAIL"));
}

#[test]
fn root_an_unsafe_mailfrom_is_refused_at_load_and_the_mail_comes_from_the_default_sender() {
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "MAILFROM=x y\n0 10 * * * echo hello\n");
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(":1:11: MAILFROM may hold only", 15);
    let msg = single(&user);
    assert_eq!(msg.body, b"hello\n");
    assert!(
        msg.header_str("From").contains("Cron Daemon"),
        "{}",
        msg.header_str("From")
    );
}

#[test]
fn root_with_minus_s_the_output_goes_to_the_log_as_cmdout_lines_and_no_mail() {
    let user = mail_user();
    let tree = Tree::new();
    install(
        &tree,
        &user,
        "0 10 * * * printf 'first\\n\\nthird\\nlast'\n",
    );
    let crond = Crond::start(&tree, 1, &["-s"]);
    let log = wait_for_count(&crond, &format!("({}) CMDEND (", user.name), 1, 15);
    let outs: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(_, m)| m))
        .filter(|m| m.contains(") CMDOUT ("))
        .collect();
    let u = &user.name;
    assert_eq!(
        outs,
        [
            format!("({u}) CMDOUT (first)"),
            format!("({u}) CMDOUT ()"),
            format!("({u}) CMDOUT (third)"),
            format!("({u}) CMDOUT (last)"),
        ]
    );
    user.assert_no_mail();
}

#[test]
fn root_without_an_mta_the_output_is_logged_not_lost_and_an_mta_failure_is_logged_with_its_status()
{
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "0 10 * * * echo kept\n");
    let crond = Crond::start(
        &tree,
        1,
        &[
            "--sendmail",
            tree.path().join("no-sendmail").to_str().unwrap(),
        ],
    );
    crond.wait_for_log("(CRON) info (No MTA installed, discarding output)", 15);
    crond.wait_for_log(&format!("({}) CMDOUT (kept)", user.name), 10);
    drop(crond);

    let failing = tree.path().join("failing-mta");
    fs::write(&failing, "#!/bin/sh\ncat > /dev/null\nexit 75\n").unwrap();
    fs::set_permissions(&failing, fs::Permissions::from_mode(0o755)).unwrap();
    let tree2 = Tree::new();
    install(&tree2, &user, "0 10 * * * echo kept\n");
    let crond = Crond::start(&tree2, 2, &["--sendmail", failing.to_str().unwrap()]);
    crond.wait_for_log(
        &format!(
            "({}) MAIL (mailed 5 bytes of output but got status 0x004b from MTA)",
            user.name
        ),
        15,
    );
    user.assert_no_mail();
}

#[test]
fn root_an_mta_that_hangs_is_killed_after_ten_minutes_and_the_output_is_logged() {
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "0 10 * * * echo kept\n");
    let hanging = tree.path().join("hanging-mta");
    fs::write(&hanging, "#!/bin/sh\ncat > /dev/null\nsleep 100000\n").unwrap();
    fs::set_permissions(&hanging, fs::Permissions::from_mode(0o755)).unwrap();
    // A hundred times faster than real time: the MTA's ten minutes pass in six seconds.
    let crond = Crond::start_fast(
        &tree,
        1,
        "2026-11-21 09:59:58",
        100,
        &["--sendmail", hanging.to_str().unwrap()],
    );
    let line = crond.wait_for_log(
        &format!(
            "({}) MAIL (the MTA did not finish within 600 s (5 bytes written): killed; the \
             output follows in the log)",
            user.name
        ),
        40,
    );
    assert!(
        line.contains(" 10:10:0"),
        "ten minutes after the job: {line}"
    );
    let cmdout = crond.wait_for_log(&format!("({}) CMDOUT (kept)", user.name), 10);
    assert!(cmdout.contains(" 10:10:0"), "{cmdout}");
    user.assert_no_mail();
}

#[test]
fn root_a_job_ends_when_its_shell_exits_even_if_it_left_a_process_running() {
    let user = mail_user();
    let tree = Tree::new();
    let marker = tree.out("left-behind");
    // The background process holds the output pipe (and writes to it later); Debian's job ends
    // when the shell exits, and so does ours: the mail and END come at once.
    install(
        &tree,
        &user,
        &format!(
            "0 10 * * * sh -c 'echo $$ > {}; sleep 3; echo late; exec sleep 300' & echo started\n",
            marker.display()
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    let end = crond.wait_for_log(&format!("({}) END (", user.name), 20);
    assert!(end.contains(" 10:00:0"), "at once: {end}");
    let message = single(&user);
    assert_eq!(message.body, b"started\n");
    // The left-behind process lives on, and its later output goes nowhere (no second mail, no
    // broken pipe to kill it).
    let pid = wait_for_file(&marker, 10).trim().to_string();
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the left-behind process was killed by its output"
    );
    assert_eq!(user.wait_for_mail(1).len(), 1, "one mail only");
    let _ = std::process::Command::new("pkill")
        .args(["-KILL", "-u", &user.name])
        .status();
}

#[test]
fn root_a_mail_command_receives_every_byte_of_a_large_output() {
    let user = mail_user();
    let tree = Tree::new();
    let received = tree.out("received");
    // 20 MB of numbered lines: any lost, repeated or reordered byte changes the body.
    let size = 20_000_000u64;
    install(
        &tree,
        &user,
        &format!("0 10 * * * seq 1 100000000 | head -c {size}\n"),
    );
    let command = format!("cat > {}.part && mv {0}.part {0}", received.display());
    let crond = Crond::start(&tree, 1, &["-L", "3", "-m", &command]);
    crond.wait_for_log(&format!("({}) END (", user.name), 60);
    let message = fs::read(&received).expect("the -m command wrote its input");
    let split = message
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("a header, a blank line, then the body");
    assert!(message.starts_with(b"From: root (Cron Daemon)\n"));
    let body = &message[split + 2..];
    assert_eq!(body.len() as u64, size);
    let mut expected = Vec::with_capacity(size as usize + 16);
    let mut n = 1u64;
    while (expected.len() as u64) < size {
        expected.extend_from_slice(format!("{n}\n").as_bytes());
        n += 1;
    }
    expected.truncate(size as usize);
    assert!(body == expected.as_slice(), "the body is the job's output");
    user.assert_no_mail();
}

#[test]
fn root_percent_input_larger_than_a_pipe_is_fed_to_a_job_that_reads_it_and_does_not_block_one_that_does_not()
 {
    let user = mail_user();
    let tree = Tree::new();
    let got = tree.out("stdin");
    // The longest crontab line is 131072 bytes (cronie's limit), so this is the most `%` text
    // a crontab can hold: about twice a pipe's 64 KiB buffer.
    let lines: Vec<String> = (0..12_000).map(|i| format!("{i:09}")).collect();
    let text = lines.join("%");
    install(
        &tree,
        &user,
        &format!(
            "0 10 * * * cat > {}.part; mv {0}.part {0}%{text}\n0 10 * * * echo ignored%{text}\n",
            got.display()
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    let read = wait_for_file(&got, 20);
    // The first % ends the command; each later % is a newline; a final newline is added.
    assert_eq!(read, format!("{}\n", lines.join("\n")));
    let m = single(&user);
    assert_eq!(m.body, b"ignored\n");
    assert_eq!(
        m.header_str("Subject"),
        format!("Cron <{}@{}> echo ignored", user.name, short_host()),
        "the subject shows the command without its input"
    );
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 10);
}

#[test]
fn root_a_megabyte_of_output_arrives_whole_through_the_real_mta() {
    let user = mail_user();
    let tree = Tree::new();
    install(&tree, &user, "0 10 * * * seq 1 200000\n");
    let _crond = Crond::start(&tree, 1, &[]);
    let m = single(&user);
    let expected: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert!(expected.len() > 1_000_000);
    assert_eq!(m.body.len(), expected.len());
    assert!(
        m.body == expected.as_bytes(),
        "the body is the job's output"
    );
}

#[test]
fn root_past_max_output_the_rest_is_dropped_and_the_mail_says_how_much() {
    let user = mail_user();
    let tree = Tree::new();
    let received = tree.out("received");
    // 5 MiB of output against a 1 MiB limit: the first MiB arrives, then one line saying how
    // many bytes were dropped (the 5 MiB and "finished\n" less the first MiB); the job itself
    // runs to its end, never blocked on a full pipe.
    install(
        &tree,
        &user,
        "0 10 * * * head -c 5242880 /dev/zero | tr '\\0' y; echo finished >&2\n",
    );
    let command = format!("cat > {}.part && mv {0}.part {0}", received.display());
    let crond = Crond::start(&tree, 1, &["-L", "3", "-m", &command, "--max-output", "1M"]);
    crond.wait_for_log(&format!("({}) END (", user.name), 60);
    let log = crond.wait_for_log(
        "4194313 bytes of output dropped past the --max-output limit of 1048576 bytes",
        10,
    );
    assert!(log.contains(&format!("({}) OUTPUT (", user.name)), "{log}");
    let message = fs::read(&received).expect("the -m command wrote its input");
    let split = message.windows(2).position(|w| w == b"\n\n").unwrap();
    let body = &message[split + 2..];
    let note = b"\n[crond: 4194313 more bytes of output were dropped: past the limit of \
                 1048576 bytes (crond --max-output)]\n";
    assert!(
        body.ends_with(note),
        "{:?}",
        String::from_utf8_lossy(&body[body.len() - 200..])
    );
    assert_eq!(body.len(), (1 << 20) + note.len());
    assert!(body[..1 << 20].iter().all(|&b| b == b'y'));
    user.assert_no_mail();
}

#[test]
fn root_a_full_temporary_directory_loses_the_tail_of_the_output_and_the_mail_says_so() {
    let user = mail_user();
    let tree = Tree::new();
    // A 1 MiB tmpfs as the daemon's TMPDIR: a job printing 3 MiB fills it while spilling.
    let small = tree.path().join("small-tmp");
    std::fs::create_dir(&small).unwrap();
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,mode=1777", "tmpfs"])
        .arg(&small)
        .status()
        .unwrap();
    assert!(status.success(), "mount a tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(small.clone());
    let received = tree.out("received");
    install(
        &tree,
        &user,
        "0 10 * * * head -c 3145728 /dev/zero | tr '\\0' y\n",
    );
    let command = format!("cat > {}.part && mv {0}.part {0}", received.display());
    let crond = Crond::start_with_env(
        &tree,
        1,
        &["-L", "3", "-m", &command],
        &[("TMPDIR", small.to_str().unwrap())],
    );
    crond.wait_for_log(&format!("({}) END (", user.name), 30);
    let log = crond.log_text();
    assert!(
        log.contains("bytes of output lost: can't spool to"),
        "{log}"
    );
    let message = fs::read(&received).expect("the mail was still sent");
    let text = String::from_utf8_lossy(&message);
    assert!(
        text.contains("more bytes of output were lost: "),
        "{:.300}",
        &text[text.len().saturating_sub(300)..]
    );
    user.assert_no_mail();
}

#[test]
fn root_the_mail_command_runs_as_the_jobs_user_with_the_jobs_environment() {
    let user = mail_user();
    let tree = Tree::new();
    let seen = tree.out("seen");
    install(&tree, &user, "FOO=bar\n0 10 * * * echo hi\n");
    let command = format!(
        "{{ id -un; env | grep -v '^PWD=' | sort; }} > {0}.part; mv {0}.part {0}",
        seen.display()
    );
    let _crond = Crond::start(&tree, 1, &["-m", &command]);
    let text = wait_for_file(&seen, 15);
    let mut expected = vec![
        "FOO=bar".to_string(),
        "HOME=/".to_string(),
        format!("LOGNAME={}", user.name),
        "PATH=/usr/bin:/bin".to_string(),
        "SHELL=/bin/sh".to_string(),
        format!("USER={}", user.name),
    ];
    expected.sort();
    expected.insert(0, user.name.clone());
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn root_spilled_output_is_a_nameless_file_of_roots_out_of_the_users_reach_while_the_job_runs() {
    let user = mail_user();
    let tree = Tree::new();
    // More than the 64 KiB kept in memory, then time to look at the job child's descriptors.
    install(
        &tree,
        &user,
        "MAILTO=\"\"\n0 10 * * * head -c 300000 /dev/zero; sleep 2\n",
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    let cmd = crond.wait_for_log(&format!("({}) CMD (head", user.name), 15);
    let child: u32 = cmd
        .split("CRON[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .and_then(|p| p.parse().ok())
        .expect("the job child's pid in the log line");
    let deadline = Instant::now() + Duration::from_secs(2);
    let spill = loop {
        let found = fs::read_dir(format!("/proc/{child}/fd"))
            .expect("the job child is running")
            .flatten()
            .map(|e| e.path())
            .find(|p| fs::read_link(p).is_ok_and(|t| t.to_string_lossy().ends_with(" (deleted)")));
        if let Some(path) = found {
            break path;
        }
        assert!(Instant::now() < deadline, "no spill file in the job child");
        std::thread::sleep(Duration::from_millis(20));
    };
    let meta = fs::metadata(&spill).expect("stat through /proc");
    // The job child is root for the job's life and reads the output: the file is root's, and
    // no process of the user can open it (it has no name, and the job child's /proc entry is
    // root's).
    assert_eq!(meta.uid(), 0, "the spill file is root's");
    assert_eq!(meta.nlink(), 0, "the spill file has no name");
    assert_eq!(meta.mode() & 0o777, 0o600);
    let as_user = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            &user.name,
            "--regid",
            &user.name,
            "--clear-groups",
            "--",
        ])
        .arg("head")
        .arg("-c1")
        .arg(&spill)
        .output()
        .expect("setpriv");
    assert!(!as_user.status.success(), "the user read root's spill file");
    assert!(as_user.stdout.is_empty());
    crond.wait_for_log(&format!("({}) END (head", user.name), 15);
    // END is the child's last line; it exits, and the daemon reaps it, just after.
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{child}")).exists() {
        assert!(
            Instant::now() < deadline,
            "the job child, and with it the file, is gone"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
