//! The `crontab` and `cronnext` commands: the real binaries, as a user and (setgid) as a real
//! user switched to by root.

#[path = "../support"]
mod support {
    pub mod crontab;
    pub mod golden;
    pub mod root;
}

mod cli;
mod cronnext;
mod percent;
mod setgid;
