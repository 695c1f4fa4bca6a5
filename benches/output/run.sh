#!/bin/sh
# Output-capture benchmark: a job printing SIZE bytes (default 1 GiB) captured by
# crond::job::output and mailed through a byte-counting -m command; prints the byte count and the
# capturing process's peak RSS from /proc/self/status (VmHWM). Not part of `cargo test`.
#   benches/output/run.sh [SIZE]
set -eu
cd "$(dirname "$0")"
cargo build --release --quiet
exec ./target/release/output-bench "${1:-1073741824}"
