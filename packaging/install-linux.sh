#!/bin/sh
# Install (or remove) the one-folder build for one user or system-wide.
#
#   packaging/install-linux.sh [--uninstall] [DIST_DIR]
#
# DIST_DIR defaults to dist/offline-assistant. PREFIX defaults to ~/.local (use
# PREFIX=/usr/local with sudo for all users). Installs:
#   $PREFIX/lib/offline-assistant/                        the app folder
#   $PREFIX/bin/offline-assistant                          symlink to its executable
#   $PREFIX/share/applications/offline-assistant.desktop
#   $PREFIX/share/icons/hicolor/scalable/apps/offline-assistant.svg
#   $PREFIX/share/metainfo/io.github.offline_assistant.metainfo.xml
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
uninstall=0
if [ "${1:-}" = "--uninstall" ]; then
    uninstall=1
    shift
fi
dist=${1:-$here/../dist/offline-assistant}

app_dir=$prefix/lib/offline-assistant
bin=$prefix/bin/offline-assistant
desktop=$prefix/share/applications/offline-assistant.desktop
icon=$prefix/share/icons/hicolor/scalable/apps/offline-assistant.svg
metainfo=$prefix/share/metainfo/io.github.offline_assistant.metainfo.xml

refresh_caches() {
    if command -v update-desktop-database >/dev/null 2>&1; then
        update-desktop-database -q "$prefix/share/applications" || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1; then
        gtk-update-icon-cache -q -t "$prefix/share/icons/hicolor" || true
    fi
}

if [ "$uninstall" = 1 ]; then
    rm -rf "$app_dir"
    rm -f "$bin" "$desktop" "$icon" "$metainfo"
    refresh_caches
    echo "removed Offline Assistant from $prefix"
    exit 0
fi

if [ ! -x "$dist/offline-assistant" ]; then
    echo "error: $dist/offline-assistant not found; build it first with 'make package'" >&2
    exit 1
fi

mkdir -p "$prefix/lib" "$prefix/bin" "$(dirname "$desktop")" "$(dirname "$icon")" \
    "$(dirname "$metainfo")"
rm -rf "$app_dir"
cp -a "$dist" "$app_dir"
ln -sfn "$app_dir/offline-assistant" "$bin"
# Exec= names the program; point it at the installed copy so it works without PATH changes.
sed "s|^Exec=offline-assistant|Exec=$bin|; s|^TryExec=offline-assistant|TryExec=$bin|" \
    "$here/offline-assistant.desktop" >"$desktop"
cp "$here/offline-assistant.svg" "$icon"
cp "$here/io.github.offline_assistant.metainfo.xml" "$metainfo"
refresh_caches
echo "installed Offline Assistant in $app_dir (run: $bin)"
