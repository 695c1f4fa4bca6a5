//! `crond`, the daemon: everything, argument parsing included, is in the library.

fn main() -> std::process::ExitCode {
    crond::crond_main()
}
