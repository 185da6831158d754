"""Writers of the two rover descriptions shipped in config/ (documented there as synthetic, not measured).

``pr3d_urdf``: model PR of the spec (§2.5) extruded to 3-D: each planar body split into a left and a right
half (half mass and half pitch inertia), the main body carried by a prismatic ``body_lift_joint`` (its CoM
height is a posture variable, locked during the approach; 0 gives the nominal 0.75 m). RCP-like layout:
two passive side bogies (front + middle wheels), rear wheels on the main body, no differential.

``osr_like_urdf``: an Open-Source-Rover-like rocker-bogie (JPL OSR layout and proportions; masses and
inertias are invented, not measured): body, left/right rockers on a differential, bogies on the rockers,
six wheels, four corner steering joints.
ROS axes: x forward, y left, z up; wheel axles along y.
"""
from __future__ import annotations

import numpy as np


def _inertial(m, com, ixx, iyy, izz):
    return (f'<inertial><origin xyz="{com[0]:.6f} {com[1]:.6f} {com[2]:.6f}" rpy="0 0 0"/><mass value="{m}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>')


def _link(name, inertial=''):
    return f'  <link name="{name}">{inertial}</link>\n'


def _joint(name, kind, parent, child, xyz, axis=(0, 1, 0), limit=None):
    lim = ''
    if limit is not None:
        lim = f'<limit lower="{limit[0]}" upper="{limit[1]}" effort="100" velocity="10"/>'
    return (f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]:.6f} {xyz[1]:.6f} {xyz[2]:.6f}" rpy="0 0 0"/>'
            f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>{lim}</joint>\n')


def pr3d_urdf(half_track: float = 0.4552) -> str:
    """Model PR extruded to 3-D; base_link origin on the ground below the PR origin (z up)."""
    R = 0.175
    s = ''
    s += _link('base_link')
    s += _link('main_body', _inertial(90.0, (0, 0, 0), 8.0, 10.0, 12.0))
    s += _joint('body_lift_joint', 'prismatic', 'base_link', 'main_body', (-0.05, 0.0, 0.75), (0, 0, 1),
                limit=(-0.3, 0.3))
    for side, sy in (('left', 1.0), ('right', -1.0)):
        y = sy * half_track
        s += _link(f'{side}_bogie', _inertial(10.0, (0.0, 0.0, 0.40 - 0.4499), 0.5, 0.8, 0.6))
        s += _joint(f'{side}_bogie_joint', 'revolute', 'base_link', f'{side}_bogie', (0.2671, y, 0.4499),
                    limit=(-0.6, 0.6))
        for wheel, x, parent, z0 in (('front', 0.5349, f'{side}_bogie', 0.4499),
                                     ('middle', 0.0, f'{side}_bogie', 0.4499),
                                     ('rear', -0.5381, 'base_link', 0.0)):
            px = x - (0.2671 if parent != 'base_link' else 0.0)
            s += _link(f'{wheel}_{side}_wheel', _inertial(3.0, (0, 0, 0), 0.03, 0.045, 0.03))
            s += _joint(f'{wheel}_{side}_wheel_joint', 'continuous', parent, f'{wheel}_{side}_wheel',
                        (px, 0.0 if parent != 'base_link' else y, R - z0))
    return f'<?xml version="1.0"?>\n<robot name="pr3d">\n{s}</robot>\n'


def osr_like_urdf() -> str:
    """Open-Source-Rover-like rocker-bogie (approximate OSR proportions; invented masses)."""
    R = 0.07
    half_track = 0.22
    s = ''
    s += _link('base_link', _inertial(6.0, (0.0, 0.0, 0.06), 0.08, 0.12, 0.16))
    for side, sy in (('left', 1.0), ('right', -1.0)):
        y = sy * half_track
        # rocker pivot 0.20 m above ground; front wheel on the rocker, bogie pivot behind
        s += _link(f'{side}_rocker', _inertial(0.8, (0.05, 0, -0.04), 0.004, 0.01, 0.01))
        s += _joint(f'{side}_rocker_joint', 'revolute', 'base_link', f'{side}_rocker', (0.0, y, 0.0),
                    limit=(-0.5, 0.5))
        s += _link(f'{side}_bogie', _inertial(0.5, (-0.02, 0, -0.04), 0.002, 0.005, 0.005))
        s += _joint(f'{side}_bogie_joint', 'revolute', f'{side}_rocker', f'{side}_bogie', (-0.10, 0.0, -0.06),
                    limit=(-0.6, 0.6))
        # corner wheels steer
        s += _link(f'front_{side}_steer', _inertial(0.2, (0, 0, 0), 5e-4, 5e-4, 5e-4))
        s += _joint(f'front_{side}_steer_joint', 'revolute', f'{side}_rocker', f'front_{side}_steer',
                    (0.28, 0.0, -0.07), (0, 0, 1), limit=(-0.8, 0.8))
        s += _link(f'rear_{side}_steer', _inertial(0.2, (0, 0, 0), 5e-4, 5e-4, 5e-4))
        s += _joint(f'rear_{side}_steer_joint', 'revolute', f'{side}_bogie', f'rear_{side}_steer',
                    (-0.16, 0.0, -0.01), (0, 0, 1), limit=(-0.8, 0.8))
        for wheel, parent, xyz in (('front', f'front_{side}_steer', (0, 0, -0.06)),
                                   ('middle', f'{side}_bogie', (0.10, 0.0, -0.07)),
                                   ('rear', f'rear_{side}_steer', (0, 0, -0.06))):
            s += _link(f'{wheel}_{side}_wheel', _inertial(0.35, (0, 0, 0), 6e-4, 9e-4, 6e-4))
            s += _joint(f'{wheel}_{side}_wheel_joint', 'continuous', parent, f'{wheel}_{side}_wheel', xyz)
    return f'<?xml version="1.0"?>\n<robot name="osr_like">\n{s}</robot>\n'


