//! inotify for the daemon: which directories it watches and in which role, and which sources an
//! event concerns. Setting the watches up is the one part that touches the system
//! ([`Watches::set_up`]); sorting events into sources ([`sort`]) is pure, with the one fact it
//! needs about the file system (is a bare create complete?) passed in.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use crate::daemon::effects::Effects;
use crate::database::{self, Paths, Rules, SourceKey};
use crate::log::messages;
use crate::sys::inotify::{Lost, WatchId, Watcher};

/// What a watched directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::daemon) enum Role {
    Spool,
    CronD,
    /// The directory of /etc/crontab; the file's name.
    SystemCrontab(OsString),
    /// The directory of /etc/localtime; its name.
    LocalTime(OsString),
    /// The directory of the file a symlinked system crontab leads to: that file's name, and
    /// the source to reload when it changes.
    Target(OsString, SourceKey),
    /// The directory of a `--crontab` file: its name, and its source.
    Given(OsString, SourceKey),
}

/// One inotify event with the roles of its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::daemon) struct Seen {
    pub(in crate::daemon) roles: Vec<Role>,
    /// The file inside the directory; `None` for the directory itself.
    pub(in crate::daemon) name: Option<OsString>,
    /// Only created: a file still being written, unless it is a link.
    pub(in crate::daemon) created_only: bool,
    /// The watch is gone or the queue overflowed.
    pub(in crate::daemon) lost: Option<Lost>,
}

/// What a batch of events asks the daemon to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::daemon) struct Changed {
    /// Sources to reload.
    pub(in crate::daemon) sources: BTreeSet<SourceKey>,
    /// Events were lost (and why): fall back to checking every minute, and reload everything
    /// now.
    pub(in crate::daemon) rescan: Option<Lost>,
    /// /etc/localtime changed: re-read the local zone.
    pub(in crate::daemon) zone: bool,
}

/// The directories to watch: each with its role and whether the daemon needs it (without the
/// spool, /etc/cron.d or /etc/crontab's directory it checks every minute instead; the zone's
/// directory is a bonus).
pub(in crate::daemon) fn wanted(p: &Paths, localtime: &Path) -> Vec<(PathBuf, Role, bool)> {
    let dir_of = |p: &Path| -> (PathBuf, OsString) {
        (
            p.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
            p.file_name().map(OsString::from).unwrap_or_default(),
        )
    };
    let (crontab_dir, crontab_name) = dir_of(&p.system_crontab);
    let (tz_dir, tz_name) = dir_of(localtime);
    if !p.given.is_empty() {
        // `--crontab` mode: the named files' directories, and nothing of the host's.
        let mut dirs: Vec<(PathBuf, Role, bool)> = (p.given.iter())
            .map(|key| {
                let (dir, name) = dir_of(&key.path(p));
                (dir, Role::Given(name, key.clone()), true)
            })
            .collect();
        dirs.push((tz_dir, Role::LocalTime(tz_name), false));
        return dirs;
    }
    vec![
        (p.spool_dir.clone(), Role::Spool, true),
        (p.cron_d.clone(), Role::CronD, true),
        (crontab_dir, Role::SystemCrontab(crontab_name), true),
        (tz_dir, Role::LocalTime(tz_name), false),
    ]
}

/// Sorts a batch of events into sources to reload, a rescan and a zone change. `complete`
/// says whether the file of a bare create is already whole (a symlink or a hard link: no
/// close-write will follow it).
pub(in crate::daemon) fn sort(
    events: Vec<Seen>,
    rules: &Rules,
    complete: impl Fn(&SourceKey) -> bool,
) -> Changed {
    let mut changed = Changed::default();
    for event in events {
        if let Some(lost) = event.lost {
            changed.rescan = changed.rescan.or(Some(lost));
            continue;
        }
        let Some(name) = event.name else { continue };
        for role in &event.roles {
            let key = match role {
                Role::Spool => database::key_for(name.clone(), true, rules),
                Role::CronD => database::key_for(name.clone(), false, rules),
                Role::SystemCrontab(file) if *file == name => Some(SourceKey::System),
                Role::LocalTime(file) if *file == name => {
                    changed.zone = true;
                    None
                }
                Role::Target(file, key) | Role::Given(file, key) if *file == name => {
                    Some(key.clone())
                }
                _ => None,
            };
            let Some(key) = key else { continue };
            if event.created_only && !complete(&key) {
                continue;
            }
            changed.sources.insert(key);
        }
    }
    changed
}

