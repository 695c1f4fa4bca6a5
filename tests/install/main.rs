//! Installation: `make install`, the Debian package, the systemd unit, the man pages, and an
//! installed tree run end to end.

#[path = "../support"]
mod support {
    pub mod install;
    pub mod root;
    pub mod user;
}

mod boot;
mod deb;
mod debian;
mod e2e;
mod make;
mod man;
mod rpm;
mod unit;
