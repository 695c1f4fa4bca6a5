//! `crontab`: argument parsing only; the work is in `crond::crontab_cmd`. Installed setgid `crontab`
//! (see docs/crontab-security.md): nothing may happen here before the library lowers the group.

use std::io::Write;
use std::process::ExitCode;

use crond::crontab_cmd::{self, Options, USAGE};

fn main() -> ExitCode {
    let options = match Options::try_parse_from(std::env::args_os().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            let mut err = std::io::stderr().lock();
            if let Some(getopt) = &e.1 {
                let _ = writeln!(err, "crontab: {getopt}");
            }
            let _ = writeln!(err, "crontab: usage error: {e}");
            let _ = err.write_all(USAGE.as_bytes());
            return ExitCode::from(1);
        }
    };
    ExitCode::from(crontab_cmd::main(&options))
}
