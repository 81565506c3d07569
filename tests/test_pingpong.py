"""Ping-pong consumers (sm_90a consumer_mode "pingpong"): rules, plan numbers, generated text and
the ring-skip arithmetic, simulated in pure Python. Not yet run on a GPU."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import kernel_glob

from codegen import rules, rules_common
from codegen.arch.sm90 import rules as rules_sm90
from codegen.plan import expected_counts, plan
from codegen.spec import Spec

PINGPONG = kernel_glob("*_pp_*.py")


def pp(tile: tuple[int, int, int] = (64, 256, 64), **knobs: object) -> Spec:
    """A resolved sm_90a ping-pong spec (2 warpgroups, TMA store, persistent)."""
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "tile": list(tile),
        "swizzle": "128B",
        "consumer_warpgroups": 2,
        "consumer_mode": "pingpong",
        "epilogue": "tma",
        "scheduler": "persistent",
    }
    return rules.resolve(Spec.model_validate(base | knobs))


def fields(spec: Spec) -> list[str]:
    return [v.field for v in rules.check(spec)]


@pytest.mark.parametrize("tile", [(64, 256, 64), (128, 128, 64), (64, 128, 64)])
def test_legal_pingpong_tiles(tile: tuple[int, int, int]) -> None:
    assert rules.check(pp(tile)) == []


def test_pingpong_rejects_what_it_does_not_do() -> None:
    assert "consumer_warpgroups" in fields(pp(consumer_warpgroups=1))
    assert "scheduler" in fields(pp(scheduler="grid"))
    assert "scheduler" in fields(pp(scheduler={"kind": "split_k", "splits": 2}, epilogue="direct"))
    assert "cluster" in fields(pp(cluster=[2, 1]))
    # a whole 128x256 tile per warpgroup: 256 accumulator registers per thread would spill
    (v,) = [v for v in rules.check(pp((128, 256, 64))) if v.field == "tile"]
    assert "pingpong" in v.message and "256 f32 accumulator registers" in v.message
    assert "tile" in fields(pp((96, 128, 64)))  # M not a multiple of 64


def test_sm100_rejects_pingpong() -> None:
    spec = rules.resolve(Spec(arch="sm_100a", tile=[128, 128, 64], consumer_mode="pingpong"))
    assert "consumer_mode" in fields(spec)


def test_pingpong_numbers() -> None:
    spec, coop = pp(), pp((128, 256, 64), consumer_mode="cooperative")
    # one warpgroup (4 warps) reads and releases each stage, against all 8 consumer warps
    assert rules_sm90.empty_arrives(spec) == 4 and rules_sm90.empty_arrives(coop) == 8
    assert rules_sm90.accumulator_regs(spec) == 64 * 256 // 128
    # one set of 4 sub-tile buffers (64 x 32 bf16) per warpgroup, counted by the "auto" stages
    assert rules_sm90.tma_store_smem_bytes(spec) == 2 * 4 * 64 * 32 * 2
    assert rules.smem_bytes(spec, spec.stages) <= rules_common.SMEM_LIMIT_BYTES
    assert rules.smem_bytes(spec, spec.stages + 1) > rules_common.SMEM_LIMIT_BYTES
    p = plan(spec)
    assert p.template == "sm90/gemm.py.j2" and p.values.pingpong
    assert p.partials["epilogue_partial"] == "sm90/epilogue/tma.py.j2"
    assert expected_counts(spec)["wgmma.mma_async"] == 4  # 4 k-blocks x one 64-row atom
    assert expected_counts(pp((128, 128, 64)))["wgmma.mma_async"] == 8  # 2 atoms down M
    assert spec.canonical_name().endswith("_wg2_pp_tma_persistent_rm")


def test_cooperative_spec_dump_unchanged() -> None:
    """consumer_mode is left out of the dump at its default: shipped kernels keep their hashes."""
    coop = pp((128, 256, 64), consumer_mode="cooperative")
    assert "consumer_mode" not in coop.model_dump()
    assert Spec.model_validate(coop.model_dump()) == coop
    assert pp().model_dump()["consumer_mode"] == "pingpong"


def test_only_pingpong_files_have_the_turnstile() -> None:
    assert len(PINGPONG) >= 4
    for path in kernel_glob("*.py"):
        text = path.read_text(encoding="utf-8")
        is_pp = path in PINGPONG
        assert ("TURN_BARRIER_ID" in text) == is_pp, path.name
        assert ("cute.arch.barrier_arrive(" in text) == is_pp, path.name
        assert ("def ring_advance" in text) == is_pp, path.name
        if is_pp:
            assert "\nEMPTY_ARRIVES = 4\n" in text
            assert '"consumer_mode": "pingpong"' in text


def _ring_advance(path: Path, stages: int):
    """The generated ring_advance, compiled alone with the file's STAGES."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "ring_advance"]
    namespace: dict[str, object] = {"STAGES": stages}
    # the generated text is this repo's own render, not outside input
    code = compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec")
    exec(code, namespace)  # noqa: S102
    return namespace["ring_advance"]


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 6, 7])
@pytest.mark.parametrize("k_tiles", [1, 2, 3, 5, 8, 13])
def test_ring_advance_matches_a_simulated_ring(stages: int, k_tiles: int) -> None:
    """Simulate the producer's ring walk (step by step, phase flipping on each wrap) over 7 tiles
    and check each warpgroup's (stage, phase) at the start of each of its tiles."""
    advance = _ring_advance(PINGPONG[0], stages)
    walk, stage, phase = [], 0, 0
    for _ in range(7 * k_tiles):
        walk.append((stage, phase))
        stage += 1
        if stage == stages:
            stage, phase = 0, phase ^ 1
    for consumer in (0, 1):
        # as the kernel does: start past the other's first tile (consumer 1), then per own tile
        # walk its k_tiles positions one by one and skip the other's k_tiles with one advance
        stage, phase = advance(0, 0, consumer * k_tiles)
        for tile in range(consumer, 7, 2):
            assert (stage, phase) == walk[tile * k_tiles], (consumer, tile)
            for _ in range(k_tiles):
                stage += 1
                if stage == stages:
                    stage, phase = 0, phase ^ 1
            stage, phase = advance(stage, phase, k_tiles)


def test_turnstile_waits_and_arrives_pair_up() -> None:
    """Per CTA with T tiles: tile t's owner waits on its turn barrier iff t > 0, and the owner of
    t arrives on the other's iff t + 1 < T. Every barrier sees as many arrives as waits."""
    for tiles in range(9):
        waits = {0: 0, 1: 0}
        arrives = {0: 0, 1: 0}
        for t in range(tiles):
            w = t % 2
            if t > 0:
                waits[w] += 1
            if t + 1 < tiles:
                arrives[1 - w] += 1
        assert waits == arrives, tiles
