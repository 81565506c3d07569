"""What every architecture's planner shares: the :class:`Plan` a template reads, the groups of
values both architectures' :class:`Values` hold (the docstring's facts, dtypes, the tile, the
fusion, the bias, the tensors after C, the GPU-sized grid) and the bases each extends (the A/B
ring, the tile order), the docstring's Pipeline rings and the tile order's Python reference.

Templates place these values; they never compute. This module imports no architecture: each
planner (``codegen/arch/<name>/values.py``) builds on it, and :mod:`codegen.plan` picks the
planner of a spec through :mod:`codegen.registry`.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from codegen import rules_common
from codegen.epilogue_fn import ACC_KINDS, GATED_BLOCK, KIND_NAMES
from codegen.spec import RUNTIME, Spec

CUTLASS_DTYPE = {
    "f16": "cutlass.Float16",
    "bf16": "cutlass.BFloat16",
    "e4m3": "cutlass.Float8E4M3FN",
    "f32": "cutlass.Float32",
}
TORCH_DTYPE = {
    "f16": "torch.float16",
    "bf16": "torch.bfloat16",
    "e4m3": "torch.float8_e4m3fn",
    "f32": "torch.float32",
}


# gelu, tanh form: gelu(x) = x/2 (1 + tanh(GELU_C (x + GELU_CUBIC x^3)))
GELU_C = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
# bias: the dimension of C its values run along (its length): "row" one per row, "col" per column
BIAS_DIM = {"row": "M", "col": "N"}


@dataclass(frozen=True, kw_only=True)
class Docs:
    """What only the kernel's docstring prints (``plan.docs``)."""

    arch: str
    swizzle: str  # as the spec names it
    scheduler_kind: str  # grid, persistent, split_k, split_k_separate, stream_k (sm_100a: dynamic)
    pipeline_table: list[str]  # the Pipeline section's rings
    timeline_legend: str  # the Timeline section's legend


@dataclass(frozen=True, kw_only=True)
class Dtypes:
    """The input and output dtypes (``plan.dtypes``), as the spec, the DSL and torch name them."""

    name: str  # the input dtype, as the spec names it
    io: str
    out: str
    torch: str
    torch_out: str
    out_name: str


@dataclass(frozen=True, kw_only=True)
class Tile:
    """The CTA's output tile and its K depth (``plan.tile``), in MMA k-blocks."""

    name: str  # the tile as the spec names it: MxNxK
    shape: tuple[int, int, int]  # TILER
    mma_k: int  # K depth of one MMA instruction
    k_blocks: int  # MMA k-blocks per stage: TK / mma_k
    shape_multiples: dict[str, int]  # what M, N and K must be multiples of


@dataclass(frozen=True, kw_only=True)
class SmemRing:
    """The A/B SMEM ring (``plan.ring``); each architecture's planner extends it."""

    stages: int
    tx_bytes: int  # A + B bytes one stage's TMA copies deliver to its full barrier


@dataclass(frozen=True, kw_only=True)
class TileOrder:
    """The static order a persistent CTA (or cluster) walks its tiles in (``plan.order``): along
    `fast` first, optionally in bands of `group` (the tile swizzle, templates/common/
    tile_order.py.j2); each architecture's planner may extend it."""

    fast: str  # the raster: the dimension consecutive tiles walk, "m" or "n"
    slow: str
    group: int  # tiles (or cluster tiles) per swizzle band; 1: no swizzle


@dataclass(frozen=True, kw_only=True)
class Fusion:
    """The fused epilogue (``plan.fusion``; templates/common/fusion.py.j2): D = activation(ALPHA *
    A @ B^T + BETA * C + bias); the bias is ``plan.bias``."""

    formula: str  # D = this; empty for a plain store
    alpha: float | str  # a number, or "runtime"
    beta: float | str
    alpha_name: str  # what the epilogue multiplies by: ALPHA (a module constant) or alpha
    beta_name: str  # BETA or beta
    # the runtime scalars ("alpha", "beta"): cutlass.Float32 arguments of gemm, gemm_kernel and
    # the consumers that run the epilogue, after the tensors
    scalars: list[str]
    scalar_notes: dict[str, str]  # gemm_kernel's note on each
    scalars_doc: str  # gemm's docstring on them (after the tensors')
    activation: str
    gelu_c: float
    gelu_cubic: float
    # an epilogue function's arguments after the accumulator, as gemm, gemm_kernel and the
    # helper that runs the epilogue take them (fn_NAME: the user's NAME, prefixed so that it
    # never meets a name of the template), each with its DSL type and gemm_kernel's note; then,
    # with row_sumsq, the tensor of row partials the epilogue writes (row_partials)
    fn_params: list[tuple[str, str, str]]
    fn_names: list[str]  # their names


@dataclass(frozen=True, kw_only=True)
class FnArg:
    """One argument of an epilogue function's call (``plan.epifn.args``)."""

    name: str  # the function's parameter
    kind: str  # codegen.epilogue_fn's kind: acc, scalar, device_scalar, row, col
    kernel: str  # the kernel's name for it: fn_NAME
    value: str  # what the per-element call passes: the kernel's scalar, its per-tile read or
    # its vector at the element's row or column (the kernel's: swap AB exchanges them)
    axis: str  # the kernel's axis a vector runs along: "row", "col", or "" for the rest
    host_doc: str  # launcher's words on it
    extent: str  # a float32 tensor argument's element count on the host: 1, m or n ("" else)
    shapes: str  # ... and the shapes launcher takes for it


