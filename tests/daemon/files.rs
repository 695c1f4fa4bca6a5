//! The real `crond` refuses untrustworthy crontabs with Debian's log lines and runs the good
//! lines of a file that has bad ones.

use std::os::unix::fs::symlink;
use std::process::Command;

use crate::support::daemon::*;

#[test]
fn root_bad_files_are_refused_with_debians_log_lines_and_good_ones_run() {
    require_root();
    let tree = Tree::new();
    let other = user_with_home("b", &tree.path().join("out"));
    let out = |n: &str| tree.out(n).display().to_string();
    let job = |n: &str| format!("0 10 * * * echo {n} > {}\n", out(n));
    let sys_job = |n: &str| format!("0 10 * * * root echo {n} > {}\n", out(n));

    // Spool files.
    tree.user_crontab("root", &job("insecure"), 0o644, "root");
    tree.user_crontab(&other.name, &job("wrongowner"), 0o600, "daemon");
    tree.user_crontab("nosuchuserzz", &job("orphan"), 0o600, "root");
    // /etc/cron.d files.
    tree.write_file(&tree.cron_d().join("writable"), &sys_job("writable"), 0o666);
    tree.write_file(&tree.cron_d().join("linked"), &sys_job("linked"), 0o644);
    tree.write_file(&tree.cron_d().join("theirs"), &sys_job("theirs"), 0o644);
    chown(&tree.cron_d().join("theirs"), &other.name);
    std::fs::hard_link(
        tree.cron_d().join("linked"),
        tree.path().join("second-name"),
    )
    .expect("hard link");
    let target = tree.path().join("target");
    tree.write_file(&target, &sys_job("symlinked"), 0o644);
    symlink(&target, tree.cron_d().join("goodlink")).expect("symlink");
    let bad_target = tree.path().join("bad-target");
    tree.write_file(&bad_target, &sys_job("badlink"), 0o644);
    symlink(&bad_target, tree.cron_d().join("badlink")).expect("symlink");
    let status = Command::new("chown")
        .args(["-h", &other.name])
        .arg(tree.cron_d().join("badlink"))
        .status()
        .expect("chown -h");
    assert!(status.success());
    let fifo = Command::new("mkfifo")
        .arg(tree.cron_d().join("pipe"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    tree.write_file(
        &tree.cron_d().join("mixed"),
        &format!("{}61 10 * * * root echo bad\n", sys_job("good")),
        0o644,
    );

    let crond = Crond::start(&tree, 1, &[]);
    let cron_d = |n: &str| tree.cron_d().join(n).display().to_string();
    let (b, b_uid) = (&other.name, uid_of_user(&other.name));
    let daemon_uid = uid_of_user("daemon");
    crond.wait_for_log(
        "(root) INSECURE MODE (mode 0600 expected) (spool/root: mode 0644, must be 0600)",
        10,
    );
    crond.wait_for_log(
        &format!(
            "({b}) WRONG FILE OWNER (spool/{b}: owned by uid {daemon_uid} (daemon), \
             must be uid {b_uid} ({b}) or root)"
        ),
        10,
    );
    crond.wait_for_log(
        &format!(
            "(*system*theirs) WRONG FILE OWNER ({}: owned by uid {b_uid} ({b}), must be root)",
            cron_d("theirs")
        ),
        10,
    );
    crond.wait_for_log("(nosuchuserzz) ORPHAN (no passwd entry)", 10);
    crond.wait_for_log(
        &format!("(*system*pipe) NOT A REGULAR FILE ({})", cron_d("pipe")),
        10,
    );
    crond.wait_for_log(
        &format!(
            "(*system*writable) INSECURE MODE (group/other writable) ({}: mode 0666, \
             must not be writable by group or others)",
            cron_d("writable")
        ),
        10,
    );
    crond.wait_for_log(
        &format!(
            "(*system*linked) NUMBER OF HARD LINKS > 1 ({}: 2 hard links, must have 1)",
            cron_d("linked")
        ),
        10,
    );
    crond.wait_for_log(
        &format!(
            "(*system*badlink) WRONG SYMLINK OWNER ({})",
            cron_d("badlink")
        ),
        10,
    );
    crond.wait_for_log(
        &format!("(*system*mixed) ERROR ({}:2:1:", cron_d("mixed")),
        10,
    );

    assert_eq!(wait_for_file(&tree.out("good"), 15), "good\n");
    assert_eq!(wait_for_file(&tree.out("symlinked"), 15), "symlinked\n");
    // Every job due at 10:00 was started with the two above; give them a moment to write.
    std::thread::sleep(std::time::Duration::from_millis(700));
    for refused in [
        "insecure",
        "wrongowner",
        "orphan",
        "writable",
        "theirs",
        "linked",
        "badlink",
    ] {
        assert!(!tree.out(refused).exists(), "{refused} must not run");
    }
}

#[test]
fn root_a_refused_file_loads_once_its_mode_is_fixed() {
    require_root();
    let tree = Tree::new();
    let fixed = tree.out("fixed");
    tree.user_crontab(
        "root",
        &format!("1 10 * * * echo fixed > {}\n", fixed.display()),
        0o644,
        "root",
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("(root) INSECURE MODE (mode 0600 expected)", 10);
    std::fs::set_permissions(
        tree.spool().join("root"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod");
    crond.wait_for_log("(root) RELOAD (spool/root)", 10);
    assert_eq!(wait_for_file(&fixed, 20), "fixed\n");
}

#[test]
fn root_a_user_crontab_over_a_mebibyte_is_refused_whole_and_a_system_file_may_be_larger() {
    require_root();
    let tree = Tree::new();
    let ran = tree.out("ran");
    // A valid entry first, then comments up to one byte past 1 MiB: nothing of it loads.
    let mut big = format!("* * * * * echo user > {}\n", ran.display());
    while big.len() <= 1 << 20 {
        big.push_str("# padding padding padding padding padding padding padding\n");
    }
    tree.user_crontab("root", &big, 0o600, "root");
    // A system file of 2 MiB is within its own bound (64 MiB).
    let sys = tree.out("sys");
    let mut system = format!("0 10 * * * root echo sys > {}\n", sys.display());
    while system.len() <= 2 << 20 {
        system.push_str("# padding padding padding padding padding padding padding\n");
    }
    tree.write_file(&tree.cron_d().join("big"), &system, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(
        "(root) ERROR (can't read spool/root: larger than 1 MiB)",
        10,
    );
    assert_eq!(wait_for_file(&sys, 20), "sys\n");
    assert!(!ran.exists(), "nothing of the refused file ran");
}

#[test]
fn root_no_log_line_is_longer_than_a_kibibyte_whatever_the_crontab_holds() {
    require_root();
    let tree = Tree::new();
    let done = tree.out("done");
    // A 5,000-byte command (logged by CMD and CMDEND), its output logged by -s, and a
    // 3,000-byte bad line (an ERROR line echoing part of it).
    let long_arg = "x".repeat(5_000);
    let bad = format!("@{} root true", "y".repeat(3_000));
    tree.write_file(
        &tree.cron_d().join("long"),
        &format!(
            "{bad}\n0 10 * * * root echo {long_arg}; echo done > {}\n",
            done.display()
        ),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &["-s"]);
    wait_for_file(&done, 20);
    crond.wait_for_log("CMDEND", 10);
    let log = crond.log_text();
    let mut cut = 0;
    for line in log.lines() {
        // The syslog-style prefix ("Nov 21 09:59:50 cron[123]: ") is the sink's, not the line's.
        let message = line.split_once("]: ").map_or(line, |(_, m)| m);
        assert!(
            message.len() <= 1024,
            "{} bytes: {message:.80}",
            message.len()
        );
        cut += usize::from(message.ends_with("...[cut])"));
    }
    // CMD and CMDEND carry the long command, cut; the ERROR line's message was cut by the
    // parser already; the output line is logged in pieces that together are all of it.
    assert!(log.contains("ERROR ("), "{log}");
    assert_eq!(cut, 2, "{log}");
    let output: String = log
        .lines()
        .filter_map(|l| {
            l.split_once(") CMDOUT (")
                .map(|(_, m)| m.trim_end_matches(')'))
        })
        .collect();
    assert_eq!(output, long_arg);
}

/// /etc/cron.d/linked is a symlink to a file elsewhere (a package's, or an admin's in /srv).
fn linked_tree() -> (Tree, std::path::PathBuf) {
    let tree = Tree::new();
    let pkg = tree.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    let target = pkg.join("job.cron");
    tree.write_file(
        &target,
        &format!("0 10 * * * root echo old > {}\n", tree.out("old").display()),
        0o644,
    );
    std::os::unix::fs::symlink(&target, tree.cron_d().join("linked")).unwrap();
    (tree, target)
}

#[test]
fn root_an_edit_of_a_symlinked_files_target_is_picked_up_with_inotify() {
    require_root();
    let (tree, target) = linked_tree();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:30", &[]);
    crond.wait_for_log(" loaded from ", 10);
    // Edited in place, as `>>` or a simple editor does.
    std::fs::write(
        &target,
        format!("0 10 * * * root echo new > {}\n", tree.out("new").display()),
    )
    .unwrap();
    crond.wait_for_log(
        &format!(
            "(*system*linked) RELOAD ({})",
            tree.cron_d().join("linked").display()
        ),
        10,
    );
    assert_eq!(wait_for_file(&tree.out("new"), 20), "new\n");
    assert!(!tree.out("old").exists());
}

#[test]
fn root_a_replaced_target_of_a_symlinked_file_is_picked_up_without_inotify() {
    require_root();
    let (tree, target) = linked_tree();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:30", &["-i"]);
    crond.wait_for_log(" loaded from ", 10);
    // Replaced by a rename, as most editors save; the link itself does not change.
    let staged = target.with_extension("new");
    tree.write_file(
        &staged,
        &format!("0 10 * * * root echo new > {}\n", tree.out("new").display()),
        0o644,
    );
    std::fs::rename(&staged, &target).unwrap();
    assert_eq!(wait_for_file(&tree.out("new"), 20), "new\n");
    assert!(!tree.out("old").exists());
    assert!(crond.log_text().contains("(*system*linked) RELOAD ("));
}

/// A tree whose local zone is `tree/localtime`, UTC at first, and an entry for 05:01 local time:
/// 10:01 UTC once the zone is New York's (UTC-5 in November), hours away while it is UTC.
fn zoned_tree() -> (Tree, std::path::PathBuf, String) {
    let tree = Tree::new();
    let localtime = tree.path().join("localtime");
    std::os::unix::fs::symlink("/usr/share/zoneinfo/UTC", &localtime).unwrap();
    tree.write_file(
        &tree.cron_d().join("zoned"),
        "1 5 * * * root true at five past one\n",
        0o644,
    );
    let arg = localtime.to_str().unwrap().to_string();
    (tree, localtime, arg)
}

#[test]
fn root_a_zone_link_pointed_elsewhere_moves_the_local_entries_within_the_minute() {
    require_root();
    let (tree, localtime, arg) = zoned_tree();
    let crond = Crond::start(&tree, 1, &["--localtime", &arg]);
    crond.wait_for_log(" loaded from ", 10);
    // Re-pointed as timedatectl does: a new link renamed over the old one.
    let staged = tree.path().join("localtime.new");
    std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &staged).unwrap();
    std::fs::rename(&staged, &localtime).unwrap();
    crond.wait_for_log("local time zone changed: America/New_York", 10);
    crond.wait_for_log("(root) CMD (true at five past one)", 20);
    // The log's time stamps follow the zone too, as syslog's do: 05:01 in New York.
    let log = crond.log_text();
    let cmd = log
        .lines()
        .find(|l| l.contains("(root) CMD (true at five past one)"))
        .unwrap();
    assert!(cmd.starts_with("Nov 21 05:01:"), "{log}");
}

#[test]
fn root_a_zone_file_rewritten_in_place_is_seen_without_inotify() {
    require_root();
    let tree = Tree::new();
    let localtime = tree.path().join("localtime");
    // A copy, not a link, rewritten in place as a tzdata upgrade rewrites the file it ships.
    std::fs::copy("/usr/share/zoneinfo/UTC", &localtime).unwrap();
    tree.write_file(
        &tree.cron_d().join("zoned"),
        "1 5 * * * root true at five past one\n",
        0o644,
    );
    let arg = localtime.to_str().unwrap().to_string();
    let crond = Crond::start(&tree, 1, &["-i", "--localtime", &arg]);
    crond.wait_for_log(" loaded from ", 10);
    let ny = std::fs::read("/usr/share/zoneinfo/America/New_York").unwrap();
    std::fs::write(&localtime, ny).unwrap();
    crond.wait_for_log("local time zone changed: localtime", 15);
    crond.wait_for_log("(root) CMD (true at five past one)", 20);
}

#[test]
fn root_the_real_etc_localtime_rewritten_by_a_tzdata_upgrade_is_seen_within_the_minute() {
    require_root();
    let tree = Tree::new();
    tree.write_file(
        &tree.cron_d().join("zoned"),
        "1 5 * * * root true at five past one\n",
        0o644,
    );
    // The daemon's own mount namespace, where the file /etc/localtime leads to is this copy of
    // UTC bind-mounted over it: rewriting the copy is a tzdata upgrade rewriting the file in
    // place, seen only there. inotify on /etc sees nothing of it; the minute's check must.
    let zone = tree.path().join("zone");
    std::fs::copy("/usr/share/zoneinfo/UTC", &zone).unwrap();
    let zone_arg = zone.to_str().unwrap();
    let crond = Crond::start_wrapped(
        &tree,
        1,
        "2026-11-21 09:59:50",
        &[
            "unshare",
            "-m",
            "sh",
            "-e",
            "-c",
            r#"mount --bind "$1" /etc/localtime; shift; exec "$@""#,
            "sh",
            zone_arg,
        ],
        &["--localtime", "/etc/localtime"],
    );
    crond.wait_for_log("running with inotify support", 10);
    let ny = std::fs::read("/usr/share/zoneinfo/America/New_York").unwrap();
    std::fs::write(&zone, ny).unwrap();
    crond.wait_for_log("local time zone changed: ", 15);
    // 05:01 in New York is 10:01 UTC.
    crond.wait_for_log("(root) CMD (true at five past one)", 20);
}

#[test]
fn root_a_cron_d_reached_through_another_users_link_is_refused_until_the_link_is_roots() {
    require_root();
    let tree = Tree::new();
    let other = user_with_home("cdl", &tree.path().join("out"));
    // Root's directory of root's files, reached through the other user's link to it.
    let real = tree.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    let ran = tree.out("ran");
    tree.write_file(
        &real.join("job"),
        &format!("* * * * * root echo ran > {}\n", ran.display()),
        0o644,
    );
    let link = tree.path().join("blink");
    symlink(&real, &link).expect("symlink");
    let chown_link = |owner: &str| {
        let status = Command::new("chown")
            .args(["-h", owner])
            .arg(&link)
            .status()
            .expect("chown -h");
        assert!(status.success());
    };
    chown_link(&other.name);
    // /etc/crontab in a directory anyone may write.
    let open = tree.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .expect("chmod");
    let open_ran = tree.out("open-ran");
    tree.write_file(
        &open.join("crontab"),
        &format!("* * * * * root echo ran > {}\n", open_ran.display()),
        0o644,
    );
    let cron_d = link.display().to_string();
    let system = open.join("crontab").display().to_string();
    let crond = Crond::start(
        &tree,
        1,
        &["--cron-d", &cron_d, "--system-crontab", &system],
    );
    let uid = uid_of_user(&other.name);
    crond.wait_for_log(
        &format!(
            "(*system*job) WRONG SYMLINK OWNER ({cron_d}/job: the link {cron_d} is uid {uid}'s)"
        ),
        10,
    );
    crond.wait_for_log(
        &format!(
            "(*system*) INSECURE DIRECTORY (other writable, not sticky) ({system}: the directory {} has mode 0777)",
            open.display()
        ),
        10,
    );
    // Past 10:00 and 10:01 (fake): neither ran.
    std::thread::sleep(std::time::Duration::from_secs(8));
    assert!(!ran.exists(), "{}", crond.log_text());
    assert!(!open_ran.exists(), "{}", crond.log_text());
    // Root's link to the same directory: the file loads at the next minute's look and runs.
    chown_link("root");
    assert_eq!(wait_for_file(&ran, 30), "ran\n");
}

#[test]
fn a_percent_meant_for_date_is_logged_as_a_warning_once_per_load_and_the_entry_still_loads() {
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(&me, "0 3 * * * date +%F > /dev/null\n", 0o600, &me);
    let crond = Crond::start(&tree, 1, &["-i"]);
    crond.wait_for_log(" loaded from ", 10);
    let warning = crond.wait_for_log("'%' ends the command", 5);
    assert!(
        warning.contains(&format!(
            "({me}) WARNING ({}/{me}:1:17: '%' ends the command here",
            tree.spool().display()
        )),
        "{warning}"
    );
    assert!(
        warning.contains(r"write +\%F if the % belongs"),
        "{warning}"
    );
    assert_eq!(crond.log_text().matches("'%' ends the command").count(), 1);
    assert!(
        crond.log_text().contains("1 entry loaded from"),
        "{}",
        crond.log_text()
    );
}
