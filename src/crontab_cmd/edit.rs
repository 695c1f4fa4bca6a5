//! `crontab -e` (Debian's steps): copy the crontab, without its header, or the template for a
//! new user, to a private file; run the editor on it with the group privilege dropped; read it
//! back only if it is still a regular file owned by the caller; install it if it changed and is
//! valid, else offer the editor again on the same text.
//!
//! Must not: read the edited file through a symlink or as the group; run the editor with the
//! group; install anything the parser refuses; die of the terminal's signals (SIGINT, SIGQUIT,
//! SIGHUP are ignored while the edit lasts, and the editor gets them at their defaults), so
//! nothing is left behind but what the user is told about.

use std::os::unix::process::ExitStatusExt;

use super::{Context, Exit, Io, MAX_CRONTAB_BYTES, Step, describe, fail, lossy, say, text};
use crate::sys::signal;
use crate::sys::spawn::Program;
use crate::sys::spool_dir::{PrivateCopy, ReadError};
use crate::sys::user::User;

pub(super) fn edit(ctx: &Context, io: &mut Io<'_>, me: &User, target: &User) -> Step<()> {
    let original = match super::installed::read_installed(ctx, io, target)? {
        Some(file) => text::strip_header(&file).to_vec(),
        None => {
            say(
                io,
                format_args!(
                    "no crontab for {} - using an empty one",
                    lossy(&target.name)
                ),
            );
            text::TEMPLATE.as_bytes().to_vec()
        }
    };
    // From here to the end, ^C, ^\ and a hang-up reach the editor, not crontab: it stays to
    // remove its copy and never stops between the spool's temporary file and the rename.
    let _interrupts = signal::ignore_interrupts();
    // Created with the caller's own ids (the group privilege is lowered): the editor may write it.
    let copy = match PrivateCopy::create(&ctx.tmpdir, &original) {
        Ok(c) => c,
        Err(e) => {
            return fail(
                io,
                format_args!(
                    "crontab: {}: Creation of temporary crontab file failed - aborting ({})",
                    ctx.tmpdir.display(),
                    describe(&e)
                ),
            );
        }
    };
    (io.log)(&me.name, "BEGIN EDIT", &target.name);
    let outcome = edit_loop(ctx, io, me, target, &copy, &original);
    match outcome {
        Ok(Kept::No) => copy.remove(),
        Ok(Kept::Yes) => {}
        Err(Exit(_)) => copy.remove(),
    }
    (io.log)(&me.name, "END EDIT", &target.name);
    outcome.map(|_| ())
}

/// Whether the edited text stays on disk for the user.
enum Kept {
    Yes,
    No,
}

fn edit_loop(
    ctx: &Context,
    io: &mut Io<'_>,
    me: &User,
    target: &User,
    copy: &PrivateCopy,
    original: &[u8],
) -> Step<Kept> {
    let shown = copy.path().display().to_string();
    loop {
        run_editor(ctx, io, copy)?;
        let edited = match copy.read_back(ctx.privilege.real_uid, MAX_CRONTAB_BYTES) {
            Ok(t) => Some(t),
            Err(ReadError::NotRegular) => {
                return fail(io, "The temporary crontab must remain a regular file");
            }
            Err(ReadError::WrongOwner(_)) => {
                return fail(io, "Temporary crontab no longer owned by you.");
            }
            Err(ReadError::TooLarge(max)) => {
                say(
                    io,
                    format_args!("crontab: {shown}: larger than {max} bytes, can't install."),
                );
                None
            }
            Err(ReadError::Missing | ReadError::Io(_)) => {
                return fail(io, "Can't open tempfile after edit");
            }
        };
        if let Some(edited) = edited {
            if edited == original {
                say(io, "No modification made");
                return Ok(Kept::No);
            }
            say(io, "crontab: installing new crontab");
            if super::validate(&edited, &shown, target, &ctx.paths.spool_dir, io).is_ok() {
                super::installed::install(ctx, io, me, target, &edited, shown.as_bytes())?;
                return Ok(Kept::No);
            }
        }
        match super::installed::ask(
            io,
            "Do you want to retry the same edit? (y/n) ",
            "Enter Y or N\n",
        ) {
            Some(true) => continue,
            // The end of stdin is a "no": the text stays where the user can find it.
            Some(false) | None => {
                say(io, format_args!("crontab: edits left in {shown}"));
                return Ok(Kept::Yes);
            }
        }
    }
}

/// Runs `sh -c 'EDITOR "$1"' sh FILE` as the caller: the child's gid is set to the real gid
/// before exec, and exec copies it into the saved set-gid, so the editor can't regain the group.
fn run_editor(ctx: &Context, io: &mut Io<'_>, copy: &PrivateCopy) -> Step<()> {
    let editor = ctx.editor.to_string_lossy().into_owned();
    let _ = io.stdout.flush();
    let mut program = Program::new("/bin/sh");
    program
        .default_interrupts()
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(copy.path())
        .gid(ctx.privilege.child_gid());
    let status = program.status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => fail(
                io,
                format_args!("crontab: \"{editor}\" exited with status {code}"),
            ),
            (None, Some(sig)) => fail(
                io,
                format_args!(
                    "crontab: \"{editor}\" killed; signal {sig}{}",
                    if s.core_dumped() {
                        " (core dumped)"
                    } else {
                        ""
                    }
                ),
            ),
            (None, None) => fail(io, format_args!("crontab: \"{editor}\" failed")),
        },
        Err(e) => fail(io, format_args!("crontab: /bin/sh: {}", describe(&e))),
    }
}
