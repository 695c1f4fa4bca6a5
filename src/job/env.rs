//! The environment a job runs with (DESIGN §3): Debian's defaults, the user's passwd entry, then
//! the crontab's variables above the entry. Pure: it reads neither the process's environment nor
//! passwd (the job child passes the user it looked up and, with `-P`, the daemon's PATH), and it
//! sets nothing.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::crontab::Env;
use crate::types::User;

/// Debian's default PATH for jobs (DESIGN §3).
pub const DEFAULT_PATH: &[u8] = b"/usr/bin:/bin";

/// The job's environment (DESIGN §3): the PAM environment `pam` (pam_env's /etc/environment
/// and /etc/default/locale; empty without PAM) at the bottom, as Debian puts it; over it
/// SHELL=/bin/sh, PATH=/usr/bin:/bin (or the daemon's with `-P`), HOME, LOGNAME and USER from
/// passwd; then the crontab's variables, which may replace SHELL, PATH and HOME but never
/// LOGNAME or USER.
pub fn environment(
    user: &User,
    crontab: &Env,
    inherited_path: Option<&OsStr>,
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
    for (name, value) in crontab.iter() {
        if name == b"LOGNAME" || name == b"USER" {
            continue;
        }
        set(&mut env, name, value);
    }
    env
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
        let env = environment(&alice(), &env_of("FOO=bar\n"), None, pam);
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
}
