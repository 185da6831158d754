"""The documentation holds together: README.md is a front door, doc/ the reference, every link resolves and
every example of the README's package section runs.

- every relative link ``[text](target)`` of README.md and doc/**/*.md names an existing file or directory
  (relative to the page), and a ``#anchor`` names a heading of the target page (GitHub's slug rules);
- README.md has at most 200 lines; doc/ has one page per registered node (offline nodes and the node
  executables of setup.py) and doc/cli.md;
- the ``bash`` and ``python`` blocks under "## The packages" in README.md run as written (``/tmp/`` paths
  moved into a temporary directory; ``contact-dynamics`` as ``python -m contact_dynamics_common.cli``) and
  exit 0.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'doc').rglob('*.md'))]
LINK = re.compile(r'(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)')
FENCE = re.compile(r'^```(\w*)\n(.*?)^```', re.S | re.M)


def _strip_code(text: str) -> str:
    """The page without fenced blocks and inline code (a link-like text in code is not a link)."""
    text = FENCE.sub('', text)
    return re.sub(r'`[^`\n]*`', '', text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to dashes."""
    text = re.sub(r'[`*]|<[^>]+>', '', heading.strip().lower())
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(page: Path) -> set[str]:
    out, seen = set(), {}
    for line in FENCE.sub('', page.read_text()).splitlines():
        m = re.match(r'#{1,6}\s+(.*)', line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
    return out


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in LINK.findall(_strip_code(page.read_text())):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):        # http:, https:, mailto:
            continue
        path, _, anchor = target.partition('#')
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f'{page.relative_to(ROOT)}: {target} (no such file)')
        elif anchor and (dest.suffix != '.md' or anchor not in anchors(dest)):
            bad.append(f'{page.relative_to(ROOT)}: {target} (no such heading)')
    return bad


def test_every_relative_link_resolves():
    bad = [b for page in PAGES for b in broken_links(page)]
    assert not bad, 'broken links:\n' + '\n'.join(bad)


def test_link_checker_sees_broken_links_and_anchors(tmp_path):
    page = tmp_path / 'p.md'
    (tmp_path / 'q.md').write_text('# A `code` heading: here\n')
    page.write_text('[ok](q.md) [ok](q.md#a-code-heading-here) [bad](r.md) [bad](q.md#nope) '
                    '`[not a link](zzz.md)` [web](https://example.com/x)\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert [b.split(': ', 1)[1] for b in broken_links(page)] == ['r.md (no such file)',
                                                                    'q.md#nope (no such heading)']
    finally:
        ROOT = saved


def test_readme_is_a_front_door():
    lines = (ROOT / 'README.md').read_text().splitlines()
    assert len(lines) <= 200, f'README.md has {len(lines)} lines'
    text = '\n'.join(lines)
    assert '## The two commands' in lines and 'make demo' in text and 'make test' in text


def test_one_page_per_node_and_one_for_the_cli():
    from contact_dynamics_common.registry import registry
    text = (ROOT / 'setup.py').read_text()
    executables = set(re.findall(r"'(\w+) = \w+(?:\.\w+)*\.node:main'", text))
    nodes = set(registry().offline_nodes) | executables
    assert {'contact_estimator', 'impact_indicator', 'posture_evaluator'} <= nodes
    missing = sorted(n for n in nodes if not (ROOT / 'doc' / f'{n}.md').is_file())
    assert not missing, f'no doc/<node>.md for {missing}'
    assert (ROOT / 'doc' / 'cli.md').is_file()
    readme = (ROOT / 'README.md').read_text()
    assert all(f'(doc/{n}.md)' in readme for n in nodes), 'README links every node page'


def readme_examples() -> list[tuple[str, str]]:
    text = (ROOT / 'README.md').read_text()
    section = text.split('## The packages', 1)[1].split('\n## ', 1)[0]
    return [(lang, code) for lang, code in FENCE.findall(section) if lang in ('bash', 'python')]


def test_readme_package_section_has_an_example_per_package():
    assert [lang for lang, _ in readme_examples()] == ['bash', 'bash', 'bash', 'python']


def test_readme_examples_run(tmp_path):
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    cli = [sys.executable, '-m', 'contact_dynamics_common.cli']
    for lang, code in readme_examples():
        code = code.replace('/tmp/', f'{tmp_path}/')
        if lang == 'python':
            proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=300)
            assert proc.returncode == 0, f'{code}\n{proc.stderr}'
            continue
        for line in code.splitlines():
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            argv = shlex.split(line)
            assert argv[0] == 'contact-dynamics', line
            proc = subprocess.run(cli + argv[1:], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, f'{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}'


@pytest.mark.parametrize('heading, anchor', [('## Node `contact_estimator`', 'node-contact_estimator'),
                                             ('### Damaged and older bags', 'damaged-and-older-bags'),
                                             ('## Trust: when (`x/y.py`)', 'trust-when-xypy')])
def test_slug(heading, anchor):
    assert slug(heading.lstrip('#')) == anchor
