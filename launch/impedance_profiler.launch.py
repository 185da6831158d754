"""Launch the impedance profiler with its documented parameters.

  ros2 launch contact_dynamics impedance_profiler.launch.py
  ros2 launch contact_dynamics impedance_profiler.launch.py params_file:=/my/device.yaml \
      joint_states_topic:=/joint_states wrench_topic:=/impedance_head/wrench use_sim_time:=true

The profile appears on /impedance_profiler/profile (contact_dynamics/ImpedanceProfile), health on
/diagnostics.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare('contact_dynamics'), 'config',
                                           'impedance_profiler.yaml'])
    args = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='ROS 2 params file with an impedance_profiler section'),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='Use /clock (bag replay)'),
        DeclareLaunchArgument('joint_states_topic', default_value='joint_states',
                              description='JointState input'),
        DeclareLaunchArgument('wrench_topic', default_value='wrench', description='WrenchStamped input'),
        DeclareLaunchArgument('namespace', default_value='', description='Node namespace'),
        DeclareLaunchArgument('log_level', default_value='info', description='Logger level'),
    ]
    node = Node(
        package='contact_dynamics',
        executable='impedance_profiler',
        name='impedance_profiler',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        emulate_tty=True,
        parameters=[LaunchConfiguration('params_file'),
                    {'use_sim_time': LaunchConfiguration('use_sim_time')}],
        remappings=[('joint_states', LaunchConfiguration('joint_states_topic')),
                    ('wrench', LaunchConfiguration('wrench_topic'))],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )
    return LaunchDescription(args + [node])
