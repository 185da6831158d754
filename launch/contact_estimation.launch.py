"""Launch the contact estimator with its documented parameters.

  ros2 launch contact_dynamics contact_estimation.launch.py
  ros2 launch contact_dynamics contact_estimation.launch.py params_file:=/my/robot.yaml \
      wrench_topic:=/ft_sensor/wrench joint_states_topic:=/joint_states use_sim_time:=true

Remap the inputs with the *_topic arguments; the estimates appear on /contact_estimator/estimate and
/contact_estimator/<algorithm>/estimate, health on /diagnostics.

With tuner:=true the impedance_tuner starts beside it (doc/bridges.md) and retunes the admittance_controller
named by controller:= from the trusted estimates (tuner_dry_run:=true: only publishes what it would set):
  ros2 launch contact_dynamics contact_estimation.launch.py tuner:=true controller:=/admittance_controller
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare('contact_dynamics'), 'config', 'contact_estimator.yaml'])
    tuner_params = PathJoinSubstitution([FindPackageShare('contact_dynamics'), 'config',
                                         'impedance_tuner.yaml'])
    args = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='ROS 2 params file with a contact_estimator section'),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='Use /clock (bag replay)'),
        DeclareLaunchArgument('wrench_topic', default_value='wrench', description='WrenchStamped input'),
        DeclareLaunchArgument('joint_states_topic', default_value='joint_states', description='JointState input'),
        DeclareLaunchArgument('pose_topic', default_value='pose', description='PoseStamped input'),
        DeclareLaunchArgument('namespace', default_value='', description='Node namespace'),
        DeclareLaunchArgument('log_level', default_value='info', description='Logger level'),
        DeclareLaunchArgument('tuner', default_value='false',
                              description='Start impedance_tuner beside the estimator (doc/bridges.md)'),
        DeclareLaunchArgument('controller', default_value='admittance_controller',
                              description='The admittance_controller node the tuner sets'),
        DeclareLaunchArgument('tuner_params_file', default_value=tuner_params,
                              description='ROS 2 params file with an impedance_tuner section'),
        DeclareLaunchArgument('tuner_dry_run', default_value='false',
                              description='Tuner publishes on ~/gains what it would set, sets nothing'),
    ]
    node = Node(
        package='contact_dynamics',
        executable='contact_estimator',
        name='contact_estimator',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=[LaunchConfiguration('params_file'), {'use_sim_time': LaunchConfiguration('use_sim_time')}],
        remappings=[('wrench', LaunchConfiguration('wrench_topic')),
                    ('joint_states', LaunchConfiguration('joint_states_topic')),
                    ('pose', LaunchConfiguration('pose_topic'))],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    tuner = Node(
        package='contact_dynamics',
        executable='impedance_tuner',
        name='impedance_tuner',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        condition=IfCondition(LaunchConfiguration('tuner')),
        parameters=[LaunchConfiguration('tuner_params_file'),
                    {'use_sim_time': LaunchConfiguration('use_sim_time'),
                     'controller_name': LaunchConfiguration('controller'),
                     'dry_run': LaunchConfiguration('tuner_dry_run')}],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    return LaunchDescription(args + [node, tuner])
