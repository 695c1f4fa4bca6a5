//! Cluster mode's PostgreSQL client against a real server: each test starts its own private
//! PostgreSQL (initdb, its own socket directory and port) and logs in as the daemon's helper
//! would, over the Unix socket (trust) or TCP (SCRAM-SHA-256, md5) with a passfile.

#[path = "../support"]
mod support {
    pub mod postgres;
    // Only `is_root`: these tests run as any user (as root, the server runs as `postgres`).
    #[allow(dead_code)]
    pub mod root;
}

mod client;
