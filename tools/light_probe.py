"""Light decode GEMM probe: C[M, N] = A[M, K] @ B[N, K]^T for small M, with no TMA, no mbarrier
and no warp specialization, to measure how low the fixed cost of a decode kernel can go.

Each warp computes swap AB with warp-level `mma.sync` (m16n8k16 bf16, m16n8k32 e4m3): 16 weight
rows (B) per MMA M, 8 tokens (A) per MMA N. Operands go straight from global memory into
registers with 16-byte loads: the K order inside a chunk of 4 x VEC elements is permuted the
same way for both operands (a sum over K does not care), so that lane q's VEC contiguous
elements of a row are exactly the values its A and B fragments need for two MMAs:

    memory k = chunk * 4 * VEC + VEC * q + 2 * PAIR * kb + PAIR * kh + e
    MMA kb's logical k = 2 * PAIR * q... (lane q holds k = PAIR * q + e + 4 * PAIR * kh)

(PAIR = values per 32-bit register: 2 bf16, 4 e4m3; VEC = 4 * PAIR, 16 bytes.) K_WARPS warps
of a CTA take interleaved chunks of K and add their f32 partials through shared memory; the CTA
covers 16 * ROW_GROUPS rows of B and 8 * TOKEN_GROUPS rows of A.

    python tools/light_probe.py            (CPU: cross-compile every config for sm_90a, sm_100a)

This is the prototype the light kernels grew from, kept to reproduce the probe's table in
BENCHMARKS.md (2026-12-06, second run). The shipped kernel is templates/light/gemm.py.j2
(codegen/light.py): try new configurations as specs there (`codegen sweep` times them), not here.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass.cute.nvgpu import warp


@cute.kernel
def light_kernel(
    tiled_mma: cute.TiledMma,
    mA: cute.Tensor,
    mB: cute.Tensor,
    mC: cute.Tensor,
    RG: cutlass.Constexpr[int],
    TG: cutlass.Constexpr[int],
    KW: cutlass.Constexpr[int],
    UNROLL: cutlass.Constexpr[int],
    PAIR: cutlass.Constexpr[int],
):
    VEC = 4 * PAIR
    tidx, _, _ = cute.arch.thread_idx()
    bn, bm, _ = cute.arch.block_idx()
    wid = tidx // 32
    lane = tidx % 32
    g = lane // 4
    q = lane % 4
    m_size = mA.shape[0]
    n_size = mB.shape[0]
    kvecs = mA.shape[1] // VEC  # 16-byte vectors per row
    # (1, VEC) vectors of a row: ((1, VEC), (rows, kvecs))
    vA = cute.zipped_divide(mA, (1, VEC))
    vB = cute.zipped_divide(mB, (1, VEC))
    io = mA.element_type

    acc = cute.make_rmem_tensor((4, RG, TG), cutlass.Float32)
    acc.fill(0.0)
    # registers of one chunk: B rows (g, g + 8) of each row group, A row g of each token group
    w_regs = cute.make_rmem_tensor((VEC, 2, RG, UNROLL), io)
    x_regs = cute.make_rmem_tensor((VEC, TG, UNROLL), io)
    a_frag = cute.make_rmem_tensor((4 * PAIR, 1, 1), io)  # (V, M, K) of one MMA
    b_frag = cute.make_rmem_tensor((2 * PAIR, 1, 1), io)
    c_frag = cute.make_rmem_tensor((4, 1, 1), cutlass.Float32)

    row0 = bn * (16 * RG) + g
    tok0 = bm * (8 * TG) + g
    chunks = (kvecs + 3) // 4
    step = KW * UNROLL
    full = chunks // step  # iterations whose chunks all lie inside K (but the last may be partial)
    it = 0
    for it in cutlass.range(full + 1):
        for u in cutlass.range_constexpr(UNROLL):
            kv = (it * step + u * KW + wid) * 4 + q
            live = kv < kvecs
            for rg in cutlass.range_constexpr(RG):
                for rh in cutlass.range_constexpr(2):
                    row = cutlass.min(row0 + rg * 16 + rh * 8, n_size - 1)
                    dst = w_regs[None, rh, rg, u]
                    if live:
                        dst.store(vB[(None, (row, kv))].load().reshape((VEC,)))
                    else:
                        dst.fill(0.0)
            for tg in cutlass.range_constexpr(TG):
                tok = cutlass.min(tok0 + tg * 8, m_size - 1)
                dst = x_regs[None, tg, u]
                if live:
                    dst.store(vA[(None, (tok, kv))].load().reshape((VEC,)))
                else:
                    dst.fill(0.0)
        for u in cutlass.range_constexpr(UNROLL):
            for kb in cutlass.range_constexpr(2):
                for rg in cutlass.range_constexpr(RG):
                    for kh in cutlass.range_constexpr(2):
                        for rh in cutlass.range_constexpr(2):
                            for e in cutlass.range_constexpr(PAIR):
                                a_frag[e + PAIR * rh + 2 * PAIR * kh, 0, 0] = w_regs[
                                    2 * PAIR * kb + PAIR * kh + e, rh, rg, u
                                ]
                    for tg in cutlass.range_constexpr(TG):
                        for kh in cutlass.range_constexpr(2):
                            for e in cutlass.range_constexpr(PAIR):
                                b_frag[e + PAIR * kh, 0, 0] = x_regs[2 * PAIR * kb + PAIR * kh + e, tg, u]
                        for v in cutlass.range_constexpr(4):
                            c_frag[v, 0, 0] = acc[v, rg, tg]
                        cute.gemm(tiled_mma, c_frag, a_frag, b_frag, c_frag)
                        for v in cutlass.range_constexpr(4):
                            acc[v, rg, tg] = c_frag[v, 0, 0]

    # sum the K_WARPS partials: (value, lane) of each warp through shared memory
    E = 4 * RG * TG * 32
    smem = utils.SmemAllocator()
    red = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 4, RG, TG, KW)), 16)
    for rg in cutlass.range_constexpr(RG):
        for tg in cutlass.range_constexpr(TG):
            for v in cutlass.range_constexpr(4):
                red[lane, v, rg, tg, wid] = acc[v, rg, tg]
    cute.arch.sync_threads()
    # thread t -> output (token, row) with rows fastest: coalesced stores of C's rows
    for base in cutlass.range_constexpr(0, E, 32 * KW):
        t = base + tidx
        row_l = t % (16 * RG)
        tok_l = t // (16 * RG)
        tok = bm * (8 * TG) + tok_l
        row = bn * (16 * RG) + row_l
        if tok < m_size and row < n_size:
            rg = row_l // 16
            rh = (row_l % 16) // 8
            gg = row_l % 8
            tg = tok_l // 8
            qq = (tok_l % 8) // 2
            e = tok_l % 2
            ln = 4 * gg + qq
            v = e + 2 * rh
            s = cutlass.Float32(0.0)
            for w in cutlass.range_constexpr(KW):
                s += red[ln, v, rg, tg, w]
            mC[tok, row] = s.to(mC.element_type)


def mma_op(io):
    if io == cutlass.Float8E4M3FN:
        return warp.MmaFP8Op(io, cutlass.Float32, (16, 8, 32))
    return warp.MmaF16BF16Op(io, cutlass.Float32, (16, 8, 16))


def make_gemm(rg: int, tg: int, kw: int, unroll: int):
    """The host function of one configuration: gemm(a, b, c, stream)."""

    @cute.jit
    def gemm(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream):
        io = mA.element_type
        pair = 32 // io.width  # values per 32-bit register
        tiled_mma = cute.make_tiled_mma(mma_op(io))
        m, n = mA.shape[0], mB.shape[0]
        grid = ((n + 16 * rg - 1) // (16 * rg), (m + 8 * tg - 1) // (8 * tg), 1)
        smem_bytes = 4 * 4 * rg * tg * 32 * kw + 64
        light_kernel(tiled_mma, mA, mB, mC, rg, tg, kw, unroll, pair).launch(
            grid=grid, block=(32 * kw, 1, 1), smem=smem_bytes, stream=stream
        )

    return gemm


def compile_args(io, out, tvm_ffi: bool = False, kdiv: int = 16):
    from cutlass.cute.runtime import make_fake_compact_tensor
    from cutlass.runtime import make_fake_stream

    m, n, k = cute.sym_int32(), cute.sym_int32(), cute.sym_int32(divisibility=kdiv)

    def fake(dtype, rows, cols):
        return make_fake_compact_tensor(dtype, (rows, cols), stride_order=(1, 0), assumed_align=16)

    stream = make_fake_stream(use_tvm_ffi_env_stream=True) if tvm_ffi else make_fake_stream()
    return fake(io, m, k), fake(io, n, k), fake(out, m, n), stream


def compile_config(io, rg, tg, kw, unroll, arch=None, tvm_ffi=True, dump=None):
    opts = []
    if tvm_ffi:
        opts.append("--enable-tvm-ffi")
    if arch:
        opts.append(f"--gpu-arch {arch}")
    if dump:
        opts.append(f"--keep-ptx --dump-dir {dump}")
    kdiv = 8 if io == cutlass.BFloat16 else 16
    args = compile_args(io, cutlass.BFloat16, tvm_ffi, kdiv)
    return cute.compile(make_gemm(rg, tg, kw, unroll), *args, options=" ".join(opts))


if __name__ == "__main__":
    import os
    import re
    import sys
    import tempfile
    from pathlib import Path

    for arch in ("sm_90a", "sm_100a"):
        os.environ["CUTE_DSL_ARCH"] = arch
        for io in (cutlass.BFloat16, cutlass.Float8E4M3FN):
            cfg = tuple(int(x) for x in (sys.argv[1:5] or (1, 1, 4, 4)))
            with tempfile.TemporaryDirectory() as d:
                compile_config(io, *cfg, arch=arch, tvm_ffi=False, dump=d)
                ptx = "".join(p.read_text() for p in Path(d).rglob("*.ptx"))
                counts = {
                    key: len(re.findall(pat, ptx))
                    for key, pat in (
                        ("mma.sync", r"\bmma\.sync"),
                        ("ld.global.v4", r"ld\.global(\.\w+)*\.v4"),
                        ("ld.global", r"ld\.global"),
                        ("st.global", r"st\.global"),
                        ("local", r"\.local"),
                    )
                }
                print(arch, io.__name__, cfg, counts)
