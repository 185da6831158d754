"""Launch the contact estimator with its documented parameters.

  ros2 launch contact_dynamics contact_estimation.launch.py
  ros2 launch contact_dynamics contact_estimation.launch.py params_file:=/my/robot.yaml \
      wrench_topic:=/ft_sensor/wrench joint_states_topic:=/joint_states use_sim_time:=true

Remap the inputs with the *_topic arguments; the estimates appear on /contact_estimator/estimate and
/contact_estimator/<algorithm>/estimate, health on /diagnostics.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    default_params = PathJoinSubstitution([FindPackageShare('contact_dynamics'), 'config', 'contact_estimator.yaml'])
    args = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='ROS 2 params file with a contact_estimator section'),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='Use /clock (bag replay)'),
        DeclareLaunchArgument('wrench_topic', default_value='wrench', description='WrenchStamped input'),
        DeclareLaunchArgument('joint_states_topic', default_value='joint_states', description='JointState input'),
        DeclareLaunchArgument('pose_topic', default_value='pose', description='PoseStamped input'),
        DeclareLaunchArgument('namespace', default_value='', description='Node namespace'),
        DeclareLaunchArgument('log_level', default_value='info', description='Logger level'),
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
    return LaunchDescription(args + [node])
