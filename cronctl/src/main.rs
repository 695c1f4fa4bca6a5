//! `cronctl`: everything, argument parsing included, is in crond's library; this package adds
//! the PostgreSQL client it connects with.

fn main() -> std::process::ExitCode {
    cronctl::cronctl_main(&cronctl::RealConnector)
}
