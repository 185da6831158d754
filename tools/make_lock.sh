#!/usr/bin/env bash
# Rebuild requirements/lock.txt: install the direct requirements into a scratch venv and list its
# .dist-info distributions (pip freeze would list the ROS wheels' .egg-info pseudo-packages, which are
# not on PyPI). setuptools and wheel are pinned for the editable build of the project itself.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
python3.11 -m venv "$SCRATCH/venv"
"$SCRATCH/venv/bin/pip" install -q -r "$ROOT/requirements/runtime.in" -r "$ROOT/requirements/build.txt" \
    -r "$ROOT/requirements/test.txt" 2> >(grep -v "^WARNING: Location" >&2)
{
  echo "# Full pinned lock for CPython 3.11 / x86_64 Linux, installed with --no-deps (see tools/bootstrap.sh)."
  echo "# Built by tools/make_lock.sh from the .dist-info set of runtime.in + build.txt + test.txt, never pip freeze."
  cd "$SCRATCH/venv/lib/python3.11/site-packages"
  ls -d *.dist-info | sed -E 's/\.dist-info$//' | while read -r d; do
    name=${d%-*}; ver=${d##*-}
    case "${name,,}" in pip) continue ;; esac
    echo "${name//_/-}==$ver"
  done | sort -f
} > "$ROOT/requirements/lock.txt"
echo "wrote requirements/lock.txt"
