//! `crontab`: not built yet (see the project's issues); exits with status 1 so that nothing mistakes
//! it for a working crontab.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "crontab: not built yet: this release only ships cronnext"
    );
    ExitCode::from(1)
}
