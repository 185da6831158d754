"""pip/setuptools build of the contact_dynamics Python packages and console scripts.

The ROS package (messages, ament index, share/ and lib/ layout) is built by CMakeLists.txt; see
tools/bootstrap.sh for how both are combined in the project's venv.
"""
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = 'contact_dynamics'
HERE = Path(__file__).resolve().parent


def plugin_entry_points() -> list[str]:
    """resource/contact_dynamics_plugins ("name = module" lines) as entry points of contact_dynamics.plugins.

    The same file becomes the ament index resource on a colcon install (CMakeLists.txt), so both install
    paths register the same plug-ins (contact_dynamics_common/registry.py reads either).
    """
    lines = (HERE / 'resource' / 'contact_dynamics_plugins').read_text().splitlines()
    return [line.split('#', 1)[0].strip() for line in lines if line.split('#', 1)[0].strip()]


setup(
    name='contact-dynamics-python',  # not 'contact_dynamics': that dist name belongs to the generated msgs
    version='0.1.0',
    packages=find_packages(include=['contact_dynamics_common*', 'contact_estimation*',
                                    'pkm_identification*', 'rover_contact*']),
    python_requires='>=3.10',
    install_requires=['numpy', 'scipy', 'PyYAML', 'mcap', 'mcap-ros2-support', 'matplotlib', 'tqdm', 'rosbags',
                      'dask', 'distributed', 'pin', 'transforms3d', 'python-fcl', 'trimesh', 'threadpoolctl'],
    extras_require={'test': ['pytest', 'hypothesis']},
    zip_safe=True,
    maintainer='contact_dynamics maintainers',
    maintainer_email='contact-dynamics@example.com',
    description='Online identification of contact dynamics for robot controllers (ROS 2).',
    license='Apache-2.0',
    entry_points={
        'contact_dynamics.plugins': plugin_entry_points(),
        'console_scripts': [
            'contact-dynamics = contact_dynamics_common.cli:main',
            'contact_estimator = contact_estimation.single_point.node:main',
            'multipoint_contact_estimator = contact_estimation.multipoint.node:main',
            'impedance_profiler = contact_estimation.impedance.node:main',
            'impedance_tuner = contact_estimation.tuner.node:main',
            'pkm_identifier = pkm_identification.node:main',
            'pkm_feedforward = pkm_identification.feedforward.node:main',
            'impact_indicator = rover_contact.impact.node:main',
            'posture_evaluator = rover_contact.posture.node:main',
        ],
    },
)
