//! A store that is not a database, and a disk that fills up.

use std::process::Command;

use super::*;

#[test]
fn a_store_that_is_not_a_database_is_set_aside_and_a_new_one_has_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    std::fs::write(&store, vec![0x5a; 64 * 1024]).unwrap();
    let writer = Writer::start(&store, &[]);
    writer.send(&outcome("3f2a9c01b7d4", "alice", None, 1_000, Vec::new()).encode());
    let answer = writer.answer(&query(history(None, 100), true, 0, None));
    assert!(
        answer.contains("-- outcomes not recorded: the store was set aside: "),
        "{answer}"
    );
    assert!(answer.contains("3f2a9c01b7d4"), "{answer}");
    let logs = writer.logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0].level, 3);
    assert!(logs[0].text.contains("was set aside as"), "{logs:?}");
    writer.close();
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("history.db.broken-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    // The garbage is kept as it was, for whoever wants to look at it.
    let kept = std::fs::read(dir.path().join(&aside[0])).unwrap();
    assert_eq!(kept, vec![0x5a; 64 * 1024]);
    let conn = open_db(&store);
    assert_eq!(count(&conn, "SELECT count(*) FROM runs"), 1);
    let why: String = conn
        .query_row("SELECT why FROM gaps", [], |r| r.get(0))
        .unwrap();
    assert!(why.starts_with("the store was set aside: "), "{why}");
}

/// A tmpfs of 1 MiB mounted on `dir` while it lives (the test runs as root).
struct SmallDisk<'a>(&'a Path);

impl<'a> SmallDisk<'a> {
    fn mount(dir: &'a Path) -> Option<SmallDisk<'a>> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1M,mode=0700", "history-test"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

/// Fills what is left of the disk at `path` with one file.
fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn a_full_disk_loses_batches_counted_and_told_and_the_gap_is_recorded_once_writes_work() {
    // Mounting a tmpfs needs root (the suite runs as root).
    assert!(nix_is_root(), "this test mounts a tmpfs: run it as root");
    let top = tempfile::tempdir().unwrap();
    let mount = top.path().join("disk");
    std::fs::create_dir(&mount).unwrap();
    let Some(_disk) = SmallDisk::mount(&mount) else {
        panic!("mount -t tmpfs failed");
    };
    let store = store_in(&mount);
    let writer = Writer::start(&store, &[]);
    writer.send(&outcome("aaaa00000001", "alice", None, 1, Vec::new()).encode());
    // The store exists (the answer comes once the outcome is committed): now fill the disk.
    assert!(
        writer
            .answer(&query(history(None, 10), true, 0, None))
            .contains("aaaa00000001")
    );
    let filler = mount.join("filler");
    fill(&filler);
    for i in 0..5 {
        let big = outcome("bbbb00000001", "alice", None, 10 + i, vec![b'y'; 100_000]);
        writer.send(&big.encode());
        // One batch each: the query commits what came before it.
        let _ = writer.answer(&query(history(None, 1), true, 0, None));
    }
    let told: Vec<String> = writer.logs().into_iter().map(|l| l.text).collect();
    assert_eq!(told.len(), 1, "told once a minute at most: {told:?}");
    assert!(
        told[0].starts_with("history: 1 outcome not recorded: ") && told[0].contains("full"),
        "{told:?}"
    );
    // Room again: the next batch is written, and the gap with it.
    std::fs::remove_file(&filler).unwrap();
    writer.send(&outcome("cccc00000001", "alice", None, 100, Vec::new()).encode());
    let answer = writer.answer(&query(history(None, 100), true, 0, None));
    assert!(answer.contains("cccc00000001"), "{answer}");
    assert!(
        answer.contains("-- 5 outcomes not recorded: the store could not be written: "),
        "{answer}"
    );
    writer.close();
    let conn = open_db(&store);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM runs WHERE entry = 'bbbb00000001'"
        ),
        0
    );
    drop(conn);
}

fn nix_is_root() -> bool {
    crond::sys::user::effective_uid().0 == 0
}
