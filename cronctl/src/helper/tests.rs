//! The helper's loop (`serve`) over a real pipe, with the machine's fake database: what the
//! daemon said just before it went is acted on when the input ends.

use std::fs::File;
use std::io::{Read, Seek, Write};

use crond::cluster::wire::{FromHelper, RunKey, ToHelper};

use super::machine::tests::{advance, runs, two_hosts};
use super::serve;

#[test]
fn a_stop_read_only_after_the_daemon_is_gone_still_gives_back_its_unforked_runs_and_writes_ends() {
    let (clock, world, mut a, mut b) = two_hosts();
    b.forks = false;
    let all = runs(200);
    a.ask(&all);
    b.ask(&all);
    let b_go = b.go();
    assert!(b_go.len() >= 3, "b marked a window of its share started");
    // b's daemon forked three, said so, ended the first, said STOP and, not answered within
    // its wait, exited: the helper's loop reads those lines and then the end of its input.
    let forked: Vec<RunKey> = b_go[..3].iter().map(|seq| b.asked[seq].clone()).collect();
    let mut lines: Vec<ToHelper> = forked
        .iter()
        .map(|key| ToHelper::Forked { key: key.clone() })
        .collect();
    lines.push(ToHelper::End {
        key: forked[0].clone(),
        status: 0,
    });
    lines.push(ToHelper::Stop);
    let (input, daemon) = crond::sys::pipe::pipe().unwrap();
    let text: String = lines.iter().map(ToHelper::encode).collect();
    // Written whole, and the write end closed: the daemon is gone.
    File::from(daemon).write_all(text.as_bytes()).unwrap();
    let said = tempfile::tempfile().unwrap();
    let mut out = said.try_clone().unwrap();
    assert_eq!(serve(&mut b.machine, File::from(input), &mut out), 0);
    b.machine.release();
    let mut said = said;
    said.rewind().unwrap();
    let mut text = String::new();
    said.read_to_string(&mut text).unwrap();
    b.said
        .extend(text.lines().filter_map(|l| FromHelper::decode(l).ok()));
    {
        let w = world.borrow();
        let on_b: Vec<_> = w
            .runs
            .iter()
            .filter(|(_, r)| r.host == "b" && r.started)
            .collect();
        assert_eq!(on_b.len(), 3, "only what b forked stays started");
        assert!(
            w.runs[&forked[0]].ended,
            "the end said before the exit is written"
        );
        assert!(!w.runs[&forked[1]].ended);
    }
    let gave_back = format!("gave back {} runs", b_go.len() - 3);
    assert!(
        b.said
            .iter()
            .any(|m| matches!(m, FromHelper::Log { text, .. } if text.contains(&gave_back))),
        "{:?}",
        b.said
    );
    // a, which waits for each of them, starts what b gave back: every run starts, each once.
    for _ in 0..20 {
        advance(&clock, a.machine.takeover_every());
        a.tick();
    }
    let w = world.borrow();
    assert!(w.runs.values().all(|r| r.started), "every run started");
    let mut go = a.go();
    go.sort_unstable();
    go.dedup();
    assert_eq!(go.len(), a.go().len(), "each started once");
    assert_eq!(go.len(), 200 - 3, "a started all but the three b forked");
}
