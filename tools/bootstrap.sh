#!/usr/bin/env bash
# Create or update the project's environment from nothing, idempotently:
#   1. .venv with CPython 3.11
#   2. the pinned lock (ROS 2 Kilted wheels, numpy/scipy, mcap, build tools, test tools), --no-deps
#   3. the msg/ interfaces built with ament_cmake + rosidl into the venv prefix, which also lays the package out
#      as colcon would (ament index marker, share/contact_dynamics/{package.xml,launch,config},
#      lib/contact_dynamics/<node executables>)
#   4. the project's Python packages, editable, with their console scripts in .venv/bin
#   5. test-only, when ../shared/ros2-launch exists (LAUNCH_STACK=dir to point elsewhere, LAUNCH_STACK= to skip):
#      the ROS 2 launch stack wheels (launch, launch_ros, launch_testing, ros2cli, ...) with
#      requirements/launch-test.txt, --no-deps, and composition_interfaces built by the same rosidl step as
#      msg/ into the venv prefix (launch_ros imports it); never part of the robot's runtime requirements
# A stamp over every input makes a second run a no-op (well under a second).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
BUILD_DIR=${BUILD_DIR:-$ROOT/build/msgs}
LAUNCH_STACK=${LAUNCH_STACK-$ROOT/../shared/ros2-launch}
STAMP=$VENV/.contact_dynamics_stamp
cd "$ROOT"

log() { printf '[bootstrap] %s\n' "$*"; }
quiet_pip() {  # pip with the machine's noisy 'Location ... is ignored' warnings filtered out
    "$VENV/bin/python" -m pip "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}

inputs_hash() {
    local files
    shopt -s nullglob
    files=(requirements/lock.txt CMakeLists.txt package.xml setup.py setup.cfg msg/*.msg srv/*.srv tools/bootstrap.sh
           scripts/* launch/* config/* config/*/* resource/* requirements/launch-test.txt)
    shopt -u nullglob
    if [[ -n $LAUNCH_STACK && -d $LAUNCH_STACK ]]; then
        regular_launch=("$LAUNCH_STACK"/wheels/*.whl "$LAUNCH_STACK"/src/composition_interfaces/srv/*.srv)
        files+=("${regular_launch[@]}")
    fi
    local f regular=()
    for f in "${files[@]}"; do [[ -f $f ]] && regular+=("$f"); done   # sub-directories of config/ are not files
    { printf '%s\n' "${regular[@]}"; cat "${regular[@]}"; } | sha256sum | cut -d' ' -f1
}

# One bootstrap at a time per venv (parallel test runs, helpers): the others wait, then see the stamp.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9

want=$(inputs_hash)
if [[ -x $VENV/bin/python && -f $STAMP && "$(cat "$STAMP")" == "$want" ]]; then
    log "environment is up to date ($VENV)"
    exit 0
fi

# 1. Interpreter: CPython 3.11 (the ROS 2 Kilted wheels are built for cp311 here).
find_python() {
    for cand in "${PYTHON:-}" python3.11 python3; do
        [[ -n $cand ]] || continue
        if command -v "$cand" >/dev/null 2>&1 &&
           "$cand" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
            command -v "$cand"; return 0
        fi
    done
    return 1
}
if [[ ! -x $VENV/bin/python ]]; then
    PY=$(find_python) || { echo "bootstrap: CPython 3.11 is required (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
    log "creating $VENV with $PY"
    "$PY" -m venv "$VENV"
fi

# 2. Pinned dependencies. --no-deps: the lock is complete, and the ROS wheels' own metadata is not.
log "installing the pinned lock (requirements/lock.txt)"
quiet_pip install --quiet --disable-pip-version-check --no-deps -r requirements/lock.txt
# The launch stack wheels (step 5) name ament_index_python by its ROS name; the lock's ros-ament-index-python
# provides that module (not a distribution of that name), so pip check's line about it is not a missing piece.
pip_problems() { quiet_pip check 2>&1 | grep -v -E '^launch-ros [^ ]+ requires ament-index-python,' || true; }
[[ -z $(pip_problems | grep -v 'No broken requirements') ]] || { pip_problems; exit 1; }

# 3. Interfaces. The wheels' CMake exports hard-code the manylinux build container's include dirs.
log "building msg/ interfaces into the venv prefix"
mkdir -p "$ROOT/build"
PYINC=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
NPINC=$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')
mapfile -t hardcoded < <(grep -l '/opt/python/cp311-cp311' "$VENV"/share/*/cmake/*.cmake 2>/dev/null || true)
if ((${#hardcoded[@]})); then
    sed -i -e "s#/opt/python/cp311-cp311/include/python3.11#$PYINC#g" \
        -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$NPINC#g" "${hardcoded[@]}"
fi
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"
# configure, build and install one ament_cmake package (source dir, build dir, log name, extra cmake args)
cmake_install() {
    local src=$1 build=$2 name=$3
    shift 3
    cmake -S "$src" -B "$build" -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" \
        -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release "$@" \
        >"$ROOT/build/$name-configure.log" 2>&1 || { tail -40 "$ROOT/build/$name-configure.log"; exit 1; }
    cmake --build "$build" -j"$(nproc)" >"$ROOT/build/$name-build.log" 2>&1 ||
        { tail -40 "$ROOT/build/$name-build.log"; exit 1; }
    cmake --install "$build" >"$ROOT/build/$name-install.log" 2>&1 ||
        { tail -40 "$ROOT/build/$name-install.log"; exit 1; }
}
cmake_install "$ROOT" "$BUILD_DIR" cmake -DINSTALL_PYTHON_PACKAGES=OFF

# 4. The project itself, editable, so that console scripts run from the venv without ros2cli.
log "installing contact_dynamics (editable)"
quiet_pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT"

"$VENV/bin/python" -c 'from contact_dynamics.msg import ContactEstimate, ParameterEstimate' ||
    { echo "bootstrap: the generated messages do not import" >&2; exit 1; }
# 5. Test-only: the launch stack for test/test_launch_real.py (skipped there, with the reason, without it).
if [[ -n $LAUNCH_STACK && -d $LAUNCH_STACK/wheels ]]; then
    log "installing the launch stack for the tests ($LAUNCH_STACK)"
    quiet_pip install --quiet --disable-pip-version-check --no-deps "$LAUNCH_STACK"/wheels/*.whl \
        -r requirements/launch-test.txt
    cmake_install "$LAUNCH_STACK/src/composition_interfaces" "$ROOT/build/composition_interfaces" \
        composition_interfaces
    "$VENV/bin/python" -c 'import launch_ros.actions, composition_interfaces.srv' ||
        { echo "bootstrap: launch_ros does not import" >&2; exit 1; }
else
    log "no launch stack at ${LAUNCH_STACK:-<skipped>}: the real-launch tests will be skipped"
fi

echo "$want" >"$STAMP"
log "ready: $VENV"
