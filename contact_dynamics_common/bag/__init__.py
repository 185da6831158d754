"""rosbag2 bags read and written: one reader facade over three storages, one writer.

``BagReader`` (``reader``) reads a bag directory or a bare file of any of the storages, through one storage
reader per file:

- ``mcap``: MCAP files (``McapFile``), the default storage; its chunks read and checked by ``mcap_chunks``
  (the intact records of a chunk that fails its CRC kept by ``mcap_salvage``), a missing or unreadable
  summary rebuilt by ``mcap_scan``, the format's framing in ``mcap_format``;
- ``sqlite``: rosbag2 sqlite3 files (``.db3``; a damaged one read page by page by ``sqlite_pages``),
  ``ros1``: ROS 1 bags (``.bag``), both on ``storage``;
- ``records``: what every storage hands to the reader (``Piece``, ``Collected``) and the damage types
  (``BagError``, ``Damage``, ``BagRecovery``) -- it imports none of the storages;
- ``columns`` / ``layout`` / ``decode``: numpy column dicts for offline replay (numpy views of fixed CDR
  layouts, else messages decoded one by one);
- ``metadata``: metadata.yaml read, rebuilt and written; QoS profiles; ``custom_data`` encoding.

``BagWriter`` (``writer``) writes rosbag2 MCAP bag directories as ``ros2 bag record -s mcap`` does.

The names below are the package's interface (``from contact_dynamics_common.bag import BagReader``).
"""
from .metadata import QOS_PRESETS, qos_profile
from .reader import BagReader
from .records import BagError, BagRecovery, Damage
from .writer import BagWriter

__all__ = ['BagError', 'BagReader', 'BagRecovery', 'BagWriter', 'Damage', 'QOS_PRESETS', 'qos_profile']
