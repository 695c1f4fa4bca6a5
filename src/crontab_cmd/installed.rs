//! The user's installed crontab, in the spool directory: install it (header + text, through a
//! temporary file and one rename), read it back, list it, remove it (after a y/n question with
//! `-i`), each with the group privilege held only around the spool calls.
//!
//! Must not install text that was not validated first: callers validate, then call [`install`].

use std::ffi::OsString;
use std::io;

use super::{Context, Io, MAX_INSTALLED_BYTES, Step, describe, fail, lossy, text};
use crate::sys::spool_dir::{self, ReadError, SpoolDir};
use crate::sys::user::{Uid, User};

/// The spool file name of `user`; refuses names that are not one plain path component.
fn spool_name(io: &mut Io<'_>, user: &User) -> Step<OsString> {
    let n = &user.name;
    if n.is_empty() || n.contains(&b'/') || n.contains(&0) || n[0] == b'.' {
        return fail(
            io,
            format_args!("crontab: the user name `{}' can't name a crontab", lossy(n)),
        );
    }
    Ok(spool_dir::os_name(n))
}

fn now_for_header() -> String {
    jiff::Zoned::now()
        .strftime("%a %b %e %H:%M:%S %Y")
        .to_string()
}

/// Writes header + `text` to a temporary file in the spool directory, gives it to the user,
/// renames it over the old crontab and touches the directory. `text` is already validated.
pub(super) fn install(
    ctx: &Context,
    io: &mut Io<'_>,
    me: &User,
    target: &User,
    text: &[u8],
    source: &[u8],
) -> Step<()> {
    let name = spool_name(io, target)?;
    let mut data = text::header(source, &now_for_header());
    data.extend_from_slice(text);
    let root = ctx.privilege.effective_uid == Uid::ROOT;
    let spool = &ctx.paths.spool_dir;
    let done = ctx.privilege.with_group(|| -> io::Result<()> {
        let dir = SpoolDir::open(spool)?;
        let (temp, mut file) = dir.create_temp()?;
        // Root writes files that must belong to the user; the group is the spool directory's
        // (`crontab`). A user's own file already has both (uid, and the setgid effective gid).
        let owner = root.then(|| (target.uid, dir.facts().group));
        let written = spool_dir::write_durably(&mut file, &data, owner);
        // Closed before the rename: closed after it, the close is one more event on the
        // installed name (IN_CLOSE_WRITE) for a daemon watching the directory, which read it as
        // a second change and logged RELOAD twice.
        drop(file);
        let result = written.and_then(|()| dir.rename(&temp, &name));
        if result.is_err() {
            let _ = dir.remove(&temp);
        }
        result?;
        dir.touch()
    });
    match done {
        Ok(Ok(())) => {
            (io.log)(&me.name, "REPLACE", &target.name);
            Ok(())
        }
        Ok(Err(e)) | Err(e) => fail(
            io,
            format_args!("crontab: {}: {}", spool.display(), describe(&e)),
        ),
    }
}

/// Reads the installed crontab of `target` (header included); `None` if there is none.
pub(super) fn read_installed(
    ctx: &Context,
    io: &mut Io<'_>,
    target: &User,
) -> Step<Option<Vec<u8>>> {
    let name = spool_name(io, target)?;
    let spool = &ctx.paths.spool_dir;
    let read = ctx.privilege.with_group(|| {
        SpoolDir::open(spool)
            .map_err(ReadError::Io)
            .and_then(|dir| dir.read(&name, &[target.uid, Uid::ROOT], MAX_INSTALLED_BYTES))
    });
    match read {
        Ok(Ok(text)) => Ok(Some(text)),
        Ok(Err(ReadError::Missing)) => Ok(None),
        Ok(Err(e)) => fail(
            io,
            format_args!(
                "crontab: {}/{}: {e}",
                spool.display(),
                name.to_string_lossy()
            ),
        ),
        Err(e) => fail(io, format_args!("crontab: {}", describe(&e))),
    }
}

pub(super) fn list(ctx: &Context, io: &mut Io<'_>, me: &User, target: &User) -> Step<()> {
    let Some(text) = read_installed(ctx, io, target)? else {
        return fail(io, format_args!("no crontab for {}", lossy(&target.name)));
    };
    (io.log)(&me.name, "LIST", &target.name);
    let shown = if ctx.list_header {
        &text[..]
    } else {
        text::strip_header(&text)
    };
    if let Err(e) = io
        .stdout
        .write_all(&text::protect_list(shown))
        .and_then(|()| io.stdout.flush())
    {
        return fail(io, format_args!("crontab: {}", describe(&e)));
    }
    Ok(())
}

/// Asks a y/n question on stdout; `None` at the end of stdin.
pub(super) fn ask(io: &mut Io<'_>, question: &str, again: &str) -> Option<bool> {
    let _ = write!(io.stdout, "{question}");
    let _ = io.stdout.flush();
    loop {
        let mut line = String::new();
        match io.stdin.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        match line.trim().chars().next() {
            Some('y' | 'Y') => return Some(true),
            Some('n' | 'N') => return Some(false),
            _ => {
                let _ = write!(io.stdout, "{again}");
                let _ = io.stdout.flush();
            }
        }
    }
}

pub(super) fn remove(
    ctx: &Context,
    io: &mut Io<'_>,
    me: &User,
    target: &User,
    confirm: bool,
) -> Step<()> {
    let name = spool_name(io, target)?;
    if confirm {
        let q = format!(
            "crontab: really delete {}'s crontab? (y/n) ",
            lossy(&target.name)
        );
        // The end of stdin is a "no": Debian asks forever.
        if ask(io, &q, "Please enter Y or N: ") != Some(true) {
            return Ok(());
        }
    }
    let spool = &ctx.paths.spool_dir;
    let removed = ctx.privilege.with_group(|| -> io::Result<bool> {
        let dir = SpoolDir::open(spool)?;
        let removed = dir.remove(&name)?;
        if removed {
            dir.touch()?;
        }
        Ok(removed)
    });
    match removed {
        Ok(Ok(true)) => {
            (io.log)(&me.name, "DELETE", &target.name);
            Ok(())
        }
        Ok(Ok(false)) => fail(io, format_args!("no crontab for {}", lossy(&target.name))),
        Ok(Err(e)) | Err(e) => fail(
            io,
            format_args!(
                "crontab: {}/{}: unlink: {}",
                spool.display(),
                name.to_string_lossy(),
                describe(&e)
            ),
        ),
    }
}
