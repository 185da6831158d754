"""pip/setuptools build of the contact_dynamics Python packages and console scripts.

The ROS package (messages, ament index, share/ and lib/ layout) is built by CMakeLists.txt; see
tools/bootstrap.sh for how both are combined in the project's venv.
"""
from setuptools import find_packages, setup

PACKAGE = 'contact_dynamics'

setup(
    name='contact-dynamics-python',  # not 'contact_dynamics': that dist name belongs to the generated msgs
    version='0.1.0',
    packages=find_packages(include=['contact_dynamics_common*', 'contact_estimation*',
                                    'pkm_identification*', 'rover_contact*']),
    python_requires='>=3.10',
    install_requires=['numpy', 'scipy', 'PyYAML', 'mcap', 'mcap-ros2-support', 'matplotlib', 'tqdm'],
    extras_require={'test': ['pytest', 'hypothesis']},
    zip_safe=True,
    maintainer='contact_dynamics maintainers',
    maintainer_email='contact-dynamics@example.com',
    description='Online identification of contact dynamics for robot controllers (ROS 2).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'contact-dynamics = contact_dynamics_common.cli:main',
            'contact_estimator = contact_estimation.node:main',
        ],
    },
)
