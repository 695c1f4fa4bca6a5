//! Cluster mode against a real PostgreSQL: each test starts its own private server (initdb, its
//! own socket directory and port). `daemons`: real crond daemons as cluster hosts under
//! libfaketime, and cronctl. The client's own tests are in the cronctl package
//! (cronctl/tests/cluster), which builds the `cronctl` binary these tests run.

#[path = "../support"]
mod support {
    #[allow(dead_code)]
    pub mod daemon;
    #[allow(dead_code)]
    pub mod fork_limit;
    pub mod golden;
    pub mod pgbouncer;
    #[allow(dead_code)]
    pub mod postgres;
    #[allow(dead_code)]
    pub mod root;
    #[allow(dead_code)]
    pub mod user;
}

mod daemons;
