"""Study: the real torsional-spring recordings (../shared/data/real/sea_*, credited in its README) through
test_trust_single_point_sea.py's own assertions (valid estimates within 3 sigma of the branch stiffness, run-bag
and contact-compare agreeing), with the single-point pipeline's ``derivative_filter`` set to the argument, and the
final rls / kalman / gls estimates per bag and load direction.

    python bench/study_consistent_kernel_sea.py [consistent_kernel | local_fit]      (about 35 s)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / 'test'), str(ROOT)]

import test_trust_single_point_sea as sea  # noqa: E402
from contact_dynamics_common.params import validate_all  # noqa: E402
from contact_estimation.single_point.config import PARAMS  # noqa: E402


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else 'consistent_kernel'
    base = sea.params

    def params(bag, sign):
        return validate_all(PARAMS, dict(base(bag, sign), derivative_filter=mode))
    sea.params = params            # the test function reads its module's params
    passed = failed = 0
    for bag in sea.BAGS:
        for sign in (1, -1):
            try:
                sea.test_sea_valid_estimates_cover_the_branch_and_front_ends_agree(bag, sign)
                passed += 1
            except AssertionError as exc:
                failed += 1
                print('FAIL', bag, sign, str(exc)[:200])
            final, _ = sea.run_bag_final(bag, params(bag, sign))
            cells = []
            for a in ('rls', 'kalman', 'gls'):
                f = final[a]
                cells.append(f"{a} {f['stiffness']:.0f}+-{np.sqrt(f['covariance'][0]):.0f} "
                             + ('valid' if f['valid'] else f['status'][:28]))
            print(f'{bag} {sign:+d} branch {sea.branch_stiffness(bag, sign):.0f} | ' + ' | '.join(cells))
    print(f'{mode}: {passed} cases pass the test assertions, {failed} fail')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
