//! The `crontab` command (crontab(1), Debian's behaviour): install, list, edit and remove a
//! user's crontab in the spool directory, from a setgid binary.
//!
//! The binary is one call to [`crontab_main`]: argv is parsed into [`Options`] ([`cli`]), and
//! everything else is here too, so tests reach every behaviour. The privilege rules (docs/design.md
//! §1, §2, docs/crontab-security.md): the group privilege is lowered before anything but parsing
//! argv, and held only around spool operations ([`Privilege::with_group`]); a privileged process
//! ignores every path override; only VISUAL, EDITOR, TMPDIR and CRONTAB_NOHEADER are read from
//! the environment; a
//! non-root user acts only on their own crontab.
//!
//! This module must not print with `print!` (the library never does): all output goes through
//! the writers in [`Io`], and syslog lines through its `log` callback.

pub mod access;
pub mod cli;
mod edit;
mod installed;
pub mod text;
mod who;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use cli::{Action, Input, Options, Overrides, USAGE};

use crate::crontab::{self, Crontab, Format, Limits, ParseOptions};
use crate::log::printable;
use crate::paths;
use crate::schedule::{self, Zone};
use crate::sys;
use crate::sys::setgid::Privilege;
use crate::sys::user::{Uid, User};
use crate::words;

/// Largest crontab `crontab` installs (1 MiB: ten thousand lines of a hundred bytes). Input is
/// read up to this bound and no further, so a huge stdin costs nothing and writes nothing.
pub const MAX_CRONTAB_BYTES: u64 = Limits::USER.max_file;

/// Largest installed file `-l` and `-e` read back (root may have put a bigger one by hand).
const MAX_INSTALLED_BYTES: u64 = 16 << 20;

/// The files the command works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub spool_dir: PathBuf,
    pub allow_file: PathBuf,
    pub deny_file: PathBuf,
}

impl Paths {
    /// The paths to use: the overrides only when the process holds no privilege, otherwise any
    /// user could make the setgid binary write wherever the group can; a setgid process uses
    /// nothing but Debian's paths, compiled in ([`crate::paths`]).
    pub fn choose(overrides: &Overrides, privileged: bool) -> Paths {
        let pick = |o: &Option<PathBuf>, default: &str| match o {
            Some(p) if !privileged => p.clone(),
            _ => PathBuf::from(default),
        };
        Paths {
            spool_dir: pick(&overrides.spool_dir, paths::SPOOL_DIR),
            allow_file: pick(&overrides.allow_file, paths::ALLOW_FILE),
            deny_file: pick(&overrides.deny_file, paths::DENY_FILE),
        }
    }
}

/// The editors tried when neither `VISUAL` nor `EDITOR` names one, in order: Debian's default
/// (which honours `~/.selected_editor` and `select-editor`), Debian's alternative, then `vi` as
/// cronie and hosts without either.
pub const DEFAULT_EDITORS: [&str; 2] = ["/usr/bin/sensible-editor", "/usr/bin/editor"];

/// The editor to run: `$VISUAL`, else `$EDITOR` (empty values don't count, as Debian), else the
/// first of [`DEFAULT_EDITORS`] that `exists`, else `vi`.
pub fn choose_editor(
    visual: Option<OsString>,
    editor: Option<OsString>,
    exists: impl Fn(&str) -> bool,
) -> OsString {
    visual
        .filter(|v| !v.is_empty())
        .or(editor.filter(|v| !v.is_empty()))
        .unwrap_or_else(|| {
            DEFAULT_EDITORS
                .into_iter()
                .find(|path| exists(path))
                .unwrap_or("vi")
                .into()
        })
}

/// Writes one syslog line: (invoking user, event, detail), e.g. `(alice) REPLACE (alice)`.
pub type LogFn<'a> = &'a mut dyn FnMut(&[u8], &str, &[u8]);

/// Where output and log lines go.
pub struct Io<'a> {
    pub stdin: &'a mut dyn BufRead,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    pub log: LogFn<'a>,
}

impl std::fmt::Debug for Io<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io").finish_non_exhaustive()
    }
}

