"""ROS message -> RoverInputs pushes, shared by both rover_contact nodes (live) and their offline adapters."""
from __future__ import annotations

from contact_dynamics_common.msgconv import stamp_to_ns

JOINT_STATE = 'sensor_msgs/msg/JointState'
ODOMETRY = 'nav_msgs/msg/Odometry'
OBSTACLE = 'contact_dynamics/msg/ObstacleHypothesis'


def push_joint_state_msg(inputs, msg) -> bool:
    return inputs.push_joint_state(stamp_to_ns(msg.header.stamp), msg.name, msg.position, msg.velocity)


def push_odometry_msg(inputs, msg) -> bool:
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    v, w = msg.twist.twist.linear, msg.twist.twist.angular
    return inputs.push_odometry(stamp_to_ns(msg.header.stamp), (p.x, p.y, p.z), (o.x, o.y, o.z, o.w),
                                (v.x, v.y, v.z), (w.x, w.y, w.z))


def push_obstacle_msg(inputs, msg, base_frame: str, received_ns: int | None = None) -> bool:
    """``received_ns``: when the hypothesis arrived (the node's clock), for the future-stamp check."""
    n = msg.face_normal_out
    return inputs.push_obstacle(stamp_to_ns(msg.header.stamp), msg.header.frame_id, (n.x, n.y, n.z), msg.beta_rad,
                                msg.height_m, msg.distance_m, list(msg.contact_wheels), msg.step_edge, msg.k, msg.p,
                                msg.e_restitution, msg.contact_model, base_frame, received_ns=received_ns)


def push_columns(inputs, topic_kind: str, cols: dict, sl: slice, base_frame: str) -> None:
    """Push bag rows (msgconv column dicts) in order. Obstacle hypotheses take their ``contact_wheels`` from the
    column of that name (one sequence of names per row) when the bag reader provides it, and their log time as
    the time they arrived (the future-stamp check)."""
    idx = range(*sl.indices(len(cols['log_ns'])))
    if topic_kind == JOINT_STATE:
        names = cols['name']
        for i in idx:
            pos, vel = cols['position'][i], cols['velocity'][i]
            keep = [j for j in range(len(names)) if j < len(pos) and not (pos[j] != pos[j] and vel[j] != vel[j])]
            inputs.push_joint_state(int(cols['stamp_ns'][i]), [names[j] for j in keep], pos[keep], vel[keep])
    elif topic_kind == ODOMETRY:
        for i in idx:
            inputs.push_odometry(int(cols['stamp_ns'][i]), cols['position'][i], cols['orientation'][i],
                                 cols['linear'][i], cols['angular'][i])
    elif topic_kind == OBSTACLE:
        frames = cols.get('frame_ids', [cols.get('frame_id', '')] * len(cols['log_ns']))
        models = cols.get('contact_models', [cols.get('contact_model', '')] * len(cols['log_ns']))
        wheels = cols.get('contact_wheels')            # per row: the hypothesis's wheel names (string[] column)
        for i in idx:
            s = cols['scalars'][i]
            inputs.push_obstacle(int(cols['stamp_ns'][i]), frames[i], cols['face_normal_out'][i], s[0], s[1], s[2],
                                 list(wheels[i]) if wheels is not None else [], bool(cols['step_edge'][i][0]),
                                 s[4], s[5], s[6], models[i], base_frame, received_ns=int(cols['log_ns'][i]))
