#!/usr/bin/env bash
# Chromium draws Chinese text only with a font that covers it (else empty
# boxes). Make sure one is installed: Debian's fonts-noto-cjk where we can,
# else say how. macOS ships such fonts.
set -u
[ "$(uname -s)" = Darwin ] && exit 0
has() { fc-list :lang=zh 2>/dev/null | grep -q .; }
has && exit 0

echo "No font for Chinese text is installed; installing fonts-noto-cjk..."
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then sudo=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"
  else sudo="none"; fi
  if [ "$sudo" != none ]; then
    $sudo apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq fonts-noto-cjk >/dev/null
  fi
fi
if has; then
  echo "Installed: $(fc-list :lang=zh family | head -1)"
  exit 0
fi
cat >&2 <<MSG

Could not install a font for Chinese text automatically (this needs root,
or sudo without a password prompt, and apt-get). Please install one, then
re-run make:
  Debian/Ubuntu: sudo apt-get install -y fonts-noto-cjk
  Fedora:        sudo dnf install google-noto-sans-cjk-fonts
MSG
exit 1
