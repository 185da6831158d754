"""Launch the rover_contact nodes (impact_indicator and posture_evaluator) with their documented parameters.

  ros2 launch contact_dynamics rover_contact.launch.py
  ros2 launch contact_dynamics rover_contact.launch.py model_yaml:=/my/rover_roles.yaml \
      joint_states_topic:=/joint_states odom_topic:=/odom use_sim_time:=true

Outputs: /impact_indicator/impact_indicator, /posture_evaluator/posture_evaluation, service
/posture_evaluator/evaluate_postures, health on /diagnostics. Obstacle hypotheses go to
/impact_indicator/obstacle and /posture_evaluator/obstacle (or one topic for both with obstacle_topic:=).

posture_command:=true enables posture_evaluator's command bridge (doc/bridges.md): the chosen posture as a
JointTrajectory on <posture_controller>/joint_trajectory, its approach speed limit on
/posture_evaluator/approach_speed_limit:
  ros2 launch contact_dynamics rover_contact.launch.py posture_command:=true \
      posture_controller:=/lift_controller
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare('contact_dynamics')
    args = [
        DeclareLaunchArgument('impact_params_file', default_value=PathJoinSubstitution([share, 'config', 'impact_indicator.yaml'])),
        DeclareLaunchArgument('posture_params_file', default_value=PathJoinSubstitution([share, 'config', 'posture_evaluator.yaml'])),
        DeclareLaunchArgument('model_yaml', default_value='',
                              description="joint-role map (with its urdf); empty: the params files' model_yaml"),
        DeclareLaunchArgument('joint_states_topic', default_value='/joint_states'),
        DeclareLaunchArgument('odom_topic', default_value='/odom'),
        DeclareLaunchArgument('obstacle_topic', default_value='',
                              description="ObstacleHypothesis input of both nodes; empty: each node's ~/obstacle"),
        DeclareLaunchArgument('use_sim_time', default_value='false'),
        DeclareLaunchArgument('impact_indicator', default_value='true', description='start impact_indicator'),
        DeclareLaunchArgument('posture_evaluator', default_value='true', description='start posture_evaluator'),
        DeclareLaunchArgument('namespace', default_value=''),
        DeclareLaunchArgument('posture_command', default_value='',
                              description="true: publish the chosen posture (doc/bridges.md); empty: params file"),
        DeclareLaunchArgument('posture_controller', default_value='',
                              description='joint_trajectory_controller of the posture joints; empty: params file'),
    ]

    def nodes(context):
        common = {'joint_states_topic': LaunchConfiguration('joint_states_topic'),
                  'odom_topic': LaunchConfiguration('odom_topic'),
                  'use_sim_time': LaunchConfiguration('use_sim_time')}
        for optional in ('model_yaml', 'obstacle_topic'):          # only when given: else the params files'
            if LaunchConfiguration(optional).perform(context):
                common[optional] = LaunchConfiguration(optional)
        posture = dict(common)
        if LaunchConfiguration('posture_command').perform(context):
            posture['command_enabled'] = LaunchConfiguration('posture_command')
        controller = LaunchConfiguration('posture_controller').perform(context)
        if controller:
            posture['command_topic'] = controller.rstrip('/') + '/joint_trajectory'
        return [
            Node(package='contact_dynamics', executable='impact_indicator', name='impact_indicator',
                 namespace=LaunchConfiguration('namespace'), output='screen', emulate_tty=True,
                 parameters=[LaunchConfiguration('impact_params_file'), common],
                 condition=IfCondition(LaunchConfiguration('impact_indicator'))),
            Node(package='contact_dynamics', executable='posture_evaluator', name='posture_evaluator',
                 namespace=LaunchConfiguration('namespace'), output='screen', emulate_tty=True,
                 parameters=[LaunchConfiguration('posture_params_file'), posture],
                 condition=IfCondition(LaunchConfiguration('posture_evaluator'))),
        ]
    return LaunchDescription(args + [OpaqueFunction(function=nodes)])
