//! Cluster mode against a real PostgreSQL: each test starts its own private server (initdb, its
//! own socket directory and port). `client`: the client logs in as the daemon's helper would,
//! over the Unix socket (trust) or TCP (SCRAM-SHA-256, md5) with a passfile. `daemons`: real
//! crond daemons as cluster hosts under libfaketime, and cronctl.

#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod daemon;
    pub mod postgres;
    #[allow(dead_code)]
    pub mod root;
    #[allow(dead_code)]
    pub mod user;
}

mod client;
mod daemons;
