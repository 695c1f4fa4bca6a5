//! Links the release `crond` with its functions in a measured order (benches/link-order): the
//! code a job child runs, then the code the idle daemon runs, each together at the front of the
//! text. Every 64 KiB of code a forked job child touches is a page fault there, and every 64 KiB
//! window the idle daemon keeps mapped counts in its size; spread by the default layout, the
//! job child's 88 functions touched 14 windows and the loaded daemon's 149 touched 18; in this
//! order 4 and 4 (benches/link-order/README.md has the figures).
//!
//! Only where the linker is rustc's own LLD (x86_64 Linux from Rust 1.90, unless the flags pick
//! another linker): the ordering option is LLD's. Names the build no longer has are skipped.
//! `CROND_LINK_ORDER=off` links in the default layout (to measure the difference).

use std::env;
use std::process::Command;

fn main() {
    let order = "benches/link-order/crond.order";
    println!("cargo:rerun-if-changed={order}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CROND_LINK_ORDER");
    let off = env::var("CROND_LINK_ORDER").as_deref() == Ok("off");
    if off || env::var("PROFILE").as_deref() != Ok("release") || !linked_by_rust_lld() {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let path = std::path::Path::new(&dir).join(order);
    // A tree without the list (a package of the sources alone) links in the default layout.
    if !path.is_file() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=crond=-Wl,--symbol-ordering-file={}",
        path.display()
    );
    println!("cargo:rustc-link-arg-bin=crond=-Wl,--no-warn-symbol-ordering");
}

/// Whether rustc links this target with its own LLD: x86_64-unknown-linux-gnu from 1.90 on,
/// unless the flags choose a linker or its features.
fn linked_by_rust_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (version.next().unwrap_or(0), version.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
