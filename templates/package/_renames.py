"""Kernels renamed in 0.2.0: old name -> new name (the README's "Kernel names"). For
this release the old names still work, with a DeprecationWarning naming the new one, wherever
a kernel is named: the package's kernel(), gemm_fn, precompile, its tune cache, and importing
`<package>.<arch>.<old name>`. Written by tools/kernel_renames.py; do not edit."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVED_IN = "0.3.0"  # the release that drops the old names

# names a renamed kernel took that a kernel of the same spec already had (one kernel now)
KEPT: tuple[str, ...] = ("sm100_f16_128x256x64_s4_sw128_ws_direct_grid",)

RENAMED: dict[str, str] = {
    "bw_an_128x128_tma": "sm100_bf16_128x128x64_s6_sw128_ws_amn_tma_grid",
    "bw_an_bn_128x256_tma": "sm100_bf16_128x256x64_s4_sw128_ws_amn_bmn_tma_grid",
    "bw_bn_128x256_tma": "sm100_bf16_128x256x64_s4_sw128_ws_bmn_tma_grid",
    "bw_bn_2cta_256x256_tma": "sm100_bf16_256x256x64_s6_sw128_ws_cta2_bmn_c2x1_tma_grid",
    "bw_bn_swap_128x64_persistent_tma": "sm100_bf16_128x64x64_s8_sw128_ws_swap_bmn_tma_persistent_rm",
    "bw_e4m3_bn_128x128_tma": "sm100_e4m3_128x128x128_s6_sw128_ws_bmn_tma_bf16_grid",
    "bw_f16_an_bn_128x128_tma": "sm100_f16_128x128x64_s6_sw128_ws_amn_bmn_tma_grid",
    "bw_f16_bn_128x128_persistent_tma": "sm100_f16_128x128x64_s6_sw128_ws_bmn_tma_persistent_rm",
    "bw_fn_128x256_acc2_persistent_direct_device_alpha": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_direct_fn_device_alpha_persistent_rm_g8",
    "bw_fn_128x256_acc2_persistent_direct_geglu": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_direct_fn_geglu_persistent_rm_g8",
    "bw_fn_128x256_acc2_persistent_direct_residual": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_direct_fn_residual_add_persistent_rm_g8",
    "bw_fn_128x256_acc2_persistent_direct_swiglu": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_direct_fn_swiglu_persistent_rm_g8",
    "bw_fn_128x256_direct_clamp_bias": "sm100_bf16_128x256x64_s4_sw128_ws_direct_fn_clamp_bias_grid",
    "bw_fn_e4m3_128x192_acc2_persistent_direct_g8_scale_rows": "sm100_e4m3_128x192x128_s5_sw128_ws_acc2_direct_bf16_fn_scale_rowwise_persistent_rm_g8",
    "bw_fn_e4m3_128x256_acc2_persistent_direct_scale_rows": "sm100_e4m3_128x256x128_s4_sw128_ws_acc2_direct_bf16_fn_scale_rowwise_persistent_rm_g8",
    "bw_fn_e4m3_128x256_acc2_persistent_direct_scale_tensor": "sm100_e4m3_128x256x128_s4_sw128_ws_acc2_direct_bf16_fn_scale_per_tensor_persistent_rm_g8",
    "bw_fn_e4m3_swap_128x16_direct_scale_rows": "sm100_e4m3_128x16x128_s12_sw128_ws_swap_direct_bf16_fn_scale_rowwise_grid",
    "bw_fn_e4m3_swap_128x16_splitk2_scale_rows": "sm100_e4m3_128x16x128_s8_sw128_ws_swap_direct_bf16_fn_scale_rowwise_splitk2",
    "bw_fn_e4m3_swap_128x208_persistent_direct_scale_rows": "sm100_e4m3_128x208x128_s5_sw128_ws_swap_direct_bf16_fn_scale_rowwise_persistent_rm",
    "bw_fn_swap_128x16_splitk2_device_alpha": "sm100_bf16_128x16x64_s8_sw128_ws_swap_direct_fn_device_alpha_splitk2",
    "bw_fused_direct_a1p5_b0p5_relu": "sm100_f16_128x256x64_s4_sw128_ws_direct_a1p5_b0p5_relu_grid",
    "bw_fused_direct_bf16_f32_gelu": "sm100_bf16_128x128x64_s7_sw128_ws_direct_f32_gelu_tanh_grid",
    "bw_fused_direct_bias_col": "sm100_f16_128x256x64_s4_sw128_ws_direct_biascol_grid",
    "bw_fused_direct_bias_row": "sm100_f16_128x256x64_s4_sw128_ws_direct_biasrow_grid",
    "bw_fused_persistent_2acc_direct_a0p5_b2_bias_row_silu": "sm100_f16_128x256x64_s4_sw128_ws_acc2_direct_a0p5_b2_biasrow_silu_persistent_rm",
    "bw_fused_persistent_2acc_tma_b0p5_bias_col_gelu": "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_b0p5_biascol_gelu_tanh_persistent_rm",
    "bw_fused_tma_a2_b1_relu": "sm100_f16_128x256x64_s4_sw128_ws_tma_a2_b1_relu_grid",
    "bw_fused_tma_bf16_silu": "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid",
    "bw_fused_tma_bias_col": "sm100_f16_128x256x64_s4_sw128_ws_tma_biascol_grid",
    "bw_fused_tma_bias_row": "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid",
    "bw_fused_tma_f32": "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid",
    "bw_rt_128x256_acc2_persistent_tma_a": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_art_persistent_rm",
    "bw_rt_128x256_direct_ab": "sm100_bf16_128x256x64_s4_sw128_ws_direct_art_brt_grid",
    "bw_rt_e4m3_128x256_acc2_persistent_tma_ab": "sm100_e4m3_128x256x128_s4_sw128_ws_acc2_tma_bf16_art_brt_persistent_rm_g8",
    "bw_rt_f16_128x256_tma_ab": "sm100_f16_128x256x64_s4_sw128_ws_tma_art_brt_grid",
    "bw_swap_tma_b1_biascol_silu": "sm100_bf16_128x128x64_s6_sw128_ws_swap_tma_b1_biascol_silu_persistent_rm",
    "bw_swap_tma_f32": "sm100_bf16_128x128x64_s5_sw128_ws_swap_tma_f32_persistent_rm",
    "fc_dynamic_tma_b0p5_bias_col_gelu": "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_b0p5_biascol_gelu_tanh_dynamic",
    "fc_e4m3_direct_bf16_a2_b0p5_bias_col_relu": "sm100_e4m3_128x128x128_s7_sw128_ws_direct_bf16_a2_b0p5_biascol_relu_grid",
    "fc_e4m3_persistent_2acc_tma_f32_b1_bias_row_silu": "sm100_e4m3_128x256x128_s3_sw128_ws_acc2_tma_f32_b1_biasrow_silu_persistent_rm",
    "fc_e4m3_swap_64x32_direct_f32_a2_b1_bias_row": "sm100_e4m3_64x32x128_s18_sw128_ws_swap_direct_f32_a2_b1_biasrow_grid",
    "fc_m64_direct_b1_bias_col_relu": "sm100_bf16_64x128x64_s9_sw128_ws_direct_b1_biascol_relu_grid",
    "fc_m64_tma_a0p5_b2_bias_row_gelu": "sm100_f16_64x128x64_s8_sw128_ws_tma_a0p5_b2_biasrow_gelu_tanh_grid",
    "fc_m64_tma_bias_col_silu": "sm100_bf16_64x128x64_s8_sw128_ws_tma_biascol_silu_grid",
    "fc_splitk2_direct_a1p5_b0p5_bias_col_silu": "sm100_f16_128x128x64_s5_sw128_ws_direct_a1p5_b0p5_biascol_silu_splitk2",
    "fc_splitk4_acc2_direct_f32_bias_row_relu": "sm100_bf16_128x64x64_s8_sw128_ws_acc2_direct_f32_biasrow_relu_splitk4",
    "fc_swap_128x16_direct_b0p5_bias_row_relu": "sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_b0p5_biasrow_relu_grid",
    "fc_swap_64x32_persistent_direct_bias_col_silu": "sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_biascol_silu_persistent_rm",
    "fc_swap_splitk2_128x32_direct_b0p5_bias_row_relu": "sm100_f16_128x32x64_s10_sw128_ws_swap_direct_b0p5_biasrow_relu_splitk2",
    "h_128x128_wg1_grid_direct": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid",
    "h_128x128_wg1_streamk_tma": "sm90_bf16_128x128x64_s6_sw128_ws_wg1_tma_streamk",
    "h_128x128_wg2_c1x2_persistent_tma": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_c1x2_tma_persistent_rm",
    "h_128x128_wg2_c2x1_persistent_tma": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_c2x1_tma_persistent_rm",
    "h_128x128_wg2_streamk_tma": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_tma_streamk",
    "h_128x128x32_wg1_sw64_grid_direct": "sm90_bf16_128x128x32_s14_sw64_ws_wg1_direct_grid",
    "h_128x192_wg2_c2x1_persistent_tma": "sm90_bf16_128x192x64_s4_sw128_ws_wg2_c2x1_tma_persistent_rm",
    "h_128x192_wg2_persistent_tma": "sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_persistent_rm",
    "h_128x256_wg2_c2x1_persistent_tma": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_c2x1_tma_persistent_rm",
    "h_128x256_wg2_persistent_tma": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm",
    "h_128x64_wg2_c1x2_persistent_tma": "sm90_bf16_128x64x64_s8_sw128_ws_wg2_c1x2_tma_persistent_rm",
    "h_128x64x16_wg1_sw32_persistent_tma": "sm90_bf16_128x64x16_s35_sw32_ws_wg1_tma_persistent_rm",
    "h_256x128_wg2_c2x1_persistent_tma_g8": "sm90_bf16_256x128x64_s4_sw128_ws_wg2_c2x1_tma_persistent_rm_g8",
    "h_256x128_wg2_persistent_tma_g8": "sm90_bf16_256x128x64_s4_sw128_ws_wg2_tma_persistent_rm_g8",
    "h_64x128_wg1_c1x2_grid_tma": "sm90_bf16_64x128x64_s8_sw128_ws_wg1_c1x2_tma_grid",
    "h_an_128x128_wg1_grid_direct": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_amn_direct_grid",
    "h_an_bn_128x256_wg2_persistent_tma": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_amn_bmn_tma_persistent_rm",
    "h_bias_128x128_wg1_direct_row_a2": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_a2_biasrow_grid",
    "h_bias_128x256_wg2_persistent_tma_col_gelu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_biascol_gelu_tanh_persistent_rm",
    "h_bias_swap_64x16_wg1_splitk2_separate_col_relu": "sm90_bf16_64x16x64_s22_sw128_ws_wg1_swap_direct_a2_biascol_relu_splitk2_sep",
    "h_bias_swap_64x32_wg1_splitk_col": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_biascol_splitk2",
    "h_bn_128x128_wg1_grid_direct": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_bmn_direct_grid",
    "h_bn_128x256_wg2_c2x1_persistent_tma": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_bmn_c2x1_tma_persistent_rm",
    "h_bn_128x256_wg2_persistent_tma": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_bmn_tma_persistent_rm",
    "h_bn_swap_64x64_wg1_persistent_direct": "sm90_bf16_64x64x64_s14_sw128_ws_wg1_swap_bmn_direct_persistent_rm",
    "h_e4m3_128x128_wg2_c2x1_persistent_tma": "sm90_e4m3_128x128x128_s6_sw128_ws_wg2_c2x1_tma_bf16_persistent_rm_pdl",
    "h_e4m3_128x128_wg2_persistent_tma": "sm90_e4m3_128x128x128_s6_sw128_ws_wg2_tma_bf16_persistent_rm_pdl",
    "h_e4m3_128x128_wg2_streamk": "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_bf16_streamk_pdl",
    "h_e4m3_128x128x64_wg1_sw64_grid_direct": "sm90_e4m3_128x128x64_s14_sw64_ws_wg1_direct_bf16_grid_pdl",
    "h_e4m3_128x192_wg2_c2x1_persistent_tma": "sm90_e4m3_128x192x128_s4_sw128_ws_wg2_c2x1_tma_bf16_persistent_rm_pdl",
    "h_e4m3_128x192_wg2_persistent_tma": "sm90_e4m3_128x192x128_s4_sw128_ws_wg2_tma_bf16_persistent_rm_pdl",
    "h_e4m3_128x256_wg2_persistent_tma": "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_tma_bf16_persistent_rm_g8_pdl",
    "h_e4m3_128x64_wg2_c1x2_persistent_tma": "sm90_e4m3_128x64x128_s8_sw128_ws_wg2_c1x2_tma_bf16_persistent_rm_pdl",
    "h_e4m3_128x64_wg2_persistent_tma": "sm90_e4m3_128x64x128_s8_sw128_ws_wg2_tma_bf16_persistent_rm_pdl",
    "h_e4m3_64x128_wg1_grid_direct": "sm90_e4m3_64x128x128_s9_sw128_ws_wg1_direct_bf16_grid_pdl",
    "h_e4m3_swap_64x128_splitk2": "sm90_e4m3_64x128x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "h_e4m3_swap_64x128_streamk": "sm90_e4m3_64x128x128_s9_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "h_e4m3_swap_64x16_splitk2": "sm90_e4m3_64x16x128_s22_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "h_e4m3_swap_64x256_streamk": "sm90_e4m3_64x256x128_s5_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "h_e4m3_swap_64x32_splitk2": "sm90_e4m3_64x32x128_s18_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "h_e4m3_swap_64x32_streamk": "sm90_e4m3_64x32x128_s18_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "h_e4m3_swap_64x64_splitk2": "sm90_e4m3_64x64x128_s13_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "h_e4m3_swap_64x64_streamk": "sm90_e4m3_64x64x128_s14_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "h_f16_128x256_wg2_persistent_tma": "sm90_f16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm",
    "h_f16_an_bn_128x128_wg1_grid_direct": "sm90_f16_128x128x64_s7_sw128_ws_wg1_amn_bmn_direct_grid",
    "h_f16_bn_128x256_wg2_persistent_tma": "sm90_f16_128x256x64_s4_sw128_ws_wg2_bmn_tma_persistent_rm",
    "h_fn_128x128_wg1_grid_direct_clamp_bias": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_fn_clamp_bias_grid",
    "h_fn_128x128_wg2_persistent_direct_geglu": "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_geglu_persistent_rm_pdl",
    "h_fn_128x128_wg2_persistent_direct_residual": "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_residual_add_persistent_rm_pdl",
    "h_fn_128x128_wg2_persistent_direct_swiglu": "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_swiglu_persistent_rm_pdl",
    "h_fn_128x128_wg2_persistent_tma_gelu_residual": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_tma_fn_gelu_tanh_residual_persistent_rm_pdl",
    "h_fn_128x224_wg2_persistent_tma_g8_device_alpha": "sm90_bf16_128x224x64_s4_sw128_ws_wg2_tma_fn_device_alpha_persistent_rm_g8",
    "h_fn_64x128_wg1_persistent_tma_device_alpha": "sm90_bf16_64x128x64_s8_sw128_ws_wg1_tma_fn_device_alpha_persistent_rm",
    "h_fn_e4m3_128x128_wg2_persistent_direct_f16_scale_tensor": "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_f16_fn_scale_per_tensor_persistent_rm_pdl",
    "h_fn_e4m3_128x128_wg2_persistent_direct_scale_rows": "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_bf16_fn_scale_rowwise_persistent_rm_pdl",
    "h_fn_e4m3_128x128_wg2_persistent_direct_scale_tensor": "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_bf16_fn_scale_per_tensor_persistent_rm_pdl",
    "h_fn_e4m3_128x128_wg2_persistent_tma_scale_rows": "sm90_e4m3_128x128x128_s6_sw128_ws_wg2_tma_bf16_fn_scale_rowwise_persistent_rm_pdl",
    "h_fn_e4m3_128x160_wg2_persistent_tma_g8_scale_rows": "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_tma_bf16_fn_scale_rowwise_persistent_rm_g8_pdl",
    "h_fn_e4m3_128x224_wg2_persistent_tma_g8_scale_rows": "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_fn_scale_rowwise_persistent_rm_g8_pdl",
    "h_fn_e4m3_128x224_wg2_persistent_tma_g8_scale_tensor": "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_fn_scale_per_tensor_persistent_rm_g8_pdl",
    "h_fn_e4m3_128x256_wg2_persistent_tma_g8_scale_rows": "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_tma_bf16_fn_scale_rowwise_persistent_rm_g8_pdl",
    "h_fn_e4m3_64x128_wg1_persistent_tma_scale_rows": "sm90_e4m3_64x128x128_s8_sw128_ws_wg1_tma_bf16_fn_scale_rowwise_persistent_rm_pdl",
    "h_fn_e4m3_64x80_wg1_persistent_tma_scale_rows": "sm90_e4m3_64x80x128_s12_sw128_ws_wg1_tma_bf16_fn_scale_rowwise_persistent_rm_pdl",
    "h_fn_e4m3_swap_128x16_wg2_grid_direct_scale_rows": "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_bf16_fn_scale_rowwise_grid_pdl",
    "h_fn_e4m3_swap_128x32_splitk2_scale_rows": "sm90_e4m3_128x32x128_s8_sw128_ws_wg2_swap_direct_bf16_fn_scale_rowwise_splitk2_pdl",
    "h_fn_e4m3_swap_128x8_splitk2_scale_rows": "sm90_e4m3_128x8x128_s8_sw128_ws_wg2_swap_direct_bf16_fn_scale_rowwise_splitk2_pdl",
    "h_fn_e4m3_swap_64x32_splitk4_separate_scale_rows": "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_splitk4_sep_pdl",
    "h_fn_e4m3_swap_64x32_streamk_scale_rows": "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_streamk_pdl",
    "h_fn_e4m3_swap_64x32_streamk_scale_tensor": "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_per_tensor_streamk_pdl",
    "h_fn_e4m3_swap_64x8_splitk2_scale_rows": "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_splitk2_pdl",
    "h_fn_e4m3_swap_64x8_splitk2_scale_tensor": "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_per_tensor_splitk2_pdl",
    "h_fn_f16_128x256_wg2_persistent_tma_device_alpha": "sm90_f16_128x256x64_s4_sw128_ws_wg2_tma_fn_device_alpha_persistent_rm",
    "h_fn_swap_128x16_wg2_grid_direct_device_alpha": "sm90_bf16_128x16x64_s8_sw128_ws_wg2_swap_direct_fn_device_alpha_grid",
    "h_fn_swap_128x16_wg2_grid_direct_geglu": "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_geglu_grid_pdl",
    "h_fn_swap_128x16_wg2_grid_direct_residual": "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_residual_add_grid_pdl",
    "h_fn_swap_128x16_wg2_grid_direct_swiglu": "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl",
    "h_fn_swap_128x32_splitk2_device_alpha": "sm90_bf16_128x32x64_s8_sw128_ws_wg2_swap_direct_fn_device_alpha_splitk2",
    "h_fn_swap_128x8_splitk2_device_alpha": "sm90_bf16_128x8x64_s8_sw128_ws_wg2_swap_direct_fn_device_alpha_splitk2",
    "h_fused_128x128_wg1_direct_a1p5_b0p5_relu": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_a1p5_b0p5_relu_grid",
    "h_fused_128x128_wg1_direct_f32_gelu": "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_f32_gelu_tanh_grid",
    "h_fused_128x256_wg2_persistent_tma_b1_relu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_b1_relu_persistent_rm",
    "h_fused_128x256_wg2_persistent_tma_silu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_a0p5_silu_persistent_rm",
    "h_fused_128x64_wg1_splitk3_separate_bias_row_gelu": "sm90_bf16_128x64x64_s9_sw128_ws_wg1_direct_f32_a0p5_b1p5_biasrow_gelu_tanh_splitk3_sep_mt1024",
    "h_fused_pp_128x128_persistent_tma_a2_b0p5_bias_col": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_pp_tma_a2_b0p5_biascol_persistent_rm",
    "h_rt_128x128_wg2_persistent_tma_a": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_tma_art_persistent_rm",
    "h_rt_128x128_wg2_persistent_tma_ab": "sm90_bf16_128x128x64_s6_sw128_ws_wg2_tma_art_brt_persistent_rm",
    "h_rt_e4m3_128x128_wg2_persistent_direct_ab": "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_bf16_art_brt_persistent_rm_pdl",
    "h_rt_f16_128x128_wg1_grid_direct_ab": "sm90_f16_128x128x64_s7_sw128_ws_wg1_direct_art_brt_grid",
    "h_rt_swap_128x16_wg2_grid_direct_ab": "sm90_bf16_128x16x64_s8_sw128_ws_wg2_swap_direct_art_brt_grid",
    "h_swap_64x32_wg1_splitk4_separate": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk4_sep",
    "h_swap_64x64x32_wg1_sw64_persistent_direct": "sm90_bf16_64x64x32_s28_sw64_ws_wg1_swap_direct_persistent_rm",
    "ladder_1_kloop": "sm100_f16_128x256x16_s1_inter_kloop_direct_grid",
    "ladder_2_ring": "sm100_f16_128x256x16_s4_inter_kloop_direct_grid",
    "ladder_3_warp_spec": "sm100_f16_128x256x16_s4_inter_ws_direct_grid",
    "ladder_4_k64_sw128": "sm100_f16_128x256x64_s4_sw128_ws_direct_grid",
    "ladder_5_tma_epilogue": "sm100_f16_128x256x64_s4_sw128_ws_tma_grid",
    "ladder_6_multicast_2x2": "sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid",
    "ladder_7_2cta": "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid",
    "ladder_8_persistent_2acc": "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm",
    "lib_128x256_bias_col": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_biascol_persistent_rm",
    "lib_128x256_bias_col_relu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_biascol_relu_persistent_rm",
    "lib_128x256_bias_col_silu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_biascol_silu_persistent_rm",
    "lib_128x256_gelu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_gelu_tanh_persistent_rm",
    "lib_128x256_silu": "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_silu_persistent_rm",
    "lib_swap_64x32_bias_col": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_biascol_persistent_rm",
    "lib_swap_64x32_bias_col_silu": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_biascol_silu_persistent_rm",
    "lib_swap_64x32_gelu": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_gelu_tanh_persistent_rm",
    "lib_swap_64x32_silu": "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_silu_persistent_rm",
    "sched_dynamic": "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic",
    "sched_pair_rn_g4": "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4",
    "sched_persistent_g8": "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8",
    "sched_persistent_mcast_2x1_g8_direct": "sm100_f16_128x128x64_s7_sw128_ws_acc2_c2x1_direct_persistent_rm_g8",
    "sched_persistent_mcast_2x2": "sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm",
    "sched_splitk2": "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2",
    "sched_splitk4_acc2": "sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32",
    "seed_s1_k16_inter": "sm100_f16_128x256x16_s1_inter_ws_direct_grid",
    "seed_s4_k16_inter": "sm100_f16_128x256x16_s4_inter_ws_direct_grid",
    "seed_s4_k64_inter": "sm100_f16_128x256x64_s4_inter_ws_direct_grid",
    "seed_s4_k64_sw128": "sm100_f16_128x256x64_s4_sw128_ws_direct_grid",
    "sep_128x64_s4_bias": "sm100_bf16_128x64x64_s9_sw128_ws_direct_biascol_splitk4_sep",
    "sk_128x128_direct": "sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk",
    "sk_128x256_tma_acc2": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk",
    "sk_128x256_tma_acc2_wb": "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk_wb",
    "sk_128x32_direct_acc2": "sm100_bf16_128x32x64_s11_sw128_ws_acc2_direct_streamk",
    "sm90_e4m3_128x112x128_s7_sw128_ws_wg2_swap_direct_bf16_persistent_rm": "sm90_e4m3_128x112x128_s7_sw128_ws_wg2_swap_direct_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x112x128_s7_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x112x128_s7_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm_g8": "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm_g8_pdl",
    "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_tma_bf16_persistent_rm_g8": "sm90_e4m3_128x160x128_s5_sw128_ws_wg2_tma_bf16_persistent_rm_g8_pdl",
    "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2": "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2_pdl",
    "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_f16_splitk2": "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_f16_splitk2_pdl",
    "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_f32_splitk2": "sm90_e4m3_128x16x128_s8_sw128_ws_wg2_swap_direct_f32_splitk2_pdl",
    "sm90_e4m3_128x192x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x192x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x200x128_s5_sw128_ws_wg2_swap_direct_bf16_persistent_rm": "sm90_e4m3_128x200x128_s5_sw128_ws_wg2_swap_direct_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x200x128_s5_sw128_ws_wg2_swap_direct_bf16_streamk": "sm90_e4m3_128x200x128_s5_sw128_ws_wg2_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_128x208x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x208x128_s5_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x208x128_s5_sw128_ws_wg2_swap_tma_bf16_streamk_wb": "sm90_e4m3_128x208x128_s5_sw128_ws_wg2_swap_tma_bf16_streamk_wb_pdl",
    "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_persistent_rm_g8": "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_persistent_rm_g8_pdl",
    "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_direct_f32_persistent_rm_g8": "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_direct_f32_persistent_rm_g8_pdl",
    "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_tma_f16_persistent_rm_g8": "sm90_e4m3_128x256x128_s4_sw128_ws_wg2_tma_f16_persistent_rm_g8_pdl",
    "sm90_e4m3_128x288x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm": "sm90_e4m3_128x288x128_s4_sw128_ws_wg2_swap_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x32x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2": "sm90_e4m3_128x32x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2_pdl",
    "sm90_e4m3_128x32x128_s8_sw128_ws_wg2_swap_direct_bf16_streamk": "sm90_e4m3_128x32x128_s8_sw128_ws_wg2_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_128x80x128_s8_sw128_ws_wg2_tma_bf16_persistent_rm": "sm90_e4m3_128x80x128_s8_sw128_ws_wg2_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_128x8x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2": "sm90_e4m3_128x8x128_s8_sw128_ws_wg2_swap_direct_bf16_splitk2_pdl",
    "sm90_e4m3_128x8x128_s8_sw128_ws_wg2_swap_direct_bf16_streamk": "sm90_e4m3_128x8x128_s8_sw128_ws_wg2_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_64x128x128_s8_sw128_ws_wg1_tma_bf16_persistent_rm": "sm90_e4m3_64x128x128_s8_sw128_ws_wg1_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_64x16x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk": "sm90_e4m3_64x16x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_64x16x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4": "sm90_e4m3_64x16x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4_pdl",
    "sm90_e4m3_64x16x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8": "sm90_e4m3_64x16x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8_pdl",
    "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk": "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4": "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4_pdl",
    "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8": "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8_pdl",
    "sm90_e4m3_64x64x128_s13_sw128_ws_wg1_tma_bf16_persistent_rm": "sm90_e4m3_64x64x128_s13_sw128_ws_wg1_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_64x64x128_s13_sw128_ws_wg1_tma_bf16_persistent_rm_g8": "sm90_e4m3_64x64x128_s13_sw128_ws_wg1_tma_bf16_persistent_rm_g8_pdl",
    "sm90_e4m3_64x80x128_s12_sw128_ws_wg1_tma_bf16_persistent_rm": "sm90_e4m3_64x80x128_s12_sw128_ws_wg1_tma_bf16_persistent_rm_pdl",
    "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_splitk2": "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk": "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_streamk_pdl",
    "sm90_e4m3_64x8x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4": "sm90_e4m3_64x8x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk4_pdl",
    "sm90_e4m3_64x8x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8": "sm90_e4m3_64x8x128_s8_sw128_ws_wg1_swap_direct_bf16_splitk8_pdl",
    "sm90_e4m3_64x96x128_s10_sw128_ws_wg1_swap_direct_bf16_splitk2": "sm90_e4m3_64x96x128_s10_sw128_ws_wg1_swap_direct_bf16_splitk2_pdl",
    "sm90_e4m3_64x96x128_s10_sw128_ws_wg1_tma_bf16_persistent_rm": "sm90_e4m3_64x96x128_s10_sw128_ws_wg1_tma_bf16_persistent_rm_pdl",
    "smallm_128x16_swap": "sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_grid",
    "smallm_128x32": "sm100_bf16_128x32x64_s11_sw128_ws_direct_grid",
    "smallm_64x128_tma": "sm100_bf16_64x128x64_s8_sw128_ws_tma_grid",
    "smallm_64x16_swap": "sm100_bf16_64x16x64_s22_sw128_ws_swap_direct_grid",
    "smallm_64x32_swap_persistent": "sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_persistent_rm",
    "smallm_64x64": "sm100_bf16_64x64x64_s14_sw128_ws_direct_grid",
    "smallm_64x64_swap": "sm100_bf16_64x64x64_s14_sw128_ws_swap_direct_grid",
    "smallm_e4m3_128x256_tma_bf16": "sm100_e4m3_128x256x128_s4_sw128_ws_acc2_tma_bf16_persistent_rm",
    "smallm_e4m3_64x32_swap_f32": "sm100_e4m3_64x32x128_s18_sw128_ws_swap_direct_f32_grid",
}


def current(name: str, stacklevel: int = 3) -> str:
    """`name`, or the new name of a renamed kernel (with a DeprecationWarning naming it)."""
    new = RENAMED.get(name)
    if new is None:
        return name
    warnings.warn(
        f"kernel {name!r} is now named {new!r}; the old name goes in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return new


class _Alias(importlib.abc.Loader):
    """Loads a renamed kernel's module under its old name: the module itself, not a copy."""

    def __init__(self, module) -> None:
        self.module, self.own_spec = module, module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        module.__spec__ = self.own_spec  # the import set the alias's; the module keeps its own


_PACKAGES: set[str] = set()  # the arch packages that called aliases()


class _OldModules(importlib.abc.MetaPathFinder):
    """Finds `<arch package>.<old name>` for the arch packages that called aliases()."""

    def find_spec(self, fullname, path=None, target=None):
        parent, _, old = fullname.rpartition(".")
        arch = parent.rpartition(".")[2]  # a kernel's name starts with its arch folder's
        if parent not in _PACKAGES or not RENAMED.get(old, "").startswith(f"{arch}_"):
            return None
        module = importlib.import_module(f"{parent}.{current(old)}")
        return importlib.util.spec_from_loader(fullname, _Alias(module))


def aliases(arch_package: str) -> None:
    """Let `import <arch_package>.<old name>` import the renamed kernel's module."""
    if not any(isinstance(f, _OldModules) for f in sys.meta_path):
        sys.meta_path.append(_OldModules())
    _PACKAGES.add(arch_package)