@dataclass(frozen=True, kw_only=True)
class EpiFn:
    """An epilogue function (``plan.epifn``; None without one; codegen/epilogue_fn.py): called
    once per accumulator element, in f32, before the conversion to the output dtype."""

    name: str
    ref: str  # where it came from: FILE:FUNCTION
    source: str  # its text, printed once at module level
    kind_aliases: str  # the annotations it uses, as names of cutlass.Float32 in the kernel file
    args: list[FnArg]
    passed: list[FnArg]  # the arguments the caller passes (not accumulator elements), in order
    reads: list[FnArg]  # device scalars, read once per tile before the element loop
    rows: bool  # some argument is a vector along the kernel's rows
    cols: bool  # ... along its columns
    tensors: list[FnArg]  # what launcher() takes as torch tensors
    scalars: list[FnArg]  # ... as host floats
    call_note: str  # the epilogue's comment over the call: the call in the kernel's terms
    heading: str  # ... and the line above it
    # Tile arguments: (M, N) tensors in the output dtype, each loaded per tile into registers
    # shaped like the accumulator (sm_90a: vectors of tile_vec elements, tile_bits bits, as C is
    # stored; sm_100a: per chunk, as C is)
    tiles: list[FnArg]
    tile_vec: int
    tile_bits: int
    # a gated pair (Gate and Up instead of Acc; codegen/epilogue_fn.py): B's rows are gate and
    # up rows in blocks of GATED_BLOCK, the output C has N/2 columns
    gated: bool
    block: int  # GATED_BLOCK


@dataclass(frozen=True, kw_only=True)
class RowSumsq:
    """row_sumsq (``plan.row_sumsq``; None without): besides D, the kernel writes row_partials, a
    float32 (P, M) tensor: P partial sums of squares per row of the user's C, of the f32 values
    the epilogue stores (after the epilogue function, before the conversion to the out dtype;
    columns past N left out). Each partial is written by one thread after a fixed sequence of
    additions (its own values in fragment order, then a butterfly over `shuffles` lane offsets),
    so it is the same bit for bit on every run; the caller adds them up, row_partials.sum(0)."""

    swap: bool  # swap AB: the user's rows are the kernel's columns
    per_tile: int  # partials one tile writes per row of the user's C
    count: str  # row_partial_count(n)'s expression of n, the user's N: P
    count_doc: str  # what one partial covers, in the docstring's words
    shuffles: list[int]  # butterfly lane offsets adding one row's (column's) values across lanes
    writer: str  # which lanes write, in a comment's words
    warp_rows: int  # sm_100a swap AB: the kernel rows of one epilogue warp (0 elsewhere)
    host_doc: str  # launcher's words on the tensor


@dataclass(frozen=True, kw_only=True)
class BlockQuant:
    """block_quant (``plan.block_quant``; None without): D is written as float8_e4m3fn, each row
    quantized per block of `block` columns with its own f32 scale: amax = max |v| over the block's
    f32 values (after the epilogue function; columns past N left out), scale = amax / 448 (1
    where amax = 0), D = e4m3(v * (448 / amax)) (round to nearest, saturated), and the kernel
    writes the scale to scales[block index, row]: a float32 (ceil(N / block), M) tensor, the
    user's (M, ceil(N / block)) scales with strides (1, M). A block's amax is a max over the
    lanes that hold the row (a butterfly over `shuffles` lane offsets; none where one thread
    holds it, as on sm_100a), the same on every run."""

    block: int  # columns per scale: 128
    per_tile: int  # scale blocks one tile spans along N: TILER[1] // block
    count: str  # scale_block_count(n)'s expression of n: ceil(N / block)
    shuffles: list[int]  # butterfly lane offsets taking one row's max across lanes (or none)
    fp8_max: float  # the largest finite float8_e4m3fn, onto which a block's amax is mapped
    writer: str  # which lanes write, in a comment's words
    host_doc: str  # launcher's words on the tensor


@dataclass(frozen=True, kw_only=True)
class Bias:
    """A bias vector (``plan.bias``; None without one): the axis of C it runs along as the user
    sees C, and as the kernel does (C^T with swap AB: a bias per row of C is per column of C^T)."""

    axis: str  # the kernel's: "row" or "column"
    index_note: str  # the kernel's axis, in prose
    coord: int  # the tile coordinate it indexes: 0 (rows) or 1 (columns)
    extent: str  # the kernel's extent along it: M or N
    user_axis: str  # the user's C: "row" or "column"
    user_extent: str  # its length: M or N
    note: str  # the fusion line's comment


@dataclass(frozen=True, kw_only=True)
class Tensors:
    """The tensors after C (``plan.tensors``): the bias and a workspace, as `gemm` takes them and
    passes them on to gemm_kernel."""

    host: list[str]  # what gemm takes after C, in order
    kernel: list[tuple[str, str]]  # gemm_kernel's parameters for them, with a note each
    launch: list[str]  # what gemm passes gemm_kernel for them
    doc: str  # gemm's docstring on them
    workspace_elems: int  # the f32 workspace (0: none)


