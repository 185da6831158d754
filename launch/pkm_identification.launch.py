"""Launch the hexapod identifier (pkm_identifier) with its documented parameters.

  ros2 launch contact_dynamics pkm_identification.launch.py
  ros2 launch contact_dynamics pkm_identification.launch.py params_file:=/my/hexapod.yaml \
      joint_states_topic:=/hexapod/joint_states use_sim_time:=true

The estimate appears on /pkm_identifier/parameters (contact_dynamics/ParameterEstimate), the platform inertia
on /pkm_identifier/platform_inertia, the feed-forward forces on /pkm_identifier/predicted_effort, health on
/diagnostics.

With feedforward:=true the pkm_feedforward node starts beside it (doc/bridges.md): it takes a desired strut
trajectory on /pkm_feedforward/joint_trajectory and publishes Y theta-hat on
<feedforward_controller>/commands:
  ros2 launch contact_dynamics pkm_identification.launch.py feedforward:=true \
      feedforward_controller:=/effort_controller machine:=uf_like
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare('contact_dynamics'), 'config', 'pkm_identifier.yaml'])
    args = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='ROS 2 params file with a pkm_identifier section'),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='Use /clock (bag replay)'),
        DeclareLaunchArgument('joint_states_topic', default_value='joint_states',
                              description='JointState input: strut lengths, velocities, actuator forces'),
        DeclareLaunchArgument('namespace', default_value='', description='Node namespace'),
        DeclareLaunchArgument('log_level', default_value='info', description='Logger level'),
        DeclareLaunchArgument('feedforward', default_value='false',
                              description='Start pkm_feedforward beside the identifier (doc/bridges.md)'),
        DeclareLaunchArgument('feedforward_controller', default_value='effort_controller',
                              description='Forward-command controller: forces on <name>/commands'),
        DeclareLaunchArgument('machine', default_value='uf_like',
                              description="pkm_feedforward's machine (the identifier's: params_file)"),
    ]
    node = Node(
        package='contact_dynamics',
        executable='pkm_identifier',
        name='pkm_identifier',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=[LaunchConfiguration('params_file'), {'use_sim_time': LaunchConfiguration('use_sim_time')}],
        remappings=[('joint_states', LaunchConfiguration('joint_states_topic'))],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    feedforward = Node(
        package='contact_dynamics',
        executable='pkm_feedforward',
        name='pkm_feedforward',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        condition=IfCondition(LaunchConfiguration('feedforward')),
        parameters=[{'use_sim_time': LaunchConfiguration('use_sim_time'),
                     'machine': LaunchConfiguration('machine'),
                     'command_topic': [LaunchConfiguration('feedforward_controller'), '/commands']}],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    return LaunchDescription(args + [node, feedforward])
