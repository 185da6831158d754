"""No recording of your own unit yet? This writes one: the sled of ``sled.yaml`` (a 1.5 kg deck on two 120°
V-runners) sliding down the 0.2 rad ramp into its end stop, simulated by the package's rigid-body penalty
simulator with the estimator's contact law F_n = k δ + b δ̇, F_t = μ k δ (k = 2e4 N/m, b = 17.32 N·s/m,
μ = 0.15), as the two topics of ``params.yaml``:

* ``/sled/odometry`` (nav_msgs/Odometry): pose of the sled frame in ``world``, twist in the sled frame;
* ``/sled/ft/wrench`` (geometry_msgs/WrenchStamped): contact force [N] and moment [N·m] on the sled about
  its origin, in the sled frame.

No truth is written (no truth.yaml, no ground truth in the metadata), nor a geometry.yaml: the tools take the
geometry from ``geometry_file``, else ``BAG/geometry.yaml``, else the packaged ACU surrogate.

    python examples/my_unit/make_sled_bag.py /tmp/sled_bag
"""
import sys
from pathlib import Path

import yaml
from scipy.spatial.transform import Rotation

from contact_dynamics_common.bag import BagWriter
from contact_estimation.geometry.body import body_from_spec
from contact_estimation.multipoint.simulate import ContactLaw, RigidBodySim


def xyz(a) -> dict:
    return {'x': float(a[0]), 'y': float(a[1]), 'z': float(a[2])}


def main(out: str) -> None:
    geo = yaml.safe_load((Path(__file__).parent / 'sled.yaml').read_text())
    sim = RigidBodySim(body_from_spec(geo['payload'], 'sled'), body_from_spec(geo['environment'], 'ramp'),
                       ContactLaw(2e4, 17.32, 0.15, normal='kv', friction_law='sliding'))
    ramp = Rotation.from_euler('y', 0.2)
    start = ramp * Rotation.from_euler('x', 0.02)          # on the ramp, rolled a little, 0.3 m/s down it
    tr = sim.run(ramp.apply([0.0, 0.0, 0.028]), start.as_quat(), v0=ramp.apply([0.3, 0.0, 0.0]),
                 duration=0.5, dt=2e-4, rate=1000.0)
    with BagWriter(out, overwrite=True) as bag:
        bag.add_topic('/sled/odometry', 'nav_msgs/msg/Odometry')
        bag.add_topic('/sled/ft/wrench', 'geometry_msgs/msg/WrenchStamped')
        for t, p, q, v, w, f, m in zip(tr.t, tr.p, tr.q, tr.v, tr.w, tr.force, tr.moment):
            to_sled = Rotation.from_quat(q).inv()             # world axes -> sled axes
            ns = 1_700_000_000 * 10**9 + int(round(t * 1e9))
            header = {'stamp': {'sec': ns // 10**9, 'nanosec': ns % 10**9}, 'frame_id': 'world'}
            pose = {'position': xyz(p), 'orientation': dict(zip('xyzw', map(float, q)))}
            bag.write('/sled/odometry', 'nav_msgs/msg/Odometry',
                      {'header': header, 'child_frame_id': 'sled', 'pose': {'pose': pose},
                       'twist': {'twist': {'linear': xyz(to_sled.apply(v)), 'angular': xyz(to_sled.apply(w))}}}, ns)
            bag.write('/sled/ft/wrench', 'geometry_msgs/msg/WrenchStamped',
                      {'header': dict(header, frame_id='sled'),
                       'wrench': {'force': xyz(to_sled.apply(f)), 'torque': xyz(to_sled.apply(m))}}, ns)
    print(f'wrote {out}: {len(tr.t)} samples of /sled/odometry and /sled/ft/wrench, no truth, no geometry.yaml')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python examples/my_unit/make_sled_bag.py OUT_BAG')
    main(sys.argv[1])
