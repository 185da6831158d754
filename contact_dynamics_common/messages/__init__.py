"""ROS 2 messages without a ROS graph: their definitions, their CDR bytes and their numpy columns.

- ``definitions``: rosbag2's ``ros2msg`` text of an installed type, RIHS01 type hashes, a field parser;
- ``cdr``: fast CDR encoders compiled from a definition (byte-identical to ``mcap_ros2``'s serializer);
- ``convert``: messages <-> plain tuples / numpy column dicts (``COLUMN_SPECS``), shared by live nodes and
  replay; stamps as exact integer nanoseconds.
- ``checks``: structural checks of input messages (what makes one unusable before its values are read).

Imports nothing else of ``contact_dynamics_common``; the bag and ROS layers build on it.
"""
