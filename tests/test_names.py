"""Kernel names (README, "Kernel names"): every shipped kernel takes the name derived from its
knobs, two different specs never derive one name, every knob shows in it, and the rename table
of 0.2.0 (templates/package/_renames.py) keeps the old names working for one release."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest
from conftest import GENERATED, SPECS, TEMPLATES, kernel_glob

from codegen import generalize, loader
from codegen.spec import Spec


def _renames():
    spec = importlib.util.spec_from_file_location("renames", TEMPLATES / "package" / "_renames.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHIPPED = loader.load([SPECS])
RENAMES = _renames()


def test_every_shipped_kernel_takes_its_derived_name() -> None:
    named = [
        f"{path.relative_to(SPECS)} [{entry['name']}]"
        for path in loader.spec_files([SPECS])
        for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("variant", [])
        if "name" in entry
    ]
    assert named == [], "shipped specs take their derived names; drop `name`"
    assert all(s.name == s.spec.canonical_name() for s in SHIPPED)


def test_different_shipped_specs_derive_different_names() -> None:
    by_name: dict[str, set[str]] = {}
    for s in SHIPPED:
        by_name.setdefault(s.spec.canonical_name(), set()).add(s.spec.canonical_json())
    assert len(by_name) == len(SHIPPED), "two shipped variants are one kernel: keep one"
    assert sorted(by_name) == sorted(p.stem for p in kernel_glob())


BASE = {"arch": "sm_90a", "dtype": "bf16", "tile": [128, 128, 64], "stages": 4,
        "swizzle": "128B", "consumer_warpgroups": 2}  # fmt: skip
# one knob away from BASE each (legal or not: the name is built before the rules run)
CHANGES = [
    {"arch": "sm_100a", "consumer_warpgroups": None},
    {"dtype": "f16"},
    {"dtype": "e4m3", "tile": [128, 128, 128]},
    {"tile": [128, 256, 64]},
    {"stages": 5},
    {"swizzle": "64B"},
    {"swizzle": "none"},
    {"warp_specialized": False},
    {"mainloop": "light", "warps": 8},
    {"mainloop": "light", "warps": 16},
    {"consumer_warpgroups": 1},
    {"consumer_mode": "pingpong"},
    {"cta_group": 2},
    {"accumulators": 2},
    {"swap_ab": True},
    {"a_major": "mn"},
    {"b_major": "mn"},
    {"cluster": [2, 1]},
    {"cluster": [1, 2]},
    {"epilogue": "tma"},
    {"epilogue": {"style": "direct", "out_dtype": "f32"}},
    {"epilogue": {"style": "direct", "out_dtype": "bf16"}},
    {"epilogue": {"style": "direct", "alpha": 1.5}},
    {"epilogue": {"style": "direct", "alpha": -2.0}},
    {"epilogue": {"style": "direct", "alpha": "runtime"}},
    {"epilogue": {"style": "direct", "beta": 1.0}},
    {"epilogue": {"style": "direct", "beta": "runtime"}},
    {"epilogue": {"style": "direct", "bias": "row"}},
    {"epilogue": {"style": "direct", "bias": "col"}},
    {"epilogue": {"style": "direct", "activation": "silu"}},
    {"epilogue": {"style": "direct", "activation": "gelu_tanh"}},
    {"epilogue": {"style": "direct", "fn": {"ref": "f.py:one", "args": [], "digest": "0"}}},
    {"epilogue": {"style": "direct", "fn": {"ref": "f.py:two", "args": [], "digest": "0"}}},
    {"scheduler": "persistent"},
    {"scheduler": {"kind": "persistent", "raster": "n"}},
    {"scheduler": {"kind": "persistent", "group": 8}},
    {"scheduler": {"kind": "persistent", "sm_count": 66}},
    {"scheduler": "dynamic"},
    {"scheduler": {"kind": "split_k", "splits": 2}},
    {"scheduler": {"kind": "split_k", "splits": 4}},
    {"scheduler": {"kind": "split_k", "splits": 2, "max_clusters": 32}},
    {"scheduler": {"kind": "split_k", "splits": 2, "reduce": "separate"}},
    {"scheduler": {"kind": "split_k", "splits": 2, "reduce": "separate", "max_tiles": 64}},
    {"scheduler": "stream_k"},
    {"scheduler": {"kind": "stream_k", "sm_count": 66}},
    {"scheduler": {"kind": "stream_k", "bands": "weights"}},
    {"pdl": True},
    {"ctas_per_sm": 2},
]


def test_every_knob_shows_in_the_name() -> None:
    specs = [Spec.model_validate(BASE | change) for change in [{}, *CHANGES]]
    names = [s.canonical_name() for s in specs]
    assert names[0] == "sm90_bf16_128x128x64_s4_sw128_ws_wg2_direct_grid"
    clashes = {n: c for n, c in zip(names, [{}, *CHANGES], strict=True) if names.count(n) > 1}
    assert clashes == {}
    assert names[-2:] == [names[0] + "_pdl", names[0] + "_occ2"]


def test_an_explicit_name_still_wins() -> None:
    spec = Spec.model_validate(BASE | {"name": "my_gemm"})
    assert loader.LoadedSpec(spec, "x.toml", "my_gemm").name == "my_gemm"
    with pytest.raises(ValueError, match="not a valid Python identifier"):
        Spec.model_validate(BASE | {"name": "no-dash"})


def test_the_rename_table_maps_old_names_to_shipped_kernels() -> None:
    shipped = {s.name for s in SHIPPED}
    assert len(RENAMES.RENAMED) == 221
    assert set(RENAMES.RENAMED.values()) <= shipped
    assert not set(RENAMES.RENAMED) & shipped, "an old name is a kernel's name again"
    assert set(RENAMES.KEPT) <= set(RENAMES.RENAMED.values())
    assert RENAMES.RENAMED["h_128x256_wg2_persistent_tma"] == (
        "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm"
    )
    # the kept sweeps are read under the new names
    assert generalize.renames() == RENAMES.RENAMED


def test_an_old_name_warns_and_names_the_new_one() -> None:
    with pytest.warns(DeprecationWarning, match="'lib_128x256_silu' is now named 'sm90_bf16_"):
        assert RENAMES.current("lib_128x256_silu").endswith("_tma_silu_persistent_rm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert RENAMES.current("anything_else") == "anything_else"


def test_the_tuning_data_names_only_current_kernels() -> None:
    """specs/tuning/*.toml were rewritten with the new names; the package's rows follow."""
    for path in sorted((SPECS / "tuning").glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        stale = sorted(old for old in RENAMES.RENAMED if f'"{old}"' in text)
        assert stale == [], path.name


def test_the_package_takes_old_names_for_one_release(tmp_path: Path) -> None:
    """cutegemm.kernel and `import cutegemm.sm90.<old>` (the kernel's own module) in a fresh
    process, each with a DeprecationWarning that points at the caller's line."""
    pytest.importorskip("cutlass")
    code = """
import sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as seen:
    import cutegemm
    k = cutegemm.kernel("h_128x128_wg1_grid_direct")
    import cutegemm.sm90.h_128x128_wg1_grid_direct as old
    from cutegemm.sm90 import lib_128x256_gelu
new = sys.modules[k.module]
assert old is new and old.__spec__.name == k.module, old.__spec__
assert lib_128x256_gelu.__name__.endswith("_tma_gelu_tanh_persistent_rm")
print(k.name)
for w in seen:
    print(w.category.__name__, w.filename, w.lineno)
try:
    import cutegemm.sm100.h_128x128_wg1_grid_direct
except ImportError:
    print("not in sm100")
"""
    script = tmp_path / "old_names.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(GENERATED)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    name, *warned, last = proc.stdout.splitlines()
    assert name == "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid"
    assert warned == [f"DeprecationWarning {script} {line}" for line in (6, 7, 8)]
    assert last == "not in sm100"


def test_a_tune_cache_of_the_old_names_is_read_under_the_new(tmp_path: Path, monkeypatch) -> None:
    """A cutegemm.tune cache written by 0.1.0 (its file named by the old kernel set) is read,
    its names mapped, until this kernel set stores its own file (with those entries in it)."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(GENERATED))
    try:
        from cutegemm import _tune
    finally:
        sys.path.remove(str(GENERATED))
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", str(tmp_path))
    gpu, new = "NVIDIA H200", "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid"
    old_file = _tune._before_rename(gpu)
    assert old_file != _tune.cache_file(gpu)
    old_file.parent.mkdir(parents=True)
    entry = {"ranked": ["h_128x128_wg1_grid_direct", "gone"], "us": [1.0, 2.0]}
    doc = {"format": _tune.CACHE_FORMAT, "gpu": gpu, "entries": {"bf16|bf16|8|1024|1024": entry}}
    old_file.write_text(json.dumps(doc), encoding="utf-8")
    _tune._MEMO.clear()
    try:
        assert _tune.cached_order(gpu, "bf16", "bf16", 8, 1024, 1024) == (new,)
        _tune._store(gpu, {"bf16|bf16|16|1024|1024": {"ranked": [new], "us": [1.0]}})
        stored = json.loads(_tune.cache_file(gpu).read_text(encoding="utf-8"))["entries"]
        assert stored["bf16|bf16|8|1024|1024"]["ranked"] == [new, "gone"]
        assert set(stored) == {"bf16|bf16|8|1024|1024", "bf16|bf16|16|1024|1024"}
    finally:
        _tune._MEMO.clear()
