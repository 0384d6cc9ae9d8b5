"""The README's console examples, run verbatim in an empty folder, print what the README shows.

A documentation check: the numbers themselves are checked against independent computations
elsewhere (test_occupancy.py, test_cli_audit.py, test_design_cli.py).  In an expected block,
a line that is just ``...`` stands for any number of lines, and ``...`` inside a line for any
text (the README uses it for the install location); blank lines are not compared.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The README and the reference pages it links to, whose console blocks run here (docs/kstate.md and
#: docs/occupancy.md have tests of their own).
PAGES = [README] + [ROOT / "docs" / f"{name}.md" for name in ("commands", "releases", "paper", "benchmarks")]


def _console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Every ```console block as a list of (command, expected output lines)."""
    blocks = re.findall(r"```console\n(.*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        cmds: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                cmds.append((line[2:], []))
            elif cmds and line.strip():
                cmds[-1][1].append(line)
        out.append(cmds)
    return out


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Line-by-line match; a line '...' matches any run of lines, '...' inside a line any text."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.rstrip().split("..."))
    return re.fullmatch(pattern, actual[0].rstrip()) is not None and _matches(rest, actual[1:])


def _run_block(cmds: list[tuple[str, list[str]]], cwd: Path) -> list[tuple[str, int, list[str], list[str]]]:
    """Run the commands in one bash session (variables carry over); each command's status and output."""
    script = "".join(f"echo '@@@ {i}'\n{cmd}\necho \"@@@ status $?\"\n" for i, (cmd, _) in enumerate(cmds))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               COLUMNS="200")
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.stderr == "", proc.stderr
    results = []
    chunks = re.split(r"^@@@ \d+\n", proc.stdout, flags=re.M)[1:]
    for (cmd, expected), chunk in zip(cmds, chunks):
        body, status = chunk.rsplit("@@@ status ", 1)
        results.append((cmd, int(status), expected, [line for line in body.splitlines() if line.strip()]))
    return results


def _blocks_with(needle: str) -> list[list[tuple[str, list[str]]]]:
    return [b for page in PAGES for b in _console_blocks(page.read_text()) if any(needle in c for c, _ in b)]


def test_every_console_block_of_the_pages_is_run():
    """No console block of the README or its reference pages escapes the check below."""
    for page in PAGES:
        for block in _console_blocks(page.read_text()):
            assert any(n in c for n in NEEDLES for c, _ in block), (page.name, block[0][0])


NEEDLES = ["redactopt datasets path occupancy", "redactopt design --n 10 --eps 1",
           "redactopt audit --method 3r --n 10 --eps 0.5", "redactopt design --transition",
           "--by sid --private-column", "--robust 0.95", "redactopt design --class scan", "--private 9-11"]


#: Blocks whose releases take minutes on two cores: run with -m slow (their numbers are checked independently by
#: tests/test_robust_release.py, whose fixture runs a robust release of the same data).
SLOW_NEEDLES = {"--robust 0.95"}


@pytest.mark.parametrize("needle", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_NEEDLES else n
                                    for n in NEEDLES])
def test_readme_console_blocks_run_verbatim(tmp_path, needle):
    blocks = _blocks_with(needle)
    assert blocks, f"no console block runs {needle!r}"
    if needle not in SLOW_NEEDLES:  # a block another needle finds too runs under that needle alone
        blocks = [b for b in blocks if not any(s in c for s in SLOW_NEEDLES for c, _ in b)]
    for i, block in enumerate(blocks):
        if any("--attack" in c for c, _ in block):
            continue  # the attack example (seconds of sampling) is checked in test_attack.py
        folder = tmp_path / f"block{i}"  # an empty folder for each block, as the pages say
        folder.mkdir()
        for cmd, status, expected, actual in _run_block(block, folder):
            assert status == (1 if any("FAIL" in line for line in expected) else 0), cmd
            assert _matches(expected, actual), f"{cmd}\n--- page\n" + "\n".join(expected) + \
                "\n--- printed\n" + "\n".join(actual)
        names = sorted(p.name for p in folder.iterdir())
        assert names in ([], ["released.csv", "report.json"], ["robust.csv", "robust.json"],
                         ["both.csv", "both.json", "light.csv"], ["many.csv", "out.csv", "rep.json",
                                                                 "rep.sequences.parquet"]), names
