#!/usr/bin/env bash
# The CI colcon job: build contact_dynamics as a robot integrator would, in a temporary colcon workspace
# (src/contact_dynamics = the tracked files of this checkout), source install/setup.bash, and check that
#   1. the package's files come from install/ (config through the ament index, the CLI and the six node
#      executables in install/lib/contact_dynamics, the Python packages from install/, not the checkout);
#   2. each of the six executables, started from install/lib/contact_dynamics with its installed params file
#      under use_sim_time, publishes its outputs over DDS when a short simulated bag is played into it, equal
#      to run-bag at the same data stamps (test/live_bags.py).
# colcon-common-extensions comes pinned from requirements/colcon.txt into a tool venv (build/colcon-venv); the
# ROS 2 packages the build needs (ament_cmake, rosidl, rclpy, ...) are the project's venv, a wheel-based ROS
# install (see doc/install.md for what such a workspace needs).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
TOOLS=${COLCON_VENV:-$ROOT/build/colcon-venv}
cd "$ROOT"
log() { printf '[colcon] %s\n' "$*"; }
t0=$SECONDS

bash tools/bootstrap.sh >/dev/null   # the project's venv (no-op when up to date)

# colcon in its own tool venv, pinned, --no-deps (the set is complete); stamped by the requirements file
want=$(sha256sum requirements/colcon.txt | cut -d' ' -f1)
if [[ ! -x $TOOLS/bin/colcon || "$(cat "$TOOLS/.stamp" 2>/dev/null)" != "$want" ]]; then
    log "installing colcon (requirements/colcon.txt) into $TOOLS"
    rm -rf "$TOOLS"
    "$VENV/bin/python" -c 'import sys; print(sys.base_prefix)' >/dev/null
    python3.11 -m venv "$TOOLS"
    "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r requirements/colcon.txt \
        2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
    echo "$want" >"$TOOLS/.stamp"
fi

WS=$(mktemp -d "${TMPDIR:-/tmp}/contact_dynamics_colcon.XXXXXX")
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/src/contact_dynamics"
git ls-files -z | xargs -0 cp --parents -t "$WS/src/contact_dynamics"
log "workspace $WS"

# The build sees the ROS 2 wheels of the venv as its underlay (ament_cmake, rosidl, message packages).
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
export PATH="$VENV/bin:$PATH"          # python3 = the venv's interpreter (the ROS python of this install)
( cd "$WS" && "$TOOLS/bin/colcon" --log-base log build --event-handlers console_cohesion- summary+ \
      --cmake-args -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
      >"$WS/build.log" 2>&1 ) || { tail -60 "$WS/build.log"; exit 1; }
log "colcon build: ok ($((SECONDS - t0)) s)"

# What `source install/setup.bash` gives a robot shell; nounset off: colcon's scripts read unset variables.
set +u
# shellcheck disable=SC1091
source "$WS/install/setup.bash"
set -u
INSTALL=$WS/install
SHARE=$(python3 -c 'from ament_index_python.packages import get_package_share_directory as g; print(g("contact_dynamics"))')
[[ $SHARE == "$INSTALL/contact_dynamics/share/contact_dynamics" || $SHARE == "$INSTALL/share/contact_dynamics" ]] ||
    { echo "colcon: ament index gives $SHARE, not the workspace's install/" >&2; exit 1; }
LIB=$(dirname "$SHARE")/../lib/contact_dynamics
LIB=$(cd "$LIB" && pwd)
for exe in contact-dynamics contact_estimator multipoint_contact_estimator impedance_profiler pkm_identifier \
           impact_indicator posture_evaluator; do
    [[ -x $LIB/$exe ]] || { echo "colcon: $LIB/$exe missing" >&2; exit 1; }
done
# the Python packages and config of the install, not the checkout's (run from a directory outside it)
( cd "$WS" && python3 - "$SHARE" <<'EOF'
import sys
import contact_dynamics_common, pkm_identification
from contact_dynamics_common.paths import config_dir
from pkm_identification.geometry import load_machine
from rover_contact.inputs import resolve_config_path
share = sys.argv[1]
assert contact_dynamics_common.__file__.startswith(share.rsplit('/share/', 1)[0]), contact_dynamics_common.__file__
assert str(config_dir()) == share + '/config', config_dir()
load_machine('uf_like')
assert str(resolve_config_path('rover_pr3d_roles.yaml')).startswith(share), resolve_config_path('rover_pr3d_roles.yaml')
print(f'[colcon] imports from {contact_dynamics_common.__file__}; config_dir {config_dir()}')
EOF
)
( cd "$WS" && "$LIB/contact-dynamics" simulate pkm --out "$WS/pkm_bag" --duration 1 >/dev/null ) ||
    { echo "colcon: the installed CLI cannot simulate pkm" >&2; exit 1; }

log "the six executables of $LIB, each with its installed params file, a bag played into it"
LIVE_CWD=$WS python3 "$ROOT/test/live_bags.py" --exe-dir "$LIB" --config-dir "$SHARE/config" --work "$WS"
log "ok ($((SECONDS - t0)) s)"