/// The inotify descriptor and the role of each watch.
#[derive(Debug)]
pub(in crate::daemon) struct Watches {
    watcher: Watcher,
    roles: HashMap<WatchId, Vec<Role>>,
}

impl Watches {
    /// Watches the directories of [`wanted`], or says (in the log) why the daemon falls back
    /// to checking every minute and returns `None`.
    pub(in crate::daemon) fn set_up(
        no_inotify: bool,
        p: &Paths,
        localtime: &Path,
        fx: &mut dyn Effects,
    ) -> Option<Watches> {
        if no_inotify {
            fx.info(messages::inotify_disabled_line());
            return None;
        }
        let watcher = match Watcher::new() {
            Ok(w) => w,
            Err(e) => {
                fx.info(messages::inotify_unavailable_line(&e));
                return None;
            }
        };
        let mut roles: HashMap<WatchId, Vec<Role>> = HashMap::new();
        for (dir, role, needed) in wanted(p, localtime) {
            match watcher.watch_dir(&dir) {
                Ok(id) => roles.entry(id).or_default().push(role),
                Err(e) if needed => {
                    fx.info(messages::unwatched_dir_line(&dir, &e));
                    return None;
                }
                Err(_) => {}
            }
        }
        fx.info(messages::inotify_line());
        Some(Watches { watcher, roles })
    }

