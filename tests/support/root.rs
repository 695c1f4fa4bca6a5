//! Whether the suite runs as root. Tests that need it say so in their name (`root_…`) and call
//! [`require_root`] first: without root they fail, loudly, rather than pass by doing nothing.

use std::process::Command;

/// The effective uid is 0 (asked of `id -u`: test code stays out of libc).
pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// Fails the test unless it runs as root.
pub fn require_root() {
    assert!(
        is_root(),
        "this test needs root (it creates users, changes owners, mounts or installs); run the \
         suite as root, or leave such tests out visibly with `cargo test -- --skip root_`"
    );
}