# RCP body CoMs, starboard half, GMDL axes (x forward, y up, z starboard), spec Table 4-1 (front-arm y typo fixed)
_RCP = {'fw': (0.5349, 0.175, 0.4552), 'mw': (0.0, 0.175, 0.4552), 'rw': (-0.5381, 0.175, 0.4552),
        'fl': (0.5349, 0.2214, 0.3872), 'ml': (0.0053, 0.2214, 0.3872), 'rl': (-0.5307, 0.2214, 0.4506),
        'fs': (0.5391, 0.4711, 0.4662), 'ms': (0.0046, 0.4711, 0.4662), 'rs': (-0.5423, 0.4711, 0.4662),
        'fa': (0.5279, 0.6200, 0.4091), 'ma': (0.0070, 0.6200, 0.4091), 'ra': (-0.5315, 0.6200, 0.4030),
        'sb': (0.2671, 0.4499, 0.3290), 'rb': (-0.5385, 0.4501, 0.0), 'mb': (-0.0014, 0.8246, 0.0)}


def rcp_like_urdf() -> str:
    """A 28-body RCP-like rover (spec §2.1): main body, two longitudinal side bogies (front + middle wheels),
    one transverse rear bogie (both rear wheels), and per wheel arm (walking joint), steer (steering joint),
    leg (leg joint) and wheel (spin), each joint at its child body's CoM from Table 4-1 (GMDL -> ROS:
    x, −z, y). Masses and inertias are invented (the thesis gives none)."""
    def ros(p, side):
        x, y_up, z_lat = p
        return (x, -z_lat if side == 'right' else z_lat, y_up)

    def rel(a, b):
        return tuple(ai - bi for ai, bi in zip(a, b))

    s = _link('base_link') + _link('main_body', _inertial(60.0, (0, 0, 0), 4.0, 6.0, 8.0))
    mb = ros(_RCP['mb'], 'left')
    s += _joint('main_body_fixed', 'fixed', 'base_link', 'main_body', mb)
    rb = ros(_RCP['rb'], 'left')
    s += _link('rear_bogie', _inertial(5.0, (0, 0, 0), 0.3, 0.05, 0.3))
    s += _joint('rear_bogie_joint', 'revolute', 'base_link', 'rear_bogie', rb, (1, 0, 0), limit=(-0.5, 0.5))
    for side in ('left', 'right'):
        sb = ros(_RCP['sb'], side)
        s += _link(f'{side}_bogie', _inertial(5.0, (0, 0, 0), 0.05, 0.3, 0.3))
        s += _joint(f'{side}_bogie_joint', 'revolute', 'base_link', f'{side}_bogie', sb, (0, 1, 0), limit=(-0.5, 0.5))
        for w, bogie, bogie_pos in (('front', f'{side}_bogie', sb), ('middle', f'{side}_bogie', sb),
                                    ('rear', 'rear_bogie', rb)):
            k = w[0]
            arm, steer, leg, wheel = (ros(_RCP[k + c], side) for c in ('a', 's', 'l', 'w'))
            pre = f'{w}_{side}'
            s += _link(f'{pre}_arm', _inertial(1.5, (0, 0, 0), 0.01, 0.01, 0.01))
            s += _joint(f'{pre}_walk_joint', 'revolute', bogie, f'{pre}_arm', rel(arm, bogie_pos), (0, 1, 0),
                        limit=(-0.8, 0.8))
            s += _link(f'{pre}_steer', _inertial(1.5, (0, 0, 0), 0.01, 0.01, 0.01))
            s += _joint(f'{pre}_steer_joint', 'revolute', f'{pre}_arm', f'{pre}_steer', rel(steer, arm), (0, 0, 1),
                        limit=(-1.0, 1.0))
            s += _link(f'{pre}_leg', _inertial(2.0, (0, 0, 0), 0.02, 0.02, 0.01))
            s += _joint(f'{pre}_leg_joint', 'revolute', f'{pre}_steer', f'{pre}_leg', rel(leg, steer), (0, 1, 0),
                        limit=(-0.5, 0.5))
            s += _link(f'{pre}_wheel', _inertial(3.0, (0, 0, 0), 0.03, 0.045, 0.03))
            s += _joint(f'{pre}_wheel_joint', 'continuous', f'{pre}_leg', f'{pre}_wheel', rel(wheel, leg))
    return f'<?xml version="1.0"?>\n<robot name="rcp_like">\n{s}</robot>\n'
