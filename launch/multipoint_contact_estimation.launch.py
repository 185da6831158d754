"""Launch the multi-point contact estimator with its documented parameters and geometry.

  ros2 launch contact_dynamics multipoint_contact_estimation.launch.py
  ros2 launch contact_dynamics multipoint_contact_estimation.launch.py params_file:=/my/task.yaml \
      geometry_file:=/my/orbital_unit.yaml wrench_topic:=/ft_sensor/wrench odom_topic:=/payload/odom

Remap the inputs with the *_topic arguments; the estimate appears on /multipoint_contact_estimator/estimate,
health on /diagnostics.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare('contact_dynamics')
    args = [
        DeclareLaunchArgument('params_file',
                              default_value=PathJoinSubstitution([share, 'config', 'multipoint_contact_estimator.yaml']),
                              description='ROS 2 params file with a multipoint_contact_estimator section'),
        DeclareLaunchArgument('geometry_file', default_value='',
                              description='geometry YAML of the payload and the environment (empty: the params '
                                          "file's geometry_file, resolved against the params file's directory)"),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='Use /clock (bag replay)'),
        DeclareLaunchArgument('wrench_topic', default_value='payload/wrench', description='WrenchStamped input'),
        DeclareLaunchArgument('odom_topic', default_value='payload/odom', description='Odometry input'),
        DeclareLaunchArgument('pose_topic', default_value='payload/pose', description='PoseStamped input'),
        DeclareLaunchArgument('namespace', default_value='', description='Node namespace'),
        DeclareLaunchArgument('log_level', default_value='info', description='Logger level'),
    ]

    def node(context):
        overrides = {'use_sim_time': LaunchConfiguration('use_sim_time')}
        if LaunchConfiguration('geometry_file').perform(context):    # only when given: else the params file's
            overrides['geometry_file'] = LaunchConfiguration('geometry_file')
        return [Node(
            package='contact_dynamics',
            executable='multipoint_contact_estimator',
            name='multipoint_contact_estimator',
            namespace=LaunchConfiguration('namespace'),
            output='screen',
            emulate_tty=True,
            parameters=[LaunchConfiguration('params_file'), overrides],
            remappings=[('payload/wrench', LaunchConfiguration('wrench_topic')),
                        ('payload/odom', LaunchConfiguration('odom_topic')),
                        ('payload/pose', LaunchConfiguration('pose_topic'))],
            arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
        )]
    return LaunchDescription(args + [OpaqueFunction(function=node)])