/// Facts the command runs with, gathered once.
#[derive(Debug, Clone)]
pub struct Context {
    pub privilege: Privilege,
    pub paths: Paths,
    pub editor: OsString,
    /// `CRONTAB_NOHEADER=N`: `-l` prints the file's header too.
    pub list_header: bool,
    pub tmpdir: PathBuf,
}

impl Context {
    /// The facts of this process: `privilege` (already lowered), the paths it may use and the
    /// editor and TMPDIR from the environment.
    pub fn resolve(privilege: Privilege, overrides: &Overrides) -> Context {
        let env = |name: &str| std::env::var_os(name);
        Context {
            privilege,
            paths: Paths::choose(overrides, privilege.is_privileged()),
            editor: choose_editor(env("VISUAL"), env("EDITOR"), |path| {
                Path::new(path).exists()
            }),
            // Debian's: `-l` shows the three header lines only when this is `N`.
            list_header: env("CRONTAB_NOHEADER").is_some_and(|v| v == "N"),
            tmpdir: sys::tmpfile::default_dir(),
        }
    }
}

/// `crontab`'s `main`: parses argv, lowers the group privilege, gathers the facts and runs the
/// action with the process's stdio and syslog. Exit status 0 done, 1 anything else (a usage
/// error included), as Debian.
pub fn crontab_main() -> ExitCode {
    let options = match Options::try_parse_from(std::env::args_os().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            let mut err = io::stderr().lock();
            if let Some(getopt) = &e.getopt {
                let _ = writeln!(err, "crontab: {getopt}");
            }
            let _ = writeln!(err, "crontab: usage error: {e}");
            let _ = err.write_all(USAGE.as_bytes());
            return ExitCode::from(1);
        }
    };
    let privilege = Privilege::resolve();
    let stderr = &mut io::stderr().lock();
    if let Err(e) = privilege.lower() {
        let _ = writeln!(stderr, "crontab: can't lower the group privilege: {e}");
        return ExitCode::from(1);
    }
    let ctx = Context::resolve(privilege, &options.overrides);
    let mut io = Io {
        stdin: &mut io::stdin().lock(),
        stdout: &mut io::stdout().lock(),
        stderr,
        log: &mut log_event,
    };
    ExitCode::from(run(&options, &ctx, &mut io))
}

/// Logs `(user) EVENT (detail)` to syslog as `crontab[pid]`, facility cron (Debian's lines:
/// REPLACE, BEGIN EDIT, END EDIT, DELETE, LIST).
fn log_event(user: &[u8], event: &str, detail: &[u8]) {
    // The detail is a user name or a fixed text: shown through mkprint like the daemon's names.
    let line = crate::log::LogLine::new(user, event.to_owned(), crate::log::printable(detail));
    sys::syslog::open_as(c"crontab");
    sys::syslog::log_bytes(sys::syslog::Level::Info, &line.to_bytes());
}

/// A failure already explained to the user; the exit status.
struct Exit(u8);

type Step<T> = Result<T, Exit>;

/// Runs `options.action`; returns the exit status (0 done, 1 anything else, as Debian).
pub fn run(options: &Options, ctx: &Context, io: &mut Io<'_>) -> u8 {
    match run_inner(options, ctx, io) {
        Ok(()) => 0,
        Err(Exit(code)) => code,
    }
}

fn say(io: &mut Io<'_>, text: impl std::fmt::Display) {
    let _ = writeln!(io.stderr, "{text}");
}

fn fail<T>(io: &mut Io<'_>, text: impl std::fmt::Display) -> Step<T> {
    say(io, text);
    Err(Exit(1))
}

