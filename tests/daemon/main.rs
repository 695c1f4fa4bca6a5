//! The daemon and its jobs end to end: the real `crond`, real users, real files, inotify, the
//! real MTA (exim4). Time is libfaketime's; no test waits for a real minute.

#[path = "../support"]
mod support {
    pub mod daemon;
    #[allow(dead_code)]
    pub mod fork_limit;
    pub mod golden;
    pub mod mail;
    pub mod root;
    pub mod user;
}

mod container;
mod control;
mod extensions;
mod files;
mod history;
mod jobs;
mod json_log;
mod lifecycle;
mod lines;
mod mail;
mod mta;
mod notify;
mod pam;
mod pause;
mod reload;
mod retry;
mod usage;
