"""ROS 2 glue shared by impact_indicator and posture_evaluator: their inputs (joint states, odometry, obstacle
hypotheses, robot_description), the model rebuilt from robot_description, and their common diagnostics."""
from __future__ import annotations

from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from contact_dynamics.msg import ObstacleHypothesis
from contact_dynamics_common.node import ERROR, OK, WARN, EstimatorNode, RateMeter, latched_qos, status
from contact_dynamics_common.params import ConfigError

from .inputs import model_from_urdf
from .ros_io import push_joint_state_msg, push_obstacle_msg, push_odometry_msg

LEVELS = {'ok': OK, 'warn': WARN, 'error': ERROR}


class RoverNode(EstimatorNode):
    """EstimatorNode with the rover inputs. Subclasses set ``pipeline_class`` (built as
    ``pipeline_class(params, model=None)``, with ``inputs``, ``model``) and call ``subscribe_rover_inputs()``
    from ``configure()`` and ``drain_inputs()`` first in ``update()``. The input callbacks only queue the
    message; validation and the push into ``pipeline.inputs`` run, in arrival order, in ``drain_inputs``."""

    pipeline_class: type = None

    def __init__(self, name: str, specs, **kwargs):
        super().__init__(name, specs, **kwargs)
        self.pipeline = None
        self.pub = None
        self.description_error = ''
        self.description_state = "waiting for robot_description (using the role map's URDF)"
        self.rates = {'joint_states': RateMeter(), 'odometry': RateMeter(), 'obstacle': RateMeter()}
        self._pending: list = []                 # (push function, message) in arrival order

    def subscribe_rover_inputs(self) -> None:
        p = self.params
        d = p['input_queue_size']
        self.add_input(JointState, p['joint_states_topic'], self.rates['joint_states'],
                       lambda msg: self._pending.append((self._push_joint_state, msg)), d)
        self.add_input(Odometry, p['odom_topic'], self.rates['odometry'],
                       lambda msg: self._pending.append((self._push_odometry, msg)), d)
        self.add_input(ObstacleHypothesis, p['obstacle_topic'], self.rates['obstacle'],
                       lambda msg: self._pending.append((self._push_obstacle, msg)), 10)
        if p['robot_description_topic']:
            self.create_subscription(String, p['robot_description_topic'], self._on_description,
                                     latched_qos())

    def drain_inputs(self) -> None:
        """Validate and push the queued input messages into ``pipeline.inputs`` in arrival order."""
        pending, self._pending = self._pending, []
        for push, msg in pending:
            push(msg)

    def _push_joint_state(self, msg) -> None:
        push_joint_state_msg(self.pipeline.inputs, msg)

    def _push_odometry(self, msg) -> None:
        push_odometry_msg(self.pipeline.inputs, msg)

    def _push_obstacle(self, msg) -> None:
        if not push_obstacle_msg(self.pipeline.inputs, msg, self.params['base_frame']):
            self.get_logger().warning(self.pipeline.inputs.last_error)

    def _on_description(self, msg) -> None:
        try:
            model = model_from_urdf(self.params, msg.data)
        except ConfigError as exc:
            self.description_error = str(exc)
            self.get_logger().error(f'{exc}; keeping the previous model')
            return
        self._pending.clear()                   # inputs queued for the previous model are dropped with it
        self.pipeline = self.pipeline_class(self.params, model)
        self.description_error = ''
        self.description_state = 'model built from the latest robot_description'
        self.get_logger().info(f"model rebuilt from robot_description ({model.nv} DOF)")

    def reset_estimation(self) -> None:
        if self.pipeline is not None:
            # keeps a model built from robot_description
            self._pending.clear()
            self.pipeline = self.pipeline_class(self.params, self.pipeline.model)

    def rate_statuses(self) -> list:
        """'<node>: input <name>' per input: OK once messages arrive, WARN before."""
        return [self.input_status(k, meter) for k, meter in self.rates.items()]

    def model_and_input_statuses(self) -> list:
        """'<node>: robot_description' (when subscribed) and '<node>: inputs' (input counters, last error)."""
        name = self.get_name()
        out = []
        if self.params['robot_description_topic']:
            out.append(status(f'{name}: robot_description', ERROR if self.description_error else OK,
                              self.description_error or self.description_state, {}))
        inp = self.pipeline.inputs
        bad = {k: v for k, v in inp.counts.items()
               if k.startswith(('joint_', 'odometry_', 'obstacle_', 'stale')) and not k.endswith('accepted')}
        out.append(status(f'{name}: inputs', WARN if inp.last_error else OK, inp.last_error or 'ok',
                          {**dict(inp.counts), 'rejected_total': sum(bad.values())}))
        return out
