#!/bin/sh
# Job-output benchmark on the real job child: the real crond runs one @reboot job
# printing SIZE bytes (default 1 GiB) with `-m` set to a command that counts the body it
# receives and, once it has read everything, copies its parent's VmHWM (the job child's peak
# RSS so far: capture, spill and the whole mail stream) from /proc. Prints both. Not a test:
# nothing here is asserted. Runs as any user (every path is overridden; the job is the
# caller's own). Needs SIZE bytes free in $TMPDIR or /tmp for the spill file.
#   cargo build --release && benches/daemon/job_output.sh [SIZE]
set -eu
size=${1:-1073741824}
repo=$(cd "$(dirname "$0")/../.." && pwd)
crond=${CROND:-$repo/target/release/crond}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir "$dir/spool" "$dir/cron.d" "$dir/out"
: > "$dir/crontab"
user=$(id -un)
printf '@reboot yes 0123456789abcdef | head -c %s\n' "$size" > "$dir/spool/$user"
chmod 600 "$dir/spool/$user"
"$crond" -f --log stderr --spool-dir "$dir/spool" --system-crontab "$dir/crontab" \
    --cron-d "$dir/cron.d" --pid-file "$dir/out/pid" --reboot-marker "$dir/out/reboot" \
    -m "sed '1,/^\$/d' | wc -c > $dir/out/count; grep VmHWM /proc/\$PPID/status > $dir/out/hwm" \
    2> "$dir/log" &
pid=$!
start=$(date +%s.%N)
while [ ! -s "$dir/out/hwm" ]; do
    kill -0 "$pid" || { cat "$dir/log"; exit 1; }
    sleep 0.1
done
end=$(date +%s.%N)
printf 'job output: %s bytes; -m command received %s body bytes; job child peak RSS: %s (%.1f s)\n' \
    "$size" "$(cat "$dir/out/count")" "$(sed 's/VmHWM:[[:space:]]*//' "$dir/out/hwm")" \
    "$(echo "$end - $start" | bc)"
