"""The README's Python example runs and does what it says."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_example_delivers_the_message(tmp_path):
    text = README.read_text()
    section = text.split("## Use from Python and Amaranth", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    match = re.fullmatch(r"leaf 5 received 0xBEEF after (\d+) cycles\n", out.stdout)
    assert match, out.stdout + out.stderr
    # 0 -> 5 turns at level 2: route words and data at two cycles per hop, so tens of cycles.
    assert 10 <= int(match[1]) <= 100
