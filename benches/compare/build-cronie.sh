#!/bin/sh
# Builds cronie from source outside this repository, for compare.py's `cronie` peer:
#   benches/compare/build-cronie.sh [SOURCE_DIR]
# SOURCE_DIR: a cronie checkout (default: clone https://github.com/cronie-crond/cronie). The tag
# $CRONIE_TAG (default cronie-1.7.2) is built with PAM (service `crond`) into $CRONIE_BUILD
# (default /var/tmp/cronie-build); compare.py finds $CRONIE_BUILD/src/crond. Installs Debian's
# autoconf, automake and libpam0g-dev if missing (as root). Not a test: nothing here is checked.
set -eu
tag=${CRONIE_TAG:-cronie-1.7.2}
build=${CRONIE_BUILD:-/var/tmp/cronie-build}
src=${1:-}
need=""
for pkg in autoconf automake libpam0g-dev gcc make; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need="$need $pkg"
done
if [ -n "$need" ]; then
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi
if [ -z "$src" ]; then
    src=$(mktemp -d)
    git clone -q https://github.com/cronie-crond/cronie "$src"
fi
rm -rf "$build"
mkdir -p "$build"
git -C "$src" archive "$tag" | tar -x -C "$build"
cd "$build"
./autogen.sh >/dev/null
./configure -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var --with-pam \
    --without-selinux --without-audit >/dev/null
make -s -j"$(nproc)" >/dev/null
echo "built $tag: $build/src/crond"
