//! Unit tests of the crontab(1) command: path overrides, the editor, messages; and the whole
//! command through `run` (in `run.rs`).

mod run;

use super::*;

#[test]
fn overrides_apply_only_without_privilege() {
    let o = Overrides {
        spool_dir: Some("/tmp/s".into()),
        allow_file: Some("/tmp/a".into()),
        deny_file: None,
    };
    let free = Paths::choose(&o, false);
    assert_eq!(free.spool_dir, PathBuf::from("/tmp/s"));
    assert_eq!(free.allow_file, PathBuf::from("/tmp/a"));
    assert_eq!(free.deny_file, PathBuf::from(paths::DENY_FILE));
    let setgid = Paths::choose(&o, true);
    assert_eq!(setgid, Paths::choose(&Overrides::default(), false));
    assert_eq!(setgid.spool_dir, PathBuf::from(paths::SPOOL_DIR));
}

#[test]
fn the_editor_is_visual_then_editor_then_the_debian_defaults_then_vi() {
    let s = |v: &str| Some(OsString::from(v));
    let all = |_: &str| true;
    assert_eq!(choose_editor(s("vim"), s("nano"), all), "vim");
    assert_eq!(choose_editor(s(""), s("nano"), all), "nano");
    assert_eq!(choose_editor(None, s(""), all), "/usr/bin/sensible-editor");
    assert_eq!(
        choose_editor(None, None, |p: &str| p == "/usr/bin/editor"),
        "/usr/bin/editor"
    );
    assert_eq!(choose_editor(None, None, |_: &str| false), "vi");
}

#[test]
fn os_errors_read_like_strerror() {
    let e = io::Error::from_raw_os_error(2);
    assert_eq!(describe(&e), "No such file or directory");
}
