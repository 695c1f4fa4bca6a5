//! `crontab`, setgid `crontab`: everything is in the library, which first lowers the group.

fn main() -> std::process::ExitCode {
    crond::crontab_main()
}
