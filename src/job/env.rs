//! The environment a job runs with (docs/design.md §3): Debian's defaults, the user's passwd entry,
//! the daemon's variables that `--keep-env` keeps, then the crontab's variables above the entry;
//! and which of the daemon's variables `--keep-env` keeps ([`kept`]), and the user a uid with no
//! passwd entry runs as ([`user_without_passwd`]). Pure: it reads neither the process's
//! environment nor passwd (the daemon passes what it read at start, the job child the user it
//! looked up and, with `-P`, the daemon's PATH), and it sets nothing.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use std::path::PathBuf;

use crate::crontab::Env;
use crate::types::{Gid, Uid, User};

/// Debian's default PATH for jobs (docs/design.md §3).
pub const DEFAULT_PATH: &[u8] = b"/usr/bin:/bin";

/// The job's environment (docs/design.md §3): the PAM environment `pam` (pam_env's /etc/environment
/// and /etc/default/locale; empty without PAM) at the bottom, as Debian puts it; over it
/// SHELL=/bin/sh, PATH=/usr/bin:/bin (or the daemon's with `-P`), HOME, LOGNAME and USER from
/// passwd; over those the daemon's variables that `--keep-env` keeps (`kept`, from [`kept`]:
/// never HOME, LOGNAME or USER); then the crontab's variables, which may replace SHELL, PATH,
/// HOME and any kept one but never LOGNAME or USER.
pub fn environment(
    user: &User,
    crontab: &Env,
    inherited_path: Option<&OsStr>,
    kept: &[(Vec<u8>, Vec<u8>)],
    pam: Vec<(Vec<u8>, Vec<u8>)>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut env = pam;
    let defaults = [
        (b"SHELL".to_vec(), b"/bin/sh".to_vec()),
        (
            b"PATH".to_vec(),
            inherited_path.map_or(DEFAULT_PATH.to_vec(), |p| p.as_bytes().to_vec()),
        ),
        (b"HOME".to_vec(), user.home.as_os_str().as_bytes().to_vec()),
        (b"LOGNAME".to_vec(), user.name.clone()),
        (b"USER".to_vec(), user.name.clone()),
    ];
    for (name, value) in defaults {
        set(&mut env, &name, &value);
    }
    for (name, value) in kept {
        if !names_the_user(name) {
            set(&mut env, name, value);
        }
    }
    for (name, value) in crontab.iter() {
        if name == b"LOGNAME" || name == b"USER" {
            continue;
        }
        set(&mut env, name, value);
    }
    env
}

/// HOME, LOGNAME and USER: they always name the job's user, never the daemon's.
fn names_the_user(name: &[u8]) -> bool {
    matches!(name, b"HOME" | b"LOGNAME" | b"USER")
}

/// Variables as a job's environment holds them: `(name, value)` bytes, in order.
pub type Vars = Vec<(Vec<u8>, Vec<u8>)>;

/// The most variables `--keep-env` keeps, and the most bytes (`NAME=VALUE` each, summed): far
/// above a container's environment (a Kubernetes pod with service links has a few hundred),
/// and under the kernel's limit on what one `execve` may pass (2 MiB with an 8 MiB stack).
pub const MAX_KEPT_VARS: usize = 4096;
pub const MAX_KEPT_BYTES: usize = 1 << 20;

/// Which of the daemon's variables jobs get (`--keep-env NAME,...` or `--keep-env '*'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepEnv {
    /// These names (each at most once, none of HOME, LOGNAME, USER).
    Names(Vec<Vec<u8>>),
    /// Every variable but those [`left_out_of_star`] names.
    All,
}