@dataclass(frozen=True, kw_only=True)
class Workers:
    """A persistent grid sized by the GPU's SM count (``plan.workers``; None where the grid is one
    CTA or cluster per tile): templates/common/workers.py.j2."""

    default_sm_count: int
    default_sm_note: str
    device_capability: tuple[int, int]
    expr: str  # max_workers(sm_count)'s expression
    doc: str  # max_workers' docstring
    flagship: int  # workers on the flagship GPU (what the kernel's docstring quotes)


@dataclass(frozen=True, kw_only=True)
class Layouts:
    """The operands' major modes (``plan.layouts``): as the user passes A and B (a_major,
    b_major: "k" or "mn") and as the kernel's MMA takes them (mma_a, mma_b: the DSL's
    OperandMajorMode names; swap AB exchanges the operands, so the kernel's A is the user's B).
    `default`: both K-major, the templates' original text."""

    default: bool
    a_major: str  # the user's A: "k" (M, K) row-major, "mn" the transpose of a (K, M) tensor
    b_major: str  # the user's B: "k" (N, K) row-major, "mn" the transpose of a (K, N) tensor
    mma_a: str  # the kernel's A operand: "K" or "MN" (OperandMajorMode)
    mma_b: str  # the kernel's B operand
    smem_a: str  # the kernel's A as a LayoutEnum (sm_90a's SMEM layout): ROW_MAJOR is K-major
    smem_b: str
    a_leading: int  # the user's A's dimension of stride 1: 1 (K) or 0 (M)
    b_leading: int  # the user's B's: 1 (K) or 0 (N)
    a_order: tuple[int, int]  # stride_order of A's fake (compile_args): (1, 0) K-major
    b_order: tuple[int, int]
    m_divisibility: int  # what the fake M is a multiple of: 16 bytes of A's dtype when M-major
    a_doc: str  # the user's A in words: shape, strides, how to get it from torch
    b_doc: str
    mma_note: str  # the MMA's operand modes, for the comment over the tiled MMA
    modes: str  # the docstring's formula line: "A, B K-major", "A K-major, B N-major", ...
    a_mode: str  # "K-major" or "M-major"
    b_mode: str  # "K-major" or "N-major"
    n_divisibility: int  # what the fake N is a multiple of: 16 bytes of an N-major B, of a float8 C


@dataclass(frozen=True, kw_only=True)
class Values:
    """What every architecture's templates read as ``plan.NAME``, or in a group ``plan.GROUP.NAME``:
    frozen groups of typed values, built once by keyword (a value given twice is a TypeError, not
    a silent override). Each architecture's planner extends it with its own groups. An optional
    group is None where the variant lacks its feature (a template tests it as ``plan.GROUP``); no
    other value is ever None."""

    docs: Docs
    dtypes: Dtypes
    tile: Tile
    swap_ab: bool  # the kernel computes C^T = B @ A^T
    splits: int  # CTAs that split one tile's K range (1 without split-K)
    fusion: Fusion
    bias: Bias | None = None
    epifn: EpiFn | None = None
    row_sumsq: RowSumsq | None = None
    block_quant: BlockQuant | None = None
    tensors: Tensors
    layouts: Layouts
    workers: Workers | None = None


@dataclass(frozen=True)
class Plan:
    """Values and partial names for one generated file."""

    template: str
    partials: dict[str, str]
    values: Values

    def __getattr__(self, name: str) -> object:  # lets templates write plan.ring.stages
        return getattr(self.values, name)


def plural(count: int, word: str) -> str:
    """ "1 slot", "2 slots": a count and its noun, in the docstrings' prose."""
    return f"{count} {word}{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class Ring:
    """One ring of a kernel docstring's Pipeline section."""

    name: str  # "A/B SMEM", "accumulator", ...
    flow: str  # producer -> consumer
    size: str  # its buffers ("4 stages x 49152 bytes"); "" when it has none of its own
    full: str  # the arrivals that complete a phase of its full barrier
    empty: str  # ... of its empty barrier; "" when it has none


RING_NAME = 13  # the ring's name column: "accumulator" and two spaces


def ring_lines(rings: list[Ring], width: int) -> list[str]:
    """The Pipeline section, `width` columns wide: per ring its name, producer -> consumer and its
    buffers, then what its full and empty barriers count. Clauses that do not fit on one line
    stand on a line each, under the first; a clause too long for a line continues two columns
    further in."""
    lines = []
    for ring in rings:
        clauses = [
            [ring.flow, *([ring.size] if ring.size else [])],
            [
                f"full arrives: {ring.full}",
                *([f"empty arrives: {ring.empty}"] if ring.empty else []),
            ],
        ]
        texts = []
        for group in clauses:
            joined = "; ".join(group)
            texts += [joined] if len(joined) <= width - RING_NAME else group
        for i, text in enumerate(texts):
            first, *rest = wrap_words(text, width - RING_NAME)
            lines.append((ring.name if i == 0 else "").ljust(RING_NAME) + first)
            more = wrap_words(" ".join(rest), width - RING_NAME - 2)
            lines += [" " * (RING_NAME + 2) + line for line in more]
    return lines


def binary(mask: int, bits: int) -> str:
    """A mask as a Python binary literal of `bits` digits (0b0101)."""
    return f"0b{mask:0{bits}b}"


