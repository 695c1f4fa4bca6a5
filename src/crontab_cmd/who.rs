//! Who the command acts as and for: the invoking user (by real uid), the target of `-u` (only
//! root may name someone else), and the cron.allow / cron.deny check for both.
//!
//! Must not trust a name over a uid: a non-root caller acts only on their own uid.

use std::io;
use std::path::Path;

use super::access::{self, ListFile};
use super::{Context, Io, Options, Step, describe, fail, lossy};
use crate::sys::user::{Uid, User};

/// The invoking user (by real uid) and the user whose crontab is touched.
pub(super) fn resolve_users(
    options: &Options,
    ctx: &Context,
    io: &mut Io<'_>,
) -> Step<(User, User)> {
    let real = ctx.privilege.real_uid;
    let me = match User::resolve_uid(real) {
        Ok(Some(u)) => u,
        _ => {
            return fail(
                io,
                "crontab: your UID isn't in the passwd file.\nbailing out.",
            );
        }
    };
    let Some(name) = &options.user else {
        return Ok((me.clone(), me));
    };
    if real != Uid::ROOT && *name != me.name {
        return fail(io, "must be privileged to use -u");
    }
    let target = match User::resolve_name(name) {
        Ok(Some(u)) => u,
        _ => return fail(io, format_args!("crontab:  user `{}' unknown", lossy(name))),
    };
    // A name may resolve to another uid than the caller's (two passwd lines with one name, an
    // NSS source that disagrees): a non-root caller still gets only their own uid.
    if real != Uid::ROOT && target.uid != real {
        return fail(io, "must be privileged to use -u");
    }
    Ok((me, target))
}

fn read_list_file(path: &Path) -> Result<Vec<u8>, bool> {
    match std::fs::read(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(false),
        Err(_) => Err(true),
    }
}

fn list_file(r: &Result<Vec<u8>, bool>) -> ListFile<'_> {
    match r {
        Ok(t) => ListFile::Contents(t),
        Err(false) => ListFile::Missing,
        Err(true) => ListFile::Unreadable,
    }
}

/// cron.allow / cron.deny for the caller and, when root acts for someone, for that user.
pub(super) fn check_access(ctx: &Context, io: &mut Io<'_>, me: &User, target: &User) -> Step<()> {
    // Debian: the files must be readable by the group crontab.
    let files = ctx.privilege.with_group(|| {
        (
            read_list_file(&ctx.paths.allow_file),
            read_list_file(&ctx.paths.deny_file),
        )
    });
    let (allow, deny) = match files {
        Ok(f) => f,
        Err(e) => return fail(io, format_args!("crontab: {}", describe(&e))),
    };
    let ok = |u: &User| {
        access::allowed(
            &u.name,
            u.uid == Uid::ROOT,
            list_file(&allow),
            list_file(&deny),
        )
    };
    if !ok(me) {
        (io.log)(&me.name, "AUTH", b"crontab command not allowed");
        return fail(
            io,
            format_args!(
                "You ({}) are not allowed to use this program (crontab)\nSee crontab(1) for more information",
                lossy(&me.name)
            ),
        );
    }
    if target.uid != me.uid && !ok(target) {
        return fail(
            io,
            format_args!(
                "The user {} cannot use this program (crontab)",
                lossy(&target.name)
            ),
        );
    }
    Ok(())
}
