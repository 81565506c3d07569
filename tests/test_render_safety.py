"""Render under hostile use: nothing lost, nothing half-written.

A kernel file belongs to the spec its header names; `-o` must name a folder the package can own;
a missing `--tuning` folder is an error; Ctrl-C at any moment leaves the old package or the new
one, importable, with one message; a full disk or a read-only folder changes nothing. Every case
runs in a small project of its own (a pyproject.toml marks its root), in a few seconds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, run_cli

KERNEL = '[[variant]]\nname = "{name}"\narch = "{arch}"\ntile = [128, {n}, 64]\n'


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (bytecode left out), by relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def rendered_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with two spec files in specs/ rendered into generated/: "a" (kernels a1, a2)
    and "b" (kernel b1)."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    specs = root / "specs"
    specs.mkdir()
    (specs / "a.toml").write_text(
        KERNEL.format(name="a1", arch="sm_90a", n=128)
        + KERNEL.format(name="a2", arch="sm_90a", n=64)
    )
    (specs / "b.toml").write_text(KERNEL.format(name="b1", arch="sm_100a", n=128))
    proc = run_cli("render", "specs", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture()
def project(rendered_project: Path, tmp_path: Path) -> Path:
    """A fresh copy of rendered_project."""
    shutil.copytree(rendered_project, tmp_path / "p")
    return tmp_path / "p"


def refused(proc: subprocess.CompletedProcess[str], before: dict, folder: Path) -> list[str]:
    """The error lines of a run that must have changed nothing."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(folder) == before, "a refused render changed files"
    return proc.stderr.splitlines()


# ---- ownership: a kernel file belongs to the spec in its header ---------------------------------


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_a_spec_not_owning_a_kernel_name_cannot_overwrite_it_or_add_a_second(
    project: Path, arch: str
) -> None:
    """Rendering only a new spec file whose variant reuses a1's name: refused, naming both (on
    sm_90a it would overwrite a1's file; on sm_100a add a second kernel a1 in sm100/)."""
    (project / "more").mkdir()
    (project / "more" / "new.toml").write_text(KERNEL.format(name="a1", arch=arch, n=64))
    before = snapshot(project)
    for args in (["more/new.toml"], ["more/new.toml", "--check"], ["more", "specs/b.toml"]):
        lines = refused(run_cli("render", *args, cwd=project), before, project)
        assert lines[0] == (
            "more/new.toml [a1]: name 'a1' belongs to specs/a.toml [a1] "
            "(generated/cutegemm/sm90/a1.py); give this variant another name"
        ), lines
        assert lines[1:] == ([] if "--check" in args else ["nothing written to generated/"])


def test_a_variant_moved_to_another_file_rendered_with_its_old_file_takes_its_name(
    project: Path,
) -> None:
    """Both files read: a2 leaves a.toml for b.toml (another arch): its old file goes."""
    (project / "specs" / "a.toml").write_text(KERNEL.format(name="a1", arch="sm_90a", n=128))
    (project / "specs" / "b.toml").write_text(
        KERNEL.format(name="b1", arch="sm_100a", n=128)
        + KERNEL.format(name="a2", arch="sm_100a", n=64)
    )
    proc = run_cli("render", "specs/a.toml", "specs/b.toml", cwd=project)
    assert proc.returncode == 0, proc.stderr
    kernels = sorted(
        p.relative_to(project / "generated").as_posix()
        for p in project.glob("generated/cutegemm/sm*/[ab]*.py")
    )
    assert kernels == ["cutegemm/sm100/a2.py", "cutegemm/sm100/b1.py", "cutegemm/sm90/a1.py"]
    assert "# spec: specs/b.toml\n" in (project / "generated/cutegemm/sm100/a2.py").read_text()


def test_a_kernel_whose_spec_file_is_gone_is_not_taken_by_another(project: Path) -> None:
    (project / "specs" / "b.toml").unlink()
    (project / "more").mkdir()
    (project / "more" / "new.toml").write_text(KERNEL.format(name="b1", arch="sm_100a", n=64))
    before = snapshot(project)
    lines = refused(run_cli("render", "more/new.toml", cwd=project), before, project)
    assert "belongs to specs/b.toml [b1]" in lines[0] and "that spec file is gone" in lines[0]


def test_a_file_codegen_did_not_write_is_never_overwritten(project: Path) -> None:
    mine = project / "generated" / "cutegemm" / "sm90" / "a2.py"
    mine.write_text("# my own notes\n")
    (project / "generated" / "README.md").write_text("my readme\n")
    before = snapshot(project)
    lines = refused(run_cli("render", "specs", cwd=project), before, project)
    why = "exists and was not written by codegen; render does not overwrite it (move it, or "
    assert lines == [
        f"generated/README.md: {why}write the package elsewhere with -o)",
        f"generated/cutegemm/sm90/a2.py: {why}write the package elsewhere with -o)",
        "nothing written to generated/",
    ]


