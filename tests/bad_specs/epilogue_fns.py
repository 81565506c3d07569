"""Epilogue functions with mistakes, for tests/bad_specs/epilogue_fn.toml."""

import torch

from codegen.epilogue_fn import Acc, ColVec, Gate, Scalar, Tile, Up


def unknown_kind(acc: Acc, scale: torch.Tensor):
    return acc * scale


def no_acc(scale: Scalar):
    return scale


def uses_torch(acc: Acc, bias: ColVec):
    return torch.relu(acc + bias)


def fine(acc: Acc, bias: ColVec):
    return acc + bias


def gated_with_tile(gate: Gate, up: Up, residual: Tile):
    return gate * up + residual


def gated(gate: Gate, up: Up):
    return gate * up