/// An `io::Error` as strerror text, without Rust's `(os error N)`.
fn describe(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn run_inner(options: &Options, ctx: &Context, io: &mut Io<'_>) -> Step<()> {
    match &options.action {
        Action::Help => {
            let _ = io.stdout.write_all(USAGE.as_bytes());
            return Ok(());
        }
        Action::Version => {
            let _ = writeln!(io.stdout, "crontab (crond) {}", env!("CARGO_PKG_VERSION"));
            return Ok(());
        }
        _ => {}
    }
    if ctx.privilege.is_privileged() && options.overrides.any() {
        say(
            io,
            "crontab: path options ignored: this program runs with its setgid privilege",
        );
    }
    let (me, target) = who::resolve_users(options, ctx, io)?;
    who::check_access(ctx, io, &me, &target)?;
    match &options.action {
        Action::Install(input) => {
            let text = read_input(input, io)?;
            validate(&text, &input.name(), &target, &ctx.paths.spool_dir, io)?;
            // From the spool's temporary file to the rename, ^C can't leave half a step.
            let _interrupts = sys::signal::ignore_interrupts();
            installed::install(ctx, io, &me, &target, &text, input.name().as_bytes())
        }
        Action::Check(input) => {
            let text = read_input(input, io)?;
            validate(&text, &input.name(), &target, &ctx.paths.spool_dir, io)?;
            say(
                io,
                "The syntax of the crontab file was successfully checked.",
            );
            Ok(())
        }
        Action::List => installed::list(ctx, io, &me, &target),
        Action::Remove { ask } => installed::remove(ctx, io, &me, &target, *ask),
        Action::Edit => edit::edit(ctx, io, &me, &target),
        Action::Help | Action::Version => Ok(()),
    }
}

/// Reads the new crontab (with the caller's own rights: the group privilege is lowered), at most
/// [`MAX_CRONTAB_BYTES`].
fn read_input(input: &Input, io: &mut Io<'_>) -> Step<Vec<u8>> {
    let mut text = Vec::new();
    let read = match input {
        Input::Stdin => io.stdin.take(MAX_CRONTAB_BYTES + 1).read_to_end(&mut text),
        Input::File(path) => {
            File::open(path).and_then(|f| f.take(MAX_CRONTAB_BYTES + 1).read_to_end(&mut text))
        }
    };
    if let Err(e) = read {
        return fail(io, format_args!("{}: {}", input.name(), describe(&e)));
    }
    if text.len() as u64 > MAX_CRONTAB_BYTES {
        return fail(
            io,
            format_args!(
                "crontab: {}: larger than {MAX_CRONTAB_BYTES} bytes, can't install.",
                input.name()
            ),
        );
    }
    Ok(text)
}

/// Parses with the daemon's own parser and options, as the daemon will for `owner`'s crontab
/// in the spool directory `spool`.
pub fn parse_user_crontab(text: &[u8], owner: &User, spool: &Path) -> Crontab {
    // Named as the daemon's logs name it (`crontabs/alice`): `H` values are hashed with it.
    let dir = spool.file_name().unwrap_or_default();
    let file = printable(&[dir.as_encoded_bytes(), b"/", &owner.name].concat());
    crontab::parse(
        text,
        &mut ParseOptions {
            format: Format::User,
            limits: Limits::USER,
            seed: schedule::host_seed(&sys::hostname()),
            file: &file,
            zones: &mut |n| Zone::get(n),
            privileged: owner.uid == Uid::ROOT,
        },
    )
}

/// Prints warnings and errors as `FILE:LINE:COLUMN: message`; any error refuses the file. The
/// lines with `H`, which Debian's cron rejects, are said so in one more warning (a file of a
/// thousand such lines is one line of output).
fn validate(text: &[u8], name: &str, owner: &User, spool: &Path, io: &mut Io<'_>) -> Step<()> {
    let tab = parse_user_crontab(text, owner, spool);
    for d in &tab.warnings {
        say(io, format_args!("{} (warning)", d.in_file(name)));
    }
    let mut hashed = tab.entries.iter().filter(|e| e.hashed).map(|e| e.line);
    if let Some(first) = hashed.next() {
        let more = match hashed.count() {
            0 => String::new(),
            n => format!(
                ", and {}",
                words::count(n as u64, "more line", "more lines")
            ),
        };
        say(
            io,
            format_args!(
                "{name}:{first}:1: 'H' (a hashed time) is a crond extension: Debian's cron \
                 rejects this line{more} (warning)"
            ),
        );
    }
    for d in &tab.errors {
        say(io, d.in_file(name));
    }
    if let Some(more) = tab.not_shown_line(name) {
        say(io, more);
    }
    if !tab.has_errors() {
        Ok(())
    } else {
        fail(io, "errors in crontab file, can't install.")
    }
}

#[cfg(test)]
mod tests;
