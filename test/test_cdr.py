"""cdr.encoder (compiled CDR serializer used by BagWriter) == mcap_ros2's generic serializer, byte for byte,
on the message types the packages write, with random content; messages it does not take go to the generic
serializer (same bytes, same errors)."""
import string

import numpy as np
import pytest
from mcap_ros2._dynamic import serialize_dynamic

from contact_dynamics_common.messages import cdr, definitions as msgdefs

TYPES = ['contact_dynamics/msg/ContactEstimate', 'contact_dynamics/msg/ParameterEstimate',
         'geometry_msgs/msg/WrenchStamped', 'sensor_msgs/msg/JointState', 'geometry_msgs/msg/PoseStamped',
         'nav_msgs/msg/Odometry', 'diagnostic_msgs/msg/DiagnosticArray', 'std_msgs/msg/Empty']


def random_value(types, type_key, rng):
    """A random dict for a message type (random sequence lengths, unicode strings, extreme numbers)."""
    out = {}
    for f in types[type_key]:
        n = (f.size if f.size is not None else int(rng.integers(0, 4))) if f.is_array else None
        if f.type in types:
            one = lambda: random_value(types, f.type, rng)          # noqa: E731
        else:
            one = lambda: random_primitive(f.type, rng)             # noqa: E731
        out[f.name] = [one() for _ in range(n)] if f.is_array else one()
    return out


def random_primitive(type_name, rng):
    if type_name == 'string':
        letters = list(string.ascii_letters + 'é→ ')
        return ''.join(rng.choice(letters) for _ in range(int(rng.integers(0, 9))))
    if type_name == 'bool':
        return bool(rng.integers(0, 2))
    if type_name in ('float32', 'float64'):
        return float(rng.choice([0.0, -1.5, 1e300, np.inf, np.nan, rng.normal()])) if type_name == 'float64' \
            else float(np.float32(rng.normal()))
    bits = int(''.join(c for c in type_name if c.isdigit()) or 8)
    unsigned = type_name.startswith(('uint', 'byte', 'char'))
    lo, hi = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    return int(rng.choice([lo, hi, 0, 1]))


@pytest.mark.parametrize('type_name', TYPES)
def test_same_bytes_as_mcap_ros2(type_name):
    definition = msgdefs.msgdef(type_name)
    types = msgdefs.parse_definition(type_name, definition)
    root = '/'.join(msgdefs.split_type_name(type_name))
    fast = cdr.compile_encoder(type_name, definition)
    generic = serialize_dynamic(type_name, definition)[type_name]
    rng = np.random.default_rng(len(type_name))
    for _ in range(200):
        msg = random_value(types, root, rng)
        assert fast(msg) == generic(msg), msg


def test_messages_it_does_not_take_go_to_the_generic_serializer():
    t = 'sensor_msgs/msg/JointState'
    encode, generic = cdr.encoder(t), serialize_dynamic(t, msgdefs.msgdef(t))[t]
    base = {'header': {'stamp': {'sec': 1, 'nanosec': 2}, 'frame_id': 'f'}, 'name': ['a'], 'position': [1.0],
            'velocity': [], 'effort': []}
    odd = [dict(base, position=(1.0,)), dict(base, name=['a', None]), {'name': ['a']},
           dict(base, header={'stamp': {'sec': 1.0, 'nanosec': 2}, 'frame_id': 7}), dict(base, effort=None)]
    for msg in odd:
        assert encode(msg) == generic(msg)
    with pytest.raises(Exception) as fast_error:
        encode(dict(base, position=np.zeros(2)))
    with pytest.raises(Exception) as generic_error:
        generic(dict(base, position=np.zeros(2)))
    assert type(fast_error.value) is type(generic_error.value)