# ---- -o must name a folder the package can own ---------------------------------------------------


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("generated/cutegemm/sm90", "inside the package rendered in generated/"),
        ("generated/cutegemm", "inside the package rendered in generated/"),
        ("specs", "inside the spec folder specs/"),
        ("specs/deeper", "inside the spec folder specs/"),
        (".", "holds a pyproject.toml codegen did not write"),
        ("specs/a.toml", "not a folder"),
    ],
)
def test_an_output_folder_the_package_cannot_own_is_refused_first(
    project: Path, out: str, why: str
) -> None:
    before = snapshot(project)
    (line,) = refused(run_cli("render", "specs", "-o", out, cwd=project), before, project)
    assert line.startswith(f"-o {out}: {why}"), line


def test_a_render_from_elsewhere_writes_into_the_project_not_the_working_folder(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No -o: the package goes to ROOT/generated, wherever the command runs (also from specs/)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    for cwd, arg in ((elsewhere, project / "specs"), (project / "specs", Path("."))):
        proc = run_cli("render", arg, "--check", cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        assert list(cwd.iterdir()) == ([] if cwd == elsewhere else list(cwd.iterdir()))
        assert not (cwd / "generated").exists()


def test_a_missing_tuning_folder_is_an_error(project: Path) -> None:
    before = snapshot(project)
    (line,) = refused(
        run_cli("render", "specs", "--tuning", "specs/tunnig", cwd=project), before, project
    )
    assert (
        line
        == "--tuning specs/tunnig: no such folder (it names the folder of tuning tables, *.toml)"
    )


# ---- failures while writing: nothing changed ----------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_output_folder_is_one_line_and_changes_nothing(project: Path) -> None:
    (project / "specs" / "a.toml").write_text(KERNEL.format(name="a3", arch="sm_90a", n=128))
    folders = [project / "generated", *(project / "generated").rglob("sm*")]
    before = snapshot(project)
    for f in folders:
        f.chmod(0o555)
    try:
        lines = refused(run_cli("render", "specs", cwd=project), before, project)
    finally:
        for f in folders:
            f.chmod(0o755)
    assert re.fullmatch(
        r"generated/\S+: cannot write it \(Permission denied\); nothing in generated/ changed",
        lines[0],
    )


# Runs the CLI with a hook: at the N-th call of WHAT (stage: writing a staged file; replace:
# putting one in place) it sends itself SIGINT, as a terminal's Ctrl-C would; "full": the N-th
# staged file finds the disk full.
INTERRUPT_AT = """
import os, signal, sys
import codegen.files, codegen.render
what, n = sys.argv[1], int(sys.argv[2])
calls = [0]
def hook(real):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)
    return wrapped
if what == "stage":
    codegen.render.stage = hook(codegen.files.stage)
elif what == "replace":
    os.replace = hook(os.replace)
elif what == "full":
    def full(path, text, real=codegen.files.stage):
        calls[0] += 1
        if calls[0] == n:
            raise OSError(28, "No space left on device")
        return real(path, text)
    codegen.render.stage = full
from codegen.cli import main
sys.argv = ["codegen", *sys.argv[3:]]
main()
"""


def registry_problems(out: Path, staged_ok: bool = False) -> list[str]:
    """What keeps the package in `out` from importing as a whole: a module its registry lists
    that is not there; unless `staged_ok` (in the middle of putting the files in place, the
    MANIFEST last), a MANIFEST line naming a missing file or a staged file left over."""
    text = (out / "cutegemm" / "__init__.py").read_text()
    modules = re.findall(r'module="([\w.]+)"', text)
    assert modules, "the registry lists no kernel"
    problems = [m for m in modules if not (out / (m.replace(".", "/") + ".py")).is_file()]
    if staged_ok:
        return problems
    manifest = (out / "MANIFEST").read_text().splitlines()[1:]
    problems += [line for line in manifest if not (out / line.split()[0]).is_file()]
    return problems + [p.name for p in out.rglob("*.tmp")]


@pytest.fixture(scope="module")
def rendered_two(rendered_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rendered_project with specs/ changed (a1 renamed a9, a2 changed, a kernel added) and the
    new package rendered into new/ (generated/ holds the old one)."""
    root = tmp_path_factory.mktemp("two") / "p"
    shutil.copytree(rendered_project, root)
    (root / "specs" / "a.toml").write_text(
        KERNEL.format(name="a9", arch="sm_90a", n=128)
        + KERNEL.format(name="a2", arch="sm_90a", n=192)
        + KERNEL.format(name="a3", arch="sm_100a", n=64)
    )
    proc = run_cli("render", "specs", "-o", "new", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture()
def two_packages(rendered_two: Path, tmp_path: Path) -> tuple[Path, dict, dict]:
    """A copy of rendered_two, the old package's files and the new one's (render caches left
    out)."""
    project = tmp_path / "p"
    shutil.copytree(rendered_two, project)
    old, new = snapshot(project / "generated"), snapshot(project / "new")
    shutil.rmtree(project / "new")
    old.pop(".render-cache.json", None)
    new.pop(".render-cache.json", None)
    return project, old, new


@pytest.mark.parametrize(
    ("what", "n"), [("stage", 1), ("stage", 3), ("stage", 6), ("replace", 1), ("replace", 6)]
)
def test_ctrl_c_while_writing_leaves_the_old_package_or_the_new_one(
    two_packages: tuple[Path, dict, dict], what: str, n: int
) -> None:
    """Ctrl-C while the 6 changed files are staged (3 kernels, 3 package files): nothing
    changed, one line. While they are put in place: that finishes first, then one line."""
    project, old, new = two_packages
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT, what, str(n), "render", "specs"],
        cwd=project, env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 130, proc.stderr
    got = snapshot(project / "generated")
    got.pop(".render-cache.json", None)
    if what == "stage":
        assert proc.stderr == "interrupted: nothing written to generated/\n"
        assert got == old
    else:
        assert (
            proc.stderr == "interrupted: generated/ already held the new package; it is complete\n"
        )
        assert got == new
    assert registry_problems(project / "generated") == []


def test_the_package_imports_after_every_step_of_putting_it_in_place(
    two_packages: tuple[Path, dict, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry lists only modules that exist after each rename and each orphan removal
    (what a crash at that instant would leave); at the end the MANIFEST is right too."""
    from codegen import loader, render

    project, _, _ = two_packages
    monkeypatch.chdir(project)
    out = project / "generated"
    states: list[list[str]] = []
    real_replace, real_unlink = os.replace, Path.unlink

    def replace(src, dst):
        real_replace(src, dst)
        states.append(registry_problems(out, staged_ok=True))

    def unlink(self, missing_ok=False):
        real_unlink(self, missing_ok=missing_ok)
        if self.suffix == ".py":
            states.append(registry_problems(out, staged_ok=True))

    specs = [loader.relative_to_root(s, project) for s in loader.load([Path("specs")])]
    rendered = render.render_all(specs)
    monkeypatch.setattr(render.os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    render.sync(rendered, out, check=False, sources={"specs/a.toml", "specs/b.toml"}, root=project)
    monkeypatch.undo()
    assert len(states) >= 5
    assert [s for s in states if s] == []
    assert registry_problems(out) == []


def test_a_full_disk_while_writing_is_one_line_and_changes_nothing(
    two_packages: tuple[Path, dict, dict],
) -> None:
    project, old, _ = two_packages
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT, "full", "4", "render", "specs"],
        cwd=project, env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    line, last = proc.stderr.splitlines()
    assert re.fullmatch(
        r"generated/\S+: cannot write it \(No space left on device\); nothing in generated/ changed",
        line,
    ), line
    assert last == "nothing written to generated/"
    got = snapshot(project / "generated")
    got.pop(".render-cache.json", None)
    assert got == old and registry_problems(project / "generated") == []


# ---- pip install ./generated ---------------------------------------------------------------------


def test_a_wheel_built_after_a_kernel_was_renamed_ships_only_the_new_one(project: Path) -> None:
    """setuptools keeps generated/build/lib/ between builds; the package's backend empties it."""

    def wheel_files(folder: str) -> set[str]:
        import zipfile

        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "-w", folder, "./generated"],
            cwd=project, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert build.returncode == 0, build.stderr[-2000:]
        (wheel,) = (project / folder).glob("cutegemm-*.whl")
        return {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("cutegemm/sm")}

    assert "cutegemm/sm90/a1.py" in wheel_files("w1")
    spec = project / "specs" / "a.toml"
    spec.write_text(spec.read_text().replace('name = "a1"', 'name = "a7"'))
    assert run_cli("render", "specs", cwd=project).returncode == 0
    got = wheel_files("w2")
    assert "cutegemm/sm90/a7.py" in got and "cutegemm/sm90/a1.py" not in got
