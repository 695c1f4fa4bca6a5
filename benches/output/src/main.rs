//! Plays the job child for one job that prints SIZE bytes (default 1 GiB): captures its merged
//! output with `crond::output`, mails it through a `-m` command that counts bytes, and prints
//! the count and this process's peak RSS (VmHWM). A benchmark, not a test: it asserts nothing
//! but prints what it measured.
#![allow(clippy::print_stdout)]

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Instant;

use crond::log::lines::JobExit;
use crond::job::output::Output;
use crond::job::mail::{self, JobMail, MailCommand, MailConfig};

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let size: u64 = std::env::args().nth(1).map_or(1 << 30, |s| s.parse().expect("SIZE in bytes"));
    let dir = crond::sys::tmpfile::default_dir();
    let count_file = std::env::temp_dir().join(format!("output-bench-count.{}", std::process::id()));
    let start = Instant::now();

    let (r, w) = crond::sys::pipe::pipe().unwrap();
    let w2 = w.try_clone().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("yes 'crond output benchmark line' | head -c {size}"))
        .stdin(Stdio::null())
        .stdout(Stdio::from(w))
        .stderr(Stdio::from(w2));
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let out = Output::capture(&dir, File::from(r)).unwrap();
    let status = child.wait().unwrap();
    let captured = start.elapsed();

    let env = vec![(b"PATH".to_vec(), b"/usr/bin:/bin".to_vec())];
    let job = JobMail { user: b"nobody", command: b"bench", env: &env, exit: JobExit::from_status(status), timed_out: None, not_run: None };
    let cfg = MailConfig {
        host: b"bench".to_vec(),
        charset: "US-ASCII".into(),
        command: MailCommand::Shell(format!("wc -c > {}", count_file.display()).into()),
    };
    let header_len = match mail::plan(&job, &cfg, out.is_empty(), out.text_kind()) {
        mail::Plan::Send { header, .. } => header.len() as u64,
        other => panic!("{other:?}"),
    };
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    let total = start.elapsed();
    let counted: u64 = std::fs::read_to_string(&count_file).unwrap().trim().parse().unwrap();
    let _ = std::fs::remove_file(&count_file);

    println!("job printed        {size} bytes");
    println!("captured           {} bytes (spilled: {}) in {:.2?}", out.len(), out.spilled(), captured);
    println!("mail outcome       {outcome:?}");
    println!("-m command counted {counted} bytes = header {header_len} + body {}", counted - header_len);
    println!("every byte arrived {}", counted - header_len == size);
    println!("total time         {total:.2?}");
    println!("peak RSS (VmHWM)   {} KiB", status_kb("VmHWM:"));
}
