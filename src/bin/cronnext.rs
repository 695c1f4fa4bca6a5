//! `cronnext`: argument parsing only; the work is in `crond::cronnext`.

use std::io::Write;
use std::process::ExitCode;

use crond::cronnext::{self, Context, Options, USAGE};

fn main() -> ExitCode {
    let args = match Options::try_parse_from(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "cronnext: {e}");
            let _ = err.write_all(USAGE.as_bytes());
            return ExitCode::from(1);
        }
    };
    let ctx = Context::resolve();
    let code = cronnext::run(
        &args,
        &ctx,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code as u8)
}
