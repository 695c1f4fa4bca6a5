//! End to end, as an admin would: `make install DESTDIR=root`, the installed `crond -f` run
//! with every path inside that root, a crontab installed with the installed (setgid) `crontab`
//! by a real user, and the job's output arriving as mail in the real MTA's mailbox
//! (exim4-daemon-light delivers to /var/mail/USER without a running daemon).
//!
//! The host is left as it was: the user is created and removed; the `crontab` group exists only
//! in a private mount namespace (a copy of /etc/group bind-mounted over it), and so does the
//! spool dir, because the setgid crontab ignores --spool-dir and writes /var/spool/cron. The
//! daemon starts five seconds before a minute boundary under libfaketime: no real minute is waited
//! for.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::support::install::*;
use crate::support::user::TestUser;

/// Removes /var/spool/cron at the end if this test had to create it as a mount point.
struct MountPoint(Option<&'static Path>);

impl Drop for MountPoint {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = std::fs::remove_dir(p);
        }
    }
}

const SCRIPT: &str = r#"
set -eu
mount --bind "$E2E_GROUP" /etc/group
make --no-print-directory -C "$E2E_REPO" install DESTDIR="$E2E_ROOT" bins="$E2E_BINS"
mount --bind "$E2E_ROOT/var/spool/cron" /var/spool/cron
# The shipped /etc/crontab would run this host's /etc/cron.hourly: the test uses its own.
printf '# system crontab of the end-to-end test: nothing\n' > "$E2E_ROOT/etc/crontab"
mkdir -p "$E2E_ROOT/run"

printf 'MAILTO=%s\n* * * * * echo hello-from-crond-e2e\n' "$E2E_USER" |
    su -s /bin/sh "$E2E_USER" -c "$E2E_ROOT/usr/bin/crontab -"
su -s /bin/sh "$E2E_USER" -c "$E2E_ROOT/usr/bin/crontab -l" > "$E2E_OUT/listed"

now=$(date -u +%s)
start=$(date -u -d "@$(( (now / 60 + 1) * 60 - 5 ))" '+%Y-%m-%d %H:%M:%S')
# libfaketime preloaded, not the `faketime` wrapper: the wrapper makes a named semaphore from
# its pid, and one left behind by a killed wrapper with the same pid made it refuse to start.
TZ=UTC FAKETIME="@$start" FAKETIME_DONT_RESET=1 LD_PRELOAD="$E2E_FAKETIME_LIB" \
    "$E2E_ROOT/usr/sbin/crond" -f --log stderr \
    --spool-dir /var/spool/cron/crontabs \
    --system-crontab "$E2E_ROOT/etc/crontab" --cron-d "$E2E_ROOT/etc/cron.d" \
    --pid-file "$E2E_ROOT/run/crond.pid" --reboot-marker "$E2E_ROOT/run/crond.reboot" \
    --sendmail /usr/sbin/sendmail 2> "$E2E_OUT/crond.log" &
pid=$!
i=0
while [ $i -lt 300 ] && ! grep -q hello-from-crond-e2e "/var/mail/$E2E_USER" 2>/dev/null; do
    sleep 0.1; i=$((i + 1))
done
kill "$pid"
wait "$pid" || true
"#;

#[test]
fn root_an_admin_installs_with_make_and_a_users_job_mails_its_output() {
    require_root();
    for cmd in ["unshare", "su", "useradd", "make"] {
        require_command(cmd);
    }
    assert!(
        Path::new(FAKETIME_LIB).exists(),
        "libfaketime is missing: run make deps (Debian package faketime)"
    );
    assert!(
        Path::new("/usr/sbin/sendmail").exists(),
        "no MTA: run make deps"
    );
    let root = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    // Home made and removed with the user: the installed crontab runs the job from there.
    let user = TestUser::create("e", &["-m", "-s", "/bin/sh"]);

    let spool_parent = Path::new("/var/spool/cron");
    let _mount_point = if spool_parent.exists() {
        MountPoint(None)
    } else {
        std::fs::create_dir(spool_parent).expect("mount point");
        MountPoint(Some(spool_parent))
    };

    let group = out.path().join("group");
    let mut text = std::fs::read_to_string("/etc/group").expect("/etc/group");
    if gid_in(Path::new("/etc/group"), "crontab").is_none() {
        text.push_str("crontab:x:60999:\n");
    }
    std::fs::write(&group, text).expect("group copy");

    let result = run(Command::new("unshare")
        .args(["-m", "sh", "-c", SCRIPT])
        .env("E2E_GROUP", &group)
        .env("E2E_REPO", repo())
        .env("E2E_BINS", bins())
        .env("E2E_ROOT", root.path())
        .env("E2E_OUT", out.path())
        .env("E2E_USER", &user.name)
        .env("E2E_FAKETIME_LIB", FAKETIME_LIB));
    let log = std::fs::read_to_string(out.path().join("crond.log")).unwrap_or_default();
    assert!(result.status.success(), "{result:?}\ncrond log:\n{log}");

    let listed = std::fs::read_to_string(out.path().join("listed")).expect("crontab -l output");
    assert!(
        listed.contains("* * * * * echo hello-from-crond-e2e"),
        "{listed}"
    );
    let installed = root.path().join("var/spool/cron/crontabs").join(&user.name);
    let meta = std::fs::symlink_metadata(&installed).expect("the crontab is in the spool dir");
    let uid = crond::sys::user::User::resolve_name(user.name.as_bytes())
        .expect("passwd")
        .expect("the user exists")
        .uid;
    assert_eq!((meta.mode() & 0o7777, meta.uid()), (0o600, uid.0));

    let mail = std::fs::read_to_string(Path::new("/var/mail").join(&user.name))
        .unwrap_or_else(|e| panic!("no mail for {}: {e}\ncrond log:\n{log}", user.name));
    assert!(mail.contains("hello-from-crond-e2e"), "{mail}");
    assert!(
        mail.contains(&format!("Subject: Cron <{}@", user.name)),
        "{mail}"
    );
    assert!(
        log.contains(&format!("({}) CMD (echo hello-from-crond-e2e)", user.name)),
        "{log}"
    );
}
