"""doc/rover_api.md: its Python example runs as written, and its measured wheel-contact figures are what the test
rover gives (so the page cannot drift from the code)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / 'doc' / 'rover_api.md'


def test_python_example_runs(monkeypatch, capsys):
    blocks = re.findall(r'^```python\n(.*?)^```', PAGE.read_text(), re.S | re.M)
    assert blocks
    monkeypatch.chdir(ROOT)
    for code in blocks:
        exec(compile(code, str(PAGE), 'exec'), {})
    out = capsys.readouterr().out
    assert 'T_c free' in out and 'best ' in out


def test_documented_wheel_contact_figures():
    import sys
    import numpy as np
    sys.path.insert(0, str(ROOT / 'test'))
    import test_rover_wheel_contact as W
    from rover_contact.impact.indicator import evaluate
    text = PAGE.read_text()
    domed, disk = W._model('domed'), W._model('disk')
    n = W.n_in_ros(np.deg2rad(60.0))
    for case in ('steered', 'rolled', 'steered_and_rolled'):
        hand = W.Hand(*W.CASES[case])
        qd = domed.rolling_velocity(hand.q, 0.2, heading=0.0)
        shift = np.linalg.norm(domed.wheel_points(hand.q, ['front_left'], n)[0]
                               - disk.wheel_points(hand.q, ['front_left'], n)[0])
        ratio = (evaluate(domed, hand.q, qd, np.deg2rad(60), ['front_left'], 'free', heading=0.0, project=False).free.t_c
                 / evaluate(disk, hand.q, qd, np.deg2rad(60), ['front_left'], 'free', heading=0.0,
                            project=False).free.t_c)
        assert f'{shift * 1e3:.1f} mm' in text and f'{ratio:.2f}' in text, (case, shift, ratio)