/// What `--keep-env '*'` leaves out: HOME, LOGNAME and USER (the job's user's, always), SHELL
/// and PWD/OLDPWD (the daemon's login and directory, not the container's configuration), and
/// what systemd and the daemon read for themselves (a job must not speak to systemd for the
/// service, nor see the cluster's connection string). A name given explicitly is kept even if
/// it is here, HOME, LOGNAME and USER excepted.
pub fn left_out_of_star(name: &[u8]) -> bool {
    names_the_user(name)
        || matches!(
            name,
            b"SHELL"
                | b"PWD"
                | b"OLDPWD"
                | b"NOTIFY_SOCKET"
                | b"LISTEN_PID"
                | b"LISTEN_FDS"
                | b"LISTEN_FDNAMES"
                | b"WATCHDOG_PID"
                | b"WATCHDOG_USEC"
                | b"INVOCATION_ID"
                | b"JOURNAL_STREAM"
                | b"CRON_CLUSTER_DB"
        )
}

/// Whether `name` may be given to `--keep-env`: a variable name (a letter or `_`, then letters,
/// digits, `_`), not one of HOME, LOGNAME, USER. `Err` says why not.
pub fn check_keep_name(name: &[u8]) -> Result<(), &'static str> {
    let first_ok = name
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
    if !first_ok || !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return Err("not a variable name (letters, digits and '_', not starting with a digit)");
    }
    if names_the_user(name) {
        return Err("HOME, LOGNAME and USER always name the job's user");
    }
    Ok(())
}

/// Why the daemon's environment can't be kept: more than [`MAX_KEPT_VARS`] variables or
/// [`MAX_KEPT_BYTES`] bytes to keep (how many of each there were).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMuch {
    pub vars: usize,
    pub bytes: usize,
}

impl std::fmt::Display for TooMuch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--keep-env: {} variables of {} bytes to keep; at most {MAX_KEPT_VARS} variables \
             and {MAX_KEPT_BYTES} bytes",
            self.vars, self.bytes
        )
    }
}

/// The daemon's variables (`daemon`, in its order) that `keep` keeps, in that order: refused
/// whole past the bounds rather than cut, so a job never runs with part of what was asked.
pub fn kept(
    daemon: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    keep: &KeepEnv,
) -> Result<Vars, TooMuch> {
    let wanted = |name: &[u8]| match keep {
        KeepEnv::All => !left_out_of_star(name),
        KeepEnv::Names(names) => !names_the_user(name) && names.iter().any(|n| n == name),
    };
    let mut out: Vars = Vec::new();
    let mut bytes = 0usize;
    for (name, value) in daemon {
        if !wanted(&name) || out.iter().any(|(n, _)| *n == name) {
            continue;
        }
        bytes += name.len() + 1 + value.len();
        out.push((name, value));
    }
    if out.len() > MAX_KEPT_VARS || bytes > MAX_KEPT_BYTES {
        return Err(TooMuch {
            vars: out.len(),
            bytes,
        });
    }
    Ok(out)
}

/// The user a uid with no passwd entry runs its jobs as (a container started with `-u 23456`):
/// its name is the daemon's LOGNAME (or USER) when set, else the number; its home the
/// daemon's HOME when it is an absolute path, else `/`; its shell /bin/sh.
pub fn user_without_passwd(
    uid: Uid,
    gid: Gid,
    logname: Option<&[u8]>,
    home: Option<&[u8]>,
) -> User {
    User {
        name: logname
            .filter(|n| !n.is_empty() && !n.contains(&0))
            .map_or_else(|| uid.0.to_string().into_bytes(), <[u8]>::to_vec),
        uid,
        gid,
        home: home
            .filter(|h| h.starts_with(b"/") && !h.contains(&0))
            .map_or_else(
                || PathBuf::from("/"),
                |h| PathBuf::from(OsStr::from_bytes(h)),
            ),
        shell: PathBuf::from("/bin/sh"),
    }
}

fn set(env: &mut Vec<(Vec<u8>, Vec<u8>)>, name: &[u8], value: &[u8]) {
    match env.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => *v = value.to_vec(),
        None => env.push((name.to_vec(), value.to_vec())),
    }
}

