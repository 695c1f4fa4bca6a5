//! What the daemon needs for `--crontab` mode and `--keep-env` (cron in a container, or any user
//! running its own crontab): the user the jobs run as (the daemon's own, from passwd or made up
//! for a uid passwd doesn't know), the state directory and the pid file without a path flag
//! (`$XDG_RUNTIME_DIR/crond`, /run/crond for root, else /tmp/crond-UID; made, and trusted only
//! when no one else can change it), and the daemon's variables that jobs get. The choice of
//! places is pure ([`state_base`]); this file reads the environment and passwd for it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::Error;
use super::cli::Options;
use crate::database::SourceKey;
use crate::job::env::{self, TooMuch, Vars};
use crate::sys::fs::{self, LastDir};
use crate::sys::user::{self, Uid, User};
use crate::trust;

pub use crate::paths::state_base;

impl Options {
    /// Whether the daemon runs only the `--crontab` files.
    pub fn crontab_mode(&self) -> bool {
        !self.crontabs.is_empty()
    }

    /// `--crontab` mode's defaults, filled in: the state directory ([`state_base`] unless
    /// `--state-dir`), and in it the pid file (`crond.pid`) and the @reboot marker (`reboot`)
    /// unless given. Nothing changes in the other modes.
    pub fn fill_crontab_mode_defaults(&mut self, xdg_runtime_dir: Option<&OsStr>, euid: Uid) {
        if !self.crontab_mode() {
            return;
        }
        let base = self
            .state_dir
            .get_or_insert_with(|| state_base(xdg_runtime_dir, euid))
            .clone();
        self.pid_file.get_or_insert_with(|| base.join("crond.pid"));
        self.reboot_marker
            .get_or_insert_with(|| base.join("reboot"));
    }

    /// Before the pid file is locked, in `--crontab` mode: the defaults filled in from the
    /// environment, and the state directory made (mode 0700), or refused when someone else
    /// could change it, as `daemon::missed` refuses it. The default one is also kept private:
    /// the control socket is in it, and in /tmp/crond-UID on a shared host any user could
    /// otherwise reach it; one of the daemon's own with group or other bits (made by an
    /// earlier version) loses them. Returns the mode it had then, for the log.
    pub(super) fn prepare_crontab_mode(&mut self) -> Result<Option<u32>, Error> {
        if !self.crontab_mode() {
            return Ok(None);
        }
        let euid = user::effective_uid();
        let default = self.state_dir.is_none();
        self.fill_crontab_mode_defaults(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), euid);
        let dir = self.state_dir();
        let refused =
            |e: std::io::Error| Error::Config(format!("state directory {}: {e}", dir.display()));
        let fd = fs::open_checked_dir(&dir, euid, LastDir::Own { make: true }).map_err(refused)?;
        if !default {
            return Ok(None);
        }
        let facts = fs::facts_of(&fd).map_err(refused)?;
        let Some(mode) = trust::private_dir_mode(&facts) else {
            return Ok(None);
        };
        fs::set_mode(&fd, mode).map_err(refused)?;
        Ok(Some(facts.mode))
    }

    /// In `--crontab` mode, the user every job runs as: the daemon's own, as passwd says, or
    /// (`false`: passwd doesn't know the uid) made up from the daemon's LOGNAME or USER and HOME.
    pub(super) fn own_user(&self) -> Option<(User, bool)> {
        if !self.crontab_mode() {
            return None;
        }
        let euid = user::effective_uid();
        if let Ok(Some(found)) = User::resolve_uid(euid) {
            return Some((found, true));
        }
        let var = |name: &str| std::env::var_os(name).map(OsString::into_vec);
        let logname = var("LOGNAME").or_else(|| var("USER"));
        let made = env::user_without_passwd(
            euid,
            user::effective_gid(),
            logname.as_deref(),
            var("HOME").as_deref(),
        );
        Some((made, false))
    }

    /// The sources of `--crontab` mode, run as `user`.
    pub(super) fn given_sources(&self, user: &User) -> Vec<SourceKey> {
        (self.crontabs.iter())
            .map(|path| SourceKey::Given {
                path: path.clone(),
                user: OsStr::from_bytes(&user.name).to_os_string(),
                uid: user.uid,
            })
            .collect()
    }

    /// The daemon's variables that `--keep-env` keeps (none without it), read now.
    pub fn kept_env(&self) -> Result<Vars, TooMuch> {
        let Some(keep) = &self.keep_env else {
            return Ok(Vec::new());
        };
        env::kept(
            std::env::vars_os().map(|(n, v)| (n.into_vec(), v.into_vec())),
            keep,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn crontab_mode_keeps_its_files_under_one_directory_without_a_path_flag() {
        let runtime = Some(OsStr::new("/run/user/1000"));
        assert_eq!(
            state_base(runtime, Uid(1000)),
            Path::new("/run/user/1000/crond")
        );
        assert_eq!(
            state_base(Some(OsStr::new("relative")), Uid(1000)),
            Path::new("/tmp/crond-1000")
        );
        assert_eq!(state_base(None, Uid::ROOT), Path::new("/run/crond"));
        let mut o = Options {
            crontabs: vec!["/app/crontab".into()],
            ..Options::default()
        };
        o.fill_crontab_mode_defaults(runtime, Uid(1000));
        assert_eq!(o.state_dir(), Path::new("/run/user/1000/crond"));
        assert_eq!(o.pid_file(), Path::new("/run/user/1000/crond/crond.pid"));
        assert_eq!(o.reboot_marker(), Path::new("/run/user/1000/crond/reboot"));
        let mut o = Options {
            crontabs: vec!["/app/crontab".into()],
            state_dir: Some("/srv/state".into()),
            pid_file: Some("/srv/pid".into()),
            ..Options::default()
        };
        o.fill_crontab_mode_defaults(runtime, Uid(1000));
        assert_eq!(o.pid_file(), Path::new("/srv/pid"), "given, kept");
        assert_eq!(o.reboot_marker(), Path::new("/srv/state/reboot"));
        let mut host = Options::default();
        host.fill_crontab_mode_defaults(runtime, Uid::ROOT);
        assert_eq!(host, Options::default(), "only --crontab mode changes");
    }
}
