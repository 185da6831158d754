"""Parameter specs: validation wording, params-file loading, and the documented config staying in sync."""
import importlib.util
from pathlib import Path

import pytest
import yaml

from contact_dynamics_common.ros.params import ConfigError, ParamSpec, flatten, load_params_file, validate_all
from contact_estimation.single_point.config import PARAMS

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_valid_and_every_parameter_is_described():
    values = validate_all(PARAMS, {})
    assert set(values) == {s.name for s in PARAMS}
    assert all(len(s.description) > 15 for s in PARAMS)


@pytest.mark.parametrize('name, value, words', [
    ('rls.forgetting_factor', -0.5, "'rls.forgetting_factor' = -0.5 is outside its range (0, 1]"),
    ('rls.forgetting_factor', 0.0, 'outside its range (0, 1]'),
    ('rls.forgetting_factor', float('nan'), 'must be finite'),
    ('publish_rate', 'fast', "'publish_rate' expects a float, got 'fast'"),
    ('algorithms', ['rls', 'rls'], 'names an algorithm twice'),
    ('algorithms', [], 'name at least one algorithm'),
    ('model', 'hunt_crossley', "'model' = 'hunt_crossley' is not one of"),
    ('contact_normal', [0.0, 1.0], 'must have 3 elements'),
    ('force_direction', [0.0, 0.0, 2.0], 'must be a unit vector'),
    ('joint_sign', 0.5, 'must be +1 or -1'),
    ('joint_name', '  ', 'must name a joint'),
    ('input_queue_size', 2.5, "expects a int"),
])
def test_wrong_values_are_refused_with_the_reason(name, value, words):
    with pytest.raises(ConfigError) as err:
        validate_all(PARAMS, {name: value})
    assert words in str(err.value)


def test_unknown_parameter_is_refused():
    with pytest.raises(ConfigError, match="unknown parameter.*forgeting"):
        validate_all(PARAMS, {'forgeting': 0.9})


def test_int_accepted_for_float_but_not_bool():
    spec = ParamSpec('x', 1.0, 'a float', low=0.0)
    assert spec.validate(3) == 3.0 and isinstance(spec.validate(3), float)
    with pytest.raises(ConfigError):
        spec.validate(True)


def test_params_file_merges_wildcard_and_node_sections(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text(yaml.safe_dump({
        '/**': {'ros__parameters': {'publish_rate': 5.0}},
        '/robot/contact_estimator': {'ros__parameters': {'rls': {'forgetting_factor': 0.99}, 'publish_rate': 50.0}},
        'other_node': {'ros__parameters': {'publish_rate': 1.0}},
    }))
    assert load_params_file(str(f), 'contact_estimator') == {'publish_rate': 50.0, 'rls.forgetting_factor': 0.99}
    assert flatten({'a': {'b': {'c': 1}}, 'd': 2}) == {'a.b.c': 1, 'd': 2}


def test_params_file_without_ros_parameters_is_an_error(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text('contact_estimator:\n  publish_rate: 5.0\n')
    with pytest.raises(ConfigError, match="no 'ros__parameters'"):
        load_params_file(str(f), 'contact_estimator')


def test_documented_config_is_generated_from_the_specs():
    spec = importlib.util.spec_from_file_location('gen_config', ROOT / 'tools' / 'gen_config.py')
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    committed = (ROOT / 'config' / 'contact_estimator.yaml').read_text()
    assert committed == gen.render('contact_estimator'), 'run `make config` to regenerate config/*.yaml'
    values = load_params_file(str(ROOT / 'config' / 'contact_estimator.yaml'), 'contact_estimator')
    assert validate_all(PARAMS, values)['joint_name'] == 'slider'
