//! `cronctl`: the package's library does everything, argument parsing included; `main` hands
//! it the real PostgreSQL client.

fn main() -> std::process::ExitCode {
    cronctl::cronctl_main(&cronctl::RealConnector)
}