    pub(in crate::daemon) fn fd(&self) -> BorrowedFd<'_> {
        self.watcher.fd()
    }

    /// Watches the directory of `target`, the file a symlinked system crontab leads to, so an
    /// edit there reloads `key`; forgets where `key` led before. (The kernel's watch on a
    /// directory no source leads to any more stays: its events concern nothing.)
    pub(in crate::daemon) fn follow(
        &mut self,
        key: &SourceKey,
        target: Option<&Path>,
        fx: &mut dyn Effects,
    ) {
        for roles in self.roles.values_mut() {
            roles.retain(|r| !matches!(r, Role::Target(_, k) if k == key));
        }
        let Some(target) = target else { return };
        let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
            return;
        };
        match self.watcher.watch_dir(dir) {
            Ok(id) => self
                .roles
                .entry(id)
                .or_default()
                .push(Role::Target(name.to_os_string(), key.clone())),
            Err(e) => fx.info(messages::unwatched_target_line(dir, &e, target)),
        }
    }

    /// Every event queued now, with its directory's roles (never blocks).
    pub(in crate::daemon) fn read(&self) -> io::Result<Vec<Seen>> {
        Ok(self
            .watcher
            .read()?
            .into_iter()
            .map(|c| Seen {
                roles: self.roles.get(&c.watch).cloned().unwrap_or_default(),
                name: c.name,
                created_only: c.created_only,
                lost: c.lost,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules {
            permit_any_mode: false,
            lsb_names: false,
            seed: 0,
        }
    }

    fn seen(roles: &[Role], name: &str, created_only: bool) -> Seen {
        Seen {
            roles: roles.to_vec(),
            name: Some(name.into()),
            created_only,
            lost: None,
        }
    }

    fn paths() -> Paths {
        Paths {
            spool_dir: "/var/spool/cron/crontabs".into(),
            system_crontab: "/etc/crontab".into(),
            cron_d: "/etc/cron.d".into(),
            given: Vec::new(),
        }
    }

    #[test]
    fn events_become_the_sources_they_name() {
        let system = Role::SystemCrontab("crontab".into());
        let events = vec![
            seen(&[Role::Spool], "alice", false),
            seen(&[Role::CronD], "php", false),
            seen(&[Role::CronD], "php.dpkg-old", false),
            seen(&[Role::Spool], "tmp.XXXX1234", false),
            seen(std::slice::from_ref(&system), "crontab", false),
            seen(std::slice::from_ref(&system), "passwd", false),
        ];
        let changed = sort(events, &rules(), |_| true);
        assert_eq!(
            changed.sources,
            BTreeSet::from([
                SourceKey::System,
                SourceKey::CronD("php".into()),
                SourceKey::User("alice".into()),
            ])
        );
        assert!(changed.rescan.is_none() && !changed.zone);
    }

    #[test]
    fn an_event_on_the_target_of_a_symlinked_system_file_reloads_that_file() {
        // /srv/pkg holds the file /etc/cron.d/php leads to, and other files.
        let target = Role::Target("php.cron".into(), SourceKey::CronD("php".into()));
        let events = vec![
            seen(std::slice::from_ref(&target), "php.cron", false),
            seen(std::slice::from_ref(&target), "unrelated", false),
        ];
        let changed = sort(events, &rules(), |_| true);
        assert_eq!(
            changed.sources,
            BTreeSet::from([SourceKey::CronD("php".into())])
        );
    }

    #[test]
    fn in_crontab_mode_only_the_named_files_directories_are_watched() {
        let key = |path: &str| SourceKey::Given {
            path: path.into(),
            user: "app".into(),
            uid: crate::types::Uid(1000),
        };
        let p = Paths {
            given: vec![key("/app/crontab"), key("/etc/cron/jobs")],
            ..paths()
        };
        let wanted: Vec<(PathBuf, Role, bool)> = wanted(&p, Path::new("/etc/localtime"));
        assert_eq!(
            wanted,
            [
                (
                    "/app".into(),
                    Role::Given("crontab".into(), key("/app/crontab")),
                    true
                ),
                (
                    "/etc/cron".into(),
                    Role::Given("jobs".into(), key("/etc/cron/jobs")),
                    true
                ),
                ("/etc".into(), Role::LocalTime("localtime".into()), false),
            ]
        );
        let given = Role::Given("crontab".into(), key("/app/crontab"));
        let events = vec![
            seen(std::slice::from_ref(&given), "crontab", false),
            seen(std::slice::from_ref(&given), "other", false),
        ];
        let changed = sort(events, &rules(), |_| true);
        assert_eq!(changed.sources, BTreeSet::from([key("/app/crontab")]));
    }

    #[test]
    fn a_bare_create_waits_for_its_close_unless_the_file_is_complete() {
        let events = vec![
            seen(&[Role::Spool], "writing", true),
            seen(&[Role::Spool], "linked", true),
        ];
        let changed = sort(events, &rules(), |k| *k == SourceKey::User("linked".into()));
        assert_eq!(
            changed.sources,
            BTreeSet::from([SourceKey::User("linked".into())])
        );
    }

    #[test]
    fn the_zone_file_and_a_lost_watch_are_flagged() {
        // /etc holds both the system crontab and localtime: one watch, two roles.
        let etc = [
            Role::SystemCrontab("crontab".into()),
            Role::LocalTime("localtime".into()),
        ];
        let mut lost = seen(&[Role::Spool], "x", false);
        lost.lost = Some(Lost::Overflow);
        let changed = sort(vec![seen(&etc, "localtime", false), lost], &rules(), |_| {
            true
        });
        assert_eq!(
            changed,
            Changed {
                sources: BTreeSet::new(),
                rescan: Some(Lost::Overflow),
                zone: true
            }
        );
    }

    #[test]
    fn the_watched_directories_come_from_the_paths() {
        let dirs: Vec<(PathBuf, bool)> = wanted(&paths(), Path::new(crate::paths::LOCALTIME))
            .into_iter()
            .map(|(d, _, needed)| (d, needed))
            .collect();
        assert_eq!(
            dirs,
            [
                ("/var/spool/cron/crontabs".into(), true),
                ("/etc/cron.d".into(), true),
                ("/etc".into(), true),
                ("/etc".into(), false),
            ]
        );
    }
}
