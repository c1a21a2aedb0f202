#!/usr/bin/env bash
# Make sure a program is on the PATH; install it where we can, else say how.
#
#   tools/ensure_program.sh "dot" graphviz graphviz "Graphviz (draws the graphs)"
#   tools/ensure_program.sh "chromium chromium-browser google-chrome" chromium "" "Chromium"
#
# Arguments: the command names (any one will do), the Debian package, the
# Homebrew formula ("" for none), and a human name for messages.
set -u
commands=$1 apt_pkg=$2 brew_pkg=$3 what=$4

found() { for c in $commands; do command -v "$c" >/dev/null 2>&1 && return 0; done; return 1; }
found && exit 0

echo "$what is not installed; installing it..."
if [ "$(uname -s)" = Darwin ]; then
  if [ -n "$brew_pkg" ] && command -v brew >/dev/null 2>&1; then brew install "$brew_pkg"; fi
elif command -v apt-get >/dev/null 2>&1; then
  # sudo -n never asks for a password: it works only where no password is needed
  # (or one was given a moment ago); otherwise the message below says what to run.
  if [ "$(id -u)" = 0 ]; then sudo=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"
  else sudo="none"; fi
  if [ "$sudo" != none ]; then
    $sudo apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$apt_pkg" >/dev/null
  fi
fi

if ! found; then
  cat >&2 <<MSG

Could not install $what automatically (this needs root, sudo without a
password prompt, apt-get or brew).
Please install it yourself, then re-run make:
  Debian/Ubuntu: sudo apt-get install -y $apt_pkg
MSG
  [ -n "$brew_pkg" ] && echo "  macOS:         brew install $brew_pkg" >&2
  [ "$apt_pkg" = graphviz ] && echo "  conda:         conda install -c conda-forge graphviz" >&2
  [ "$apt_pkg" = chromium ] && echo "  macOS/other:   install Google Chrome, or set CHROMIUM=/path/to/chrome" >&2
  exit 1
fi
for c in $commands; do
  command -v "$c" >/dev/null 2>&1 && { echo "Installed: $($c --version 2>&1 | head -1)"; break; }
done
