#!/usr/bin/env bash
# Render the shipped specs with pdl = true for every kernel into generated-pdl/ (not committed),
# to measure programmatic dependent launch against the shipped package: the same kernels, names
# and dispatcher, launched with PDL. Run from the repository root; remove both folders after.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf specs-pdl generated-pdl
cp -r specs specs-pdl
find specs-pdl -name '*.toml' -not -path '*/tuning/*' -not -path '*/shapes/*' \
  -exec sed -i '/^pdl = /d; s/^\[defaults\]$/[defaults]\npdl = true/' {} +
.venv/bin/codegen render specs-pdl/ -o generated-pdl --root . --tuning specs/tuning
