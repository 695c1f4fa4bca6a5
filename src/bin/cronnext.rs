//! `cronnext`: everything, argument parsing included, is in the library.

fn main() -> std::process::ExitCode {
    crond::cronnext_main()
}
