//! `crontab`, installed setgid `crontab` (docs/crontab-security.md): everything, argument parsing
//! included, is in the library, which lowers the group before anything else happens.

fn main() -> std::process::ExitCode {
    crond::crontab_main()
}
