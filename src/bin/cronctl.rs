//! `cronctl`: everything, argument parsing included, is in the library.

fn main() -> std::process::ExitCode {
    crond::cronctl_main(&crond::cluster::pg::PgConnect)
}
