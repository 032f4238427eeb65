"""The project's docs hold the whole user reference: nothing points at a contract users do not have."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITATION = re.compile("DES" + "IGN|\u00a7[0-9]")  # split so this file does not match itself


def test_no_file_cites_an_outside_contract():
    files = [p for d in ("agent_eval", "docs", "cases", "tests", "bench") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".md", ".js", ".html", ".json") and "__pycache__" not in p.parts]
    files.append(ROOT / "README.md")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if CITATION.search(line)]
    assert hits == []

