//! The client against real PostgreSQL servers (each test starts its own private one: initdb, its
//! own socket directory and port; tests/support/postgres.rs, shared with crond's tests) and
//! against fake servers that misbehave. `client`: logging in and calls as the helper makes them;
//! `tls`: sslmode, certificates, require_auth and channel binding; `bounds`: time and memory;
//! `pooler`: through pgbouncer in transaction mode; `servers`: several servers, a primary and
//! its standby.

#[path = "../../../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod postgres;
    #[allow(dead_code)]
    pub mod root;
}

mod bounds;
mod client;
mod servers;
mod tls;