/// The value of `name` in a job environment.
pub(super) fn lookup(env: &[(Vec<u8>, Vec<u8>)], name: &[u8]) -> Option<Vec<u8>> {
    env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::crontab::{Format, Limits, ParseOptions, parse};
    use crate::types::{Gid, Uid};

    fn alice() -> User {
        User {
            name: b"alice".to_vec(),
            uid: Uid(1000),
            gid: Gid(1000),
            home: "/home/alice".into(),
            shell: "/bin/bash".into(),
        }
    }

    fn env_of(text: &str) -> Arc<Env> {
        let mut zones = |n: &str| crate::schedule::Zone::get(n);
        let tab = parse(
            text.as_bytes(),
            &mut ParseOptions {
                format: Format::User,
                limits: Limits::USER,
                seed: 0,
                file: "crontabs/alice",
                zones: &mut zones,
                privileged: false,
            },
        );
        tab.env
    }

    fn get<'a>(env: &'a [(Vec<u8>, Vec<u8>)], name: &str) -> Option<&'a str> {
        env.iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| std::str::from_utf8(v).expect("utf-8"))
    }

    #[test]
    fn the_clean_environment_has_the_defaults_and_the_crontab_variables() {
        let env = environment(
            &alice(),
            &env_of("FOO=bar\nPATH=/opt/bin\n"),
            None,
            &[],
            Vec::new(),
        );
        assert_eq!(get(&env, "SHELL"), Some("/bin/sh"));
        assert_eq!(get(&env, "PATH"), Some("/opt/bin"));
        assert_eq!(get(&env, "HOME"), Some("/home/alice"));
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "USER"), Some("alice"));
        assert_eq!(get(&env, "FOO"), Some("bar"));
        assert_eq!(env.len(), 6);
    }

    #[test]
    fn logname_and_user_cannot_be_overridden() {
        let env = environment(
            &alice(),
            &env_of("LOGNAME=root\nUSER=root\n"),
            None,
            &[],
            Vec::new(),
        );
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "USER"), Some("alice"));
    }

    #[test]
    fn minus_p_passes_the_daemons_path() {
        let env = environment(
            &alice(),
            &Env::default(),
            Some(OsStr::new("/a:/b")),
            &[],
            Vec::new(),
        );
        assert_eq!(get(&env, "PATH"), Some("/a:/b"));
    }

    #[test]
    fn the_pam_environment_lies_under_the_defaults_and_the_crontab() {
        let pam = vec![
            (b"LANG".to_vec(), b"C.UTF-8".to_vec()),
            (b"PATH".to_vec(), b"/pam/bin".to_vec()),
            (b"FOO".to_vec(), b"from pam".to_vec()),
            (b"LOGNAME".to_vec(), b"mallory".to_vec()),
        ];
        let env = environment(&alice(), &env_of("FOO=bar\n"), None, &[], pam);
        assert_eq!(get(&env, "LANG"), Some("C.UTF-8"));
        assert_eq!(
            get(&env, "PATH"),
            Some("/usr/bin:/bin"),
            "PAM does not set PATH"
        );
        assert_eq!(get(&env, "FOO"), Some("bar"), "the crontab wins");
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(env.len(), 7);
    }

    fn vars(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn kept_variables_lie_over_the_defaults_and_under_the_crontab() {
        let daemon = vars(&[
            ("FOO", "from the container"),
            ("TZ", "Europe/Paris"),
            ("PATH", "/opt/app/bin:/usr/bin:/bin"),
            ("HOME", "/root"),
            ("LOGNAME", "root"),
            ("SHELL", "/bin/zsh"),
            ("NOTIFY_SOCKET", "/run/systemd/notify"),
        ]);
        let kept = kept(daemon, &KeepEnv::All).expect("within the bounds");
        assert_eq!(
            kept,
            vars(&[
                ("FOO", "from the container"),
                ("TZ", "Europe/Paris"),
                ("PATH", "/opt/app/bin:/usr/bin:/bin"),
            ]),
            "'*' leaves out the user's, the login's and systemd's variables"
        );
        let env = environment(
            &alice(),
            &env_of("TZ=UTC\n"),
            None,
            &kept,
            vars(&[("FOO", "from pam")]),
        );
        assert_eq!(get(&env, "FOO"), Some("from the container"), "over PAM");
        assert_eq!(get(&env, "PATH"), Some("/opt/app/bin:/usr/bin:/bin"));
        assert_eq!(get(&env, "TZ"), Some("UTC"), "the crontab wins");
        assert_eq!(get(&env, "HOME"), Some("/home/alice"));
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "SHELL"), Some("/bin/sh"));
        // Even a list that holds them can't replace the user's names.
        let forced = vars(&[("HOME", "/root"), ("USER", "root")]);
        let env = environment(&alice(), &Env::default(), None, &forced, Vec::new());
        assert_eq!(get(&env, "HOME"), Some("/home/alice"));
        assert_eq!(get(&env, "USER"), Some("alice"));
    }

    #[test]
    fn named_variables_are_kept_even_the_ones_star_leaves_out() {
        let daemon = vars(&[
            ("A", "1"),
            ("SHELL", "/bin/bash"),
            ("B", "2"),
            ("A", "again"),
        ]);
        let keep = KeepEnv::Names(vec![b"SHELL".to_vec(), b"A".to_vec(), b"MISSING".to_vec()]);
        assert_eq!(
            kept(daemon, &keep),
            Ok(vars(&[("A", "1"), ("SHELL", "/bin/bash")])),
            "in the daemon's order, the first of a repeated name"
        );
        assert!(check_keep_name(b"TZ").is_ok());
        assert!(check_keep_name(b"_X1").is_ok());
        for bad in [
            &b""[..],
            b"1X",
            b"A=B",
            b"A-B",
            b"HOME",
            b"LOGNAME",
            b"USER",
        ] {
            assert!(check_keep_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_kept_environment_is_refused_whole_past_its_bounds() {
        let many: Vec<(Vec<u8>, Vec<u8>)> = (0..=MAX_KEPT_VARS)
            .map(|i| (format!("V{i}").into_bytes(), b"x".to_vec()))
            .collect();
        let err = kept(many.clone(), &KeepEnv::All).expect_err("one variable too many");
        assert_eq!(err.vars, MAX_KEPT_VARS + 1);
        assert!(
            kept(many[1..].to_vec(), &KeepEnv::All).is_ok(),
            "at the bound"
        );
        let big = vec![(b"BIG".to_vec(), vec![b'x'; MAX_KEPT_BYTES - 4])];
        assert_eq!(kept(big.clone(), &KeepEnv::All).map(|k| k.len()), Ok(1));
        let mut bigger = big;
        bigger[0].1.push(b'x');
        assert_eq!(
            kept(bigger, &KeepEnv::All),
            Err(TooMuch {
                vars: 1,
                bytes: MAX_KEPT_BYTES + 1
            })
        );
    }

    #[test]
    fn a_uid_without_passwd_entry_takes_its_names_from_the_daemon_or_the_number() {
        let bare = user_without_passwd(Uid(23456), Gid(0), None, None);
        assert_eq!(
            (bare.name.as_slice(), bare.home.as_path()),
            (&b"23456"[..], std::path::Path::new("/"))
        );
        let named = user_without_passwd(Uid(23456), Gid(0), Some(b"app"), Some(b"/srv/app"));
        assert_eq!(named.name, b"app");
        assert_eq!(named.home, std::path::Path::new("/srv/app"));
        let relative = user_without_passwd(Uid(1), Gid(1), Some(b""), Some(b"srv"));
        assert_eq!((relative.name, relative.home), (b"1".to_vec(), "/".into()));
        let env = environment(&named, &Env::default(), None, &[], Vec::new());
        assert_eq!(get(&env, "LOGNAME"), Some("app"));
        assert_eq!(get(&env, "HOME"), Some("/srv/app"));
    }
}