def tile_order(
    index: int, counts: tuple[int, int], raster: str = "m", group: int = 1
) -> tuple[int, int]:
    """Coordinates (m, n) of tile `index` in the persistent tile order of a counts[0] x counts[1]
    grid of (cluster) tiles: consecutive indices walk the `raster` dimension; with group > 1 they
    walk `group` tiles along it, then step along the other dimension, band by band (the last band
    is narrower when group does not divide the count). The Python reference of what both
    architectures' persistent schedulers compute in the kernel (templates/common/tile_order.py.j2).
    """
    major, minor = (0, 1) if raster == "m" else (1, 0)
    if group == 1:
        fast, slow = index % counts[major], index // counts[major]
    else:
        group_tiles = group * counts[minor]
        first = (index // group_tiles) * group
        width = min(counts[major] - first, group)
        fast, slow = first + (index % group_tiles) % width, (index % group_tiles) // width
    return (fast, slow) if raster == "m" else (slow, fast)


def stream_k_share(
    bidx: int, ctas: int, bands: int, band_tiles: int, k_tiles: int
) -> tuple[int, int, int, int, int, int]:
    """Stream-K CTA `bidx` of `ctas` over `bands` bands of `band_tiles` tiles (a band: the tiles
    that read the same weight tiles) of k_tiles k-tiles each: (its group's first CTA, the group's
    CTAs, its first MAC iteration, its iterations, this CTA's [it_begin, it_end)). The CTAs split
    into min(bands, ctas) groups, each on consecutive bands, each group's iterations into equal
    contiguous shares. The Python reference of what both architectures' stream-K kernels compute
    (templates/common/stream_k.py.j2)."""
    groups = min(bands, ctas)
    group = ((bidx + 1) * groups - 1) // ctas
    cta0 = group * ctas // groups
    group_ctas = (group + 1) * ctas // groups - cta0
    tile0 = group * bands // groups * band_tiles
    iter0 = tile0 * k_tiles
    iters = ((group + 1) * bands // groups * band_tiles - tile0) * k_tiles
    rank = bidx - cta0
    return (
        cta0,
        group_ctas,
        iter0,
        iters,
        iter0 + rank * iters // group_ctas,
        iter0 + (rank + 1) * iters // group_ctas,
    )


def stream_k_launch_ctas(ctas: int, bands: int, *, weight_bands: bool) -> int:
    """The stream-K CTAs the host launches, given `ctas` = min(MAC iterations, the GPU's SMs) (at
    least 1) and the band count: all of them, or with bands along the weights a multiple of the
    group count min(bands, ctas), so every group has as many CTAs and the groups keep pace (at
    least one group: no band, M or N = 0, launches the one CTA)."""
    if not weight_bands:
        return ctas
    groups = max(min(bands, ctas), 1)
    return ctas // groups * groups


def stream_k_tile(tile: int, tiles_m: int, tiles_n: int, band: str) -> tuple[int, int]:
    """The output tile (tm, tn) of band-major tile index `tile`: bands one tile of axis `band`
    ("m": rows of tiles, walked along N; "n": columns, walked along M)."""
    if band == "m":
        return tile // tiles_n, tile % tiles_n
    return tile % tiles_m, tile // tiles_m


def stream_k_last_cta(tile: int, cta0: int, ctas: int, iter0: int, iters: int, k_tiles: int) -> int:
    """The CTA of a stream-K group (stream_k_share's first four values) that runs the last k-tile
    of tile `tile`: the finisher waits for CTAs up to it."""
    return cta0 + (((tile + 1) * k_tiles - iter0) * ctas - 1) // iters


def stream_k_dp_units(tiles: int, ctas: int) -> int:
    """The data-parallel + stream-K hybrid (``data_parallel = true``): how many whole tiles each
    of `ctas` CTAs runs first, data-parallel. Every full wave of `ctas` tiles when `ctas` divides
    `tiles` (no stream-K part: T = P, T = 0 and T a multiple of P alike); otherwise every full
    wave but the last, W = tiles // ctas - 1 (0 with fewer tiles than CTAs), so the stream-K part
    is the last full wave and the partial one: between ctas + 1 and 2 * ctas - 1 tiles, or all
    of them when tiles < ctas."""
    waves = tiles // ctas
    return waves if tiles % ctas == 0 else max(waves - 1, 0)


def stream_k_hybrid_share(
    bidx: int, ctas: int, tiles: int, k_tiles: int
) -> tuple[int, int, int, int, int, int, int]:
    """CTA `bidx` of the hybrid's `ctas` CTAs over `tiles` tiles of k_tiles k-tiles: (its
    data-parallel units, its stream-K group's first CTA, CTA count, first MAC iteration and
    iteration count, its own MAC iterations [it_begin, it_end)). Tiles are indices of the
    persistent order (tile_order): the data-parallel waves are tiles [0, W * ctas), CTA b taking
    b, b + ctas, ...; the stream-K part is tiles [W * ctas, tiles), split as one group of every
    CTA (stream_k_share with a single band), its iterations counted from tile 0's first so that
    stream_k_last_cta and the unit k ranges take tile indices as they are; the iteration count is
    at least 1 (stream_k_last_cta divides by it, and a whole tile's finisher may evaluate it where
    no tile is stream-K: its result is then below `bidx`, no peer). The Python reference of
    templates/common/stream_k.py.j2's hybrid_share."""
    dp_units = stream_k_dp_units(tiles, ctas)
    dp_tiles = dp_units * ctas
    cta0, group_ctas, iter0, iters, begin, end = stream_k_share(
        bidx, ctas, 1, tiles - dp_tiles, k_tiles
    )
    base = dp_tiles * k_tiles
    return dp_units, cta0, group_ctas, base + iter0, max(iters, 1), base + begin, base + end


def stream_k_hybrid_units(
    bidx: int, ctas: int, tiles: int, k_tiles: int
) -> list[tuple[int, int, int]]:
    """CTA `bidx`'s units (tile, k_begin, k_end) in the order it runs them: its data-parallel
    tiles whole, then its stream-K share (a tail of one tile, whole tiles, a head of another).
    K = 0 leaves the data-parallel tiles with an empty k range (the host launches one CTA then,
    so every tile is data-parallel and stored) and no stream-K unit."""
    dp_units, _, _, _, _, begin, end = stream_k_hybrid_share(bidx, ctas, tiles, k_tiles)
    units = [(bidx + u * ctas, 0, k_tiles) for u in range(dp_units)]
    step = max(k_tiles, 1)
    for t in range(begin // step, (end - 1) // step + 1):
        units.append((t, max(begin - t * k_tiles, 0), min(end - t * k_tiles, k_tiles)))
    return units


# gemm_kernel's notes on the runtime scalars
SCALAR_NOTES = {
    "alpha": "D = alpha * A @ B^T ...: a runtime f32 scalar",
    "beta": "... + beta * C: a runtime f32 scalar; C is read either way",
}


def _coefficient(value: float | str, name: str = "alpha") -> str:
    """A coefficient as the formula prints it: the number, or the runtime scalar's name."""
    return name if value == RUNTIME else f"{value:g}"


def fusion_formula(spec: Spec) -> str:
    """The fused epilogue's right-hand side (D = it), or nothing when it is a plain store."""
    epi = spec.epilogue
    if not epi.fused:
        return ""
    expr = "A @ B^T" if epi.alpha == 1.0 else f"{_coefficient(epi.alpha)} * A @ B^T"
    if epi.beta != 0.0:
        expr += f" + {_coefficient(epi.beta, 'beta')} * C"
    if epi.bias != "none":
        expr += f" + bias[{'row' if epi.bias == 'row' else 'column'}]"
    if epi.activation != "none":
        expr = f"{epi.activation}({expr})"
    if epi.fn is not None:
        expr = fn_call_text(epi.fn.name, epi.fn.args, "A @ B^T", "(A @ B^T)", lambda kind: kind)
    return expr


def fn_call_text(name: str, args, acc: str | None, pair: str | None, axis) -> str:
    """An epilogue function's call as a docstring or comment shows it: the accumulator as `acc`,
    a gated pair's elements as `pair`[gate] / [up] (None: the argument's own name), a vector at
    [axis(kind)] (its row or column index), a tile at [row, col], anything else by name."""

    def one(arg: str, kind: str) -> str:
        if kind == "acc":
            return acc or arg
        if kind in ("gate", "up"):
            return f"{pair or arg}[{kind}]"
        if kind == "tile":
            return f"{arg}[row, col]"
        if kind in ("row", "col"):
            return f"{arg}[{axis(kind)}]"
        return arg

    return f"{name}({', '.join(one(arg, kind) for arg, kind in args)})"


def fusion(spec: Spec) -> Fusion:
    """What the fusion macros print (templates/common/fusion.py.j2, for both arches; sm_90a adds
    the bias in the wgmma registers, templates/sm90/epilogue/_bias.py.j2)."""
    epi = spec.epilogue
    # an epilogue function's arguments after the accumulator: gemm's and launcher's
    fn_args = [
        (name, kind) for name, kind in (epi.fn.args if epi.fn else ()) if kind not in ACC_KINDS
    ]
    fn_params = [
        (
            f"fn_{name}",
            "cutlass.Float32" if kind == "scalar" else "cute.Tensor",
            FN_KERNEL_NOTES[kind],
        )
        for name, kind in fn_args
    ]
    if epi.row_sumsq:
        # the row sums of squares' partials: an output of the epilogue, after the function's
        fn_params.append(("row_partials", "cute.Tensor", ROW_PARTIALS_NOTE))
    if epi.block_quant is not None:
        # the block scales: an output of the epilogue, after the function's arguments
        fn_params.append(("scales", "cute.Tensor", SCALES_NOTE))
    return Fusion(
        formula=fusion_formula(spec),
        alpha=epi.alpha,
        beta=epi.beta,
        alpha_name="alpha" if epi.alpha == RUNTIME else "ALPHA",
        beta_name="beta" if epi.beta == RUNTIME else "BETA",
        scalars=epi.scalars,
        scalar_notes={name: note for name, note in SCALAR_NOTES.items() if name in epi.scalars},
        scalars_doc="".join(f", {name} (f32)" for name in epi.scalars)
        + "".join(f", fn_{name} {FN_SHAPES[kind]}" for name, kind in fn_args)
        + (", row_partials (P, M) f32" if epi.row_sumsq else "")
        + (", scales (ceil(N / BLOCK), M) f32" if epi.block_quant is not None else ""),
        activation=epi.activation,
        gelu_c=GELU_C,
        gelu_cubic=GELU_CUBIC,
        fn_params=fn_params,
        fn_names=[param for param, _, _ in fn_params],
    )


# gemm_kernel's note on the row partials (row_sumsq)
ROW_PARTIALS_NOTE = "row_sumsq: (P, M) f32, written: partial sums of squares of C rows"
# launcher's words on them
ROW_PARTIALS_DOC = (
    "a float32 CUDA tensor (row_partial_count(N), M), contiguous: each row's partial sums of "
    "squares of D, all overwritten; row_partials.sum(0) is the (M,) sum"
)
# gemm_kernel's note on the block scales (block_quant)
SCALES_NOTE = "block_quant: (ceil(N / BLOCK), M) f32, written: a scale per row block"
# launcher's words on them
SCALES_DOC = (
    "a float32 CUDA tensor (M, scale_block_count(N)) with strides (1, M) (the transpose of a "
    "contiguous (scale_block_count(N), M) tensor, as torch._scaled_mm's 1 x 128 blockwise "
    "scales): scales[i, j] is the scale of row i's columns j * BLOCK to j * BLOCK + BLOCK - 1 of D, "
    "D * scale the value; all overwritten"
)
# gemm's docstring on each kind of epilogue-function argument
FN_SHAPES = {
    "scalar": "(f32)",
    "device_scalar": "(1,) f32",
    "row": "(M,) f32",
    "col": "(N,) f32",
    "tile": "(M, N) like c",
}
# gemm_kernel's note on each kind of epilogue-function argument
FN_KERNEL_NOTES = {
    "scalar": "epilogue function argument: a runtime f32 scalar",
    "device_scalar": "epilogue function argument: (1,) f32, read once per tile",
    "row": "epilogue function argument: (M,) f32, one value per row of C",
    "col": "epilogue function argument: (N,) f32, one value per column of C",
    "tile": "epilogue function argument: (M, N) like C, read where C is stored",
}
# a float32 tensor argument's element count in launcher, and the shapes it takes
FN_EXTENT = {"device_scalar": "1", "row": "m", "col": "n"}
FN_HOST_SHAPES = {"device_scalar": "() or (1,)", "row": "(M,) or (M, 1)", "col": "(N,) or (1, N)"}
FN_HOST_DOC = {
    "scalar": "a host float (finite in float32)",
    "device_scalar": "a 0-d (or (1,)) float32 CUDA tensor, read by the kernel at each launch",
    "row": "a float32 CUDA tensor of M values ((M,) or (M, 1), contiguous)",
    "col": "a float32 CUDA tensor of N values ((N,) or (1, N), contiguous)",
    "tile": "an (M, N) CUDA tensor of c's dtype (last stride 1, 16-byte aligned rows and base)",
}


def epifn(spec: Spec) -> EpiFn | None:
    """What the epilogue-function macros print (templates/common/epifn.py.j2 and each
    architecture's per-element call); None without a function."""
    fn = spec.epilogue.fn
    if fn is None:
        return None
    args = []
    for name, kind in fn.args:
        kernel = f"fn_{name}"
        axis = ""
        if kind in ("row", "col"):
            # the kernel computes C^T with swap AB: the user's rows are its columns
            axis = {"row": "col", "col": "row"}[kind] if spec.swap_ab else kind
        value = {
            "acc": "",
            "gate": "",
            "up": "",
            "tile": f"{kernel}_f",  # + [the element's index in the accumulator fragment]
            "scalar": kernel,
            "device_scalar": f"{kernel}_v",
            "row": f"{kernel}[{axis}]",
            "col": f"{kernel}[{axis}]",
        }[kind]
        args.append(
            FnArg(
                name=name,
                kind=kind,
                kernel=kernel,
                value=value,
                axis=axis,
                host_doc=FN_HOST_DOC.get(kind, ""),
                extent=FN_EXTENT.get(kind, ""),
                shapes=FN_HOST_SHAPES.get(kind, ""),
            )
        )
    used = sorted({KIND_NAMES[kind] for _, kind in fn.args})
    # the call in the kernel's terms: swap AB exchanges a vector's row and column
    shown = fn_call_text(
        fn.name,
        fn.args,
        None,
        None,
        lambda kind: {"row": "col", "col": "row"}[kind] if spec.swap_ab else kind,
    )
    gated = any(a.kind == "gate" for a in args)
    out_bytes = rules_common.DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]
    tile_vec = 1 if spec.swap_ab else 2
    return EpiFn(
        name=fn.name,
        ref=fn.ref,
        source=fn.source,
        kind_aliases=" = ".join(used) + " = cutlass.Float32",
        args=args,
        passed=[a for a in args if a.kind not in ACC_KINDS],
        reads=[a for a in args if a.kind == "device_scalar"],
        rows=any(a.axis == "row" for a in args),
        cols=any(a.axis == "col" for a in args),
        tensors=[a for a in args if a.kind in ("device_scalar", "row", "col", "tile")],
        scalars=[a for a in args if a.kind == "scalar"],
        call_note=f"{'out' if gated else 'acc'} = {shown}",
        tiles=[a for a in args if a.kind == "tile"],
        tile_vec=tile_vec,
        tile_bits=tile_vec * 8 * out_bytes,
        gated=gated,
        block=GATED_BLOCK,
        heading="epilogue function, per element, in f32"
        + ("; row, col index C^T (swap AB)" if spec.swap_ab and any(a.axis for a in args) else ""),
    )


def row_sumsq(
    spec: Spec, per_tile: int, shuffles: list[int], writer: str, per: str, warp_rows: int = 0
) -> RowSumsq | None:
    """What the row_sumsq macros print (None without it): P = row_partial_count(n), the tiles
    along the user's N (the kernel's M with swap AB) times `per_tile` partials each, the
    architecture's (rules.row_partials_per_tile); `per`: what one partial covers, in words."""
    if not spec.epilogue.row_sumsq:
        return None
    dim = 0 if spec.swap_ab else 1
    return RowSumsq(
        swap=spec.swap_ab,
        per_tile=per_tile,
        count=f"(n + TILER[{dim}] - 1) // TILER[{dim}] * ROW_PARTIALS_PER_TILE",
        count_doc=per,
        shuffles=shuffles,
        writer=writer,
        warp_rows=warp_rows,
        host_doc=ROW_PARTIALS_DOC,
    )


def block_quant(spec: Spec, shuffles: list[int], writer: str) -> BlockQuant | None:
    """What the block_quant macros print (None without it): the architecture's lane offsets of
    a row's butterfly and the lanes that write each scale."""
    block = spec.epilogue.block_quant
    if block is None:
        return None
    return BlockQuant(
        block=block,
        per_tile=spec.tile.n // block,
        count="(n + BLOCK - 1) // BLOCK",
        shuffles=shuffles,
        fp8_max=rules_common.E4M3_MAX,
        writer=writer,
        host_doc=SCALES_DOC,
    )


def bias_axis(spec: Spec) -> str:
    """The axis of the kernel's tile a bias runs along, "row" or "column": the user's, swapped with
    swap AB (the kernel computes C^T, so a bias per row of C is per column of C^T)."""
    user = spec.epilogue.bias
    kernel = {"row": "col", "col": "row"}[user] if spec.swap_ab and user != "none" else user
    return "row" if kernel == "row" else "column"


def bias(spec: Spec) -> Bias | None:
    """Where the bias vector indexes the kernel's tile (None without a bias)."""
    user = spec.epilogue.bias
    if user == "none":
        return None
    row = bias_axis(spec) == "row"
    return Bias(
        axis="row" if row else "column",
        index_note=("row" if row else "column") + (" of C^T" if spec.swap_ab else ""),
        coord=0 if row else 1,
        extent="M" if row else "N",
        user_axis="row" if user == "row" else "column",
        user_extent=BIAS_DIM[user],
        note=(
            "+ bias[row]: one value per row of C"
            if user == "row"
            else "+ bias[col]: one value per column of C"
        ),
    )


def extra_tensors(spec: Spec, workspace_elems: int) -> Tensors:
    """Tensors `gemm` takes after C, in order, and passes on: the bias vector, and the stream-K
    workspace (which `launcher` allocates and the AOT shim owns, so a caller never passes it)."""
    b = bias(spec)
    host, kernel, doc = [], [], ""
    if b:
        host.append("bias")
        where = f"{b.axis} of C" + ("^T" if spec.swap_ab else "")
        out = spec.epilogue.out_dtype or spec.dtype
        kernel.append(("mBias", f"({b.extent},) {out}: one value per {where}"))
        doc += f", bias ({b.user_extent},)"
    if workspace_elems:
        host.append("workspace")
        kernel.append(("mWork", "(WORKSPACE_ELEMS,) f32: partial-tile slots, then flags"))
        doc += ", workspace (WORKSPACE_ELEMS,) f32 zeros"
    return Tensors(
        host=host, kernel=kernel, launch=list(host), doc=doc, workspace_elems=workspace_elems
    )


def workers(
    default_sm_count: int,
    gpu: str,
    capability: tuple[int, int],
    per_worker: int,
    worker: str,
    *,
    flagship: int,
    sm_cap: int | None = None,
    worker_cap: int | str | None = None,
    worker_cap_note: str = "",
) -> Workers:
    """What a kernel whose persistent grid is sized by the GPU prints (templates/common/
    workers.py.j2): `gemm` takes the GPU's SM count as a compile-time argument (`sm_count`, by
    default DEFAULT_SM_COUNT, the arch's flagship's: what a cross-compile assumes), and the
    generated max_workers(sm_count) turns it into the most workers the grid launches: one per
    `per_worker` SMs, of at most `sm_cap` SMs (the spec's sm_count), at most `worker_cap` of
    them (split-K's max_clusters, stream-K's workspace slots). `flagship`: the workers on the
    flagship GPU, as the kernel's docstring quotes them."""
    sms = f"min(sm_count, {sm_cap})" if sm_cap else "sm_count"
    expr = sms if per_worker == 1 else f"{sms} // {per_worker}"
    per = "SM" if per_worker == 1 else f"{per_worker} SMs"
    doc = (
        f"Workers the persistent grid launches at most on a GPU of sm_count SMs: {worker} per {per}"
    )
    if sm_cap:
        doc += f" of at most {sm_cap} (the spec's sm_count)"
    if worker_cap is not None:
        expr = f"min({expr}, {worker_cap})"
        doc += f", at most {worker_cap} ({worker_cap_note})"
    return Workers(
        default_sm_count=default_sm_count,
        default_sm_note=f"SMs of {gpu}: gemm's sm_count in a cross-compile; launches pass the GPU's",
        device_capability=capability,
        expr=expr,
        # the generated function's docstring, wrapped at its indentation
        doc="\n    ".join(textwrap.wrap(doc + ".", 92)),
        flagship=flagship,
    )


DOC_WIDTH = 96  # a docstring line inside a function: its 4 columns of indent left of 100


def wrap_words(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken between words only."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


# the Timeline legend of a kernel with an SMEM ring (the light kernels have none: codegen/light.py)
RING_TIMELINE = (
    "each role's loop in program order; s = ring slot, ring_next advances s and its phase"
)


def docs(spec: Spec, scheduler_kind: str, pipeline_table: list[str]) -> Docs:
    """The spec's names and the facts only the docstring prints."""
    return Docs(
        arch=spec.arch,
        swizzle=str(spec.swizzle),
        scheduler_kind=scheduler_kind,
        pipeline_table=pipeline_table,
        timeline_legend=RING_TIMELINE,
    )


def dtypes(spec: Spec) -> Dtypes:
    """The input and output dtypes, as the spec, the DSL and torch name them."""
    out = spec.epilogue.out_dtype or spec.dtype
    return Dtypes(
        name=spec.dtype,
        io=CUTLASS_DTYPE[spec.dtype],
        out=CUTLASS_DTYPE[out],
        torch=TORCH_DTYPE[spec.dtype],
        torch_out=TORCH_DTYPE[out],
        out_name=out,
    )


def tile(spec: Spec, shape_multiples: dict[str, int]) -> Tile:
    """The CTA's tile and its k-blocks (`shape_multiples` is the architecture's rule; an MN-major
    operand adds its own, rules_common.layout_multiples)."""
    t = spec.tile
    return Tile(
        name=str(t),
        shape=(t.m, t.n, t.k),
        mma_k=rules_common.mma_k(spec.dtype),
        k_blocks=rules_common.mmas_per_stage(spec),
        shape_multiples=rules_common.layout_multiples(spec, shape_multiples),
    )


MAJOR_MMA = {"k": "K", "mn": "MN"}
MAJOR_ENUM = {"k": "ROW_MAJOR", "mn": "COL_MAJOR"}  # LayoutEnum of an (M, K) or (N, K) operand


def operand_doc(name: str, rows: str, major: str) -> str:
    """One operand as the user passes it: its shape, its strides and how torch makes it."""
    if major == "k":
        return f"{name} ({rows}, K) K-major: strides (ld{name}, 1), ld{name} >= K"
    return (
        f"{name} ({rows}, K) {rows}-major: strides (1, ld{name}), ld{name} >= {rows}, the transpose "
        f"of a (K, {rows}) row-major tensor (e.g. {name} = t.t() for t of shape (K, {rows}))"
    )


def layouts(spec: Spec) -> Layouts:
    """The operands' major modes, the user's and the kernel's (swap AB exchanges A and B)."""
    kernel_a, kernel_b = (
        (spec.b_major, spec.a_major) if spec.swap_ab else (spec.a_major, spec.b_major)
    )
    mma_a, mma_b = MAJOR_MMA[kernel_a], MAJOR_MMA[kernel_b]
    order = {"k": (1, 0), "mn": (0, 1)}
    a_mode = "K-major" if spec.a_major == "k" else "M-major"
    b_mode = "K-major" if spec.b_major == "k" else "N-major"
    out_dtype = spec.epilogue.out_dtype or spec.dtype

    def row_elems(dtype: str) -> int:
        """Elements in the 16 bytes TMA aligns a row to."""
        return rules_common.TMA_ROW_ALIGN_BYTES // rules_common.DTYPE_BYTES[dtype]

    return Layouts(
        default=spec.a_major == spec.b_major == "k",
        a_major=spec.a_major,
        b_major=spec.b_major,
        mma_a=mma_a,
        mma_b=mma_b,
        smem_a=MAJOR_ENUM[kernel_a],
        smem_b=MAJOR_ENUM[kernel_b],
        a_leading=1 if spec.a_major == "k" else 0,
        b_leading=1 if spec.b_major == "k" else 0,
        a_order=order[spec.a_major],
        b_order=order[spec.b_major],
        m_divisibility=(
            rules_common.TMA_ROW_ALIGN_BYTES // rules_common.DTYPE_BYTES[spec.dtype]
            if spec.a_major == "mn"
            else 1
        ),
        a_doc=operand_doc("a", "M", spec.a_major),
        b_doc=operand_doc("b", "N", spec.b_major),
        modes=(
            "A, B K-major" if spec.a_major == spec.b_major == "k" else f"A {a_mode}, B {b_mode}"
        ),
        a_mode=a_mode,
        b_mode=b_mode,
        # 16 bytes of an N-major B's rows, and of a float8 C's (block_quant: the launcher's N
        # is a multiple of 16, so a thread's run of C is 16-byte vectors where it is that long)
        n_divisibility=math.lcm(
            8,
            row_elems(spec.dtype) if spec.b_major == "mn" else 1,
            row_elems(out_dtype) if rules_common.DTYPE_BYTES[out_dtype] == 1 else 1,
        ),
        mma_note=(
            f"the MMA's A is {mma_a}-major and its B {mma_b}-major"
            + (" (swap AB: the user's B and A)" if spec.swap_ab else "")
        ),
    )
