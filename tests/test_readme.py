"""The README's deployment example (export/load, symbolic shapes) runs as written."""
import os
import re
import runpy

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def _section_code(title: str) -> str:
    text = open(README, encoding="utf-8").read()
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, f"the README's section {title!r} has no python block"
    return "\n".join(blocks)


def test_readme_deployment_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the example writes kernels.so into the working folder
    script = tmp_path / "readme_example.py"  # a file, so TVMScript can read the functions' source
    script.write_text(_section_code("Deploying: export, load, symbolic shapes"))
    runpy.run_path(str(script), run_name="__main__")
    assert (tmp_path / "kernels.so").exists()
