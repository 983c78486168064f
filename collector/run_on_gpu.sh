#!/usr/bin/env bash
# Collect the quick kernel grid on this machine's GPU into data/measured/<system>/torch/<torch version>/ and
# compare our synthesized tables for that system against it. Run from anywhere inside the repository:
#
#   collector/run_on_gpu.sh                  # system from the GPU name (H200 -> h200_sxm)
#   SYSTEM=h200_sxm MAX_MINUTES=8 collector/run_on_gpu.sh
#   FULL=1 collector/run_on_gpu.sh           # the full grid instead of --quick
#   MEASURED=data/measured/h200_sxm/torch/2.11.0 collector/run_on_gpu.sh   # compare only, no collection
#
# Needs python3 with PyTorch (CUDA build) and Node 20 with the repository's npm dependencies installed.
set -euo pipefail

cd "$(dirname "$0")/.."
MAX_MINUTES="${MAX_MINUTES:-8}"
GRID_FLAG="--quick"
[[ -n "${FULL:-}" ]] && GRID_FLAG=""

if [[ -n "${MEASURED:-}" ]]; then
  echo "comparing existing measured tables: $MEASURED"
else
  python3 - <<'PY'
import sys
try:
    import torch
except ImportError:
    sys.exit("run_on_gpu.sh: PyTorch is not installed for python3")
if not torch.cuda.is_available():
    sys.exit("run_on_gpu.sh: PyTorch sees no CUDA GPU")
print(f"GPU: {torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
PY

  SYSTEM_FLAG=()
  [[ -n "${SYSTEM:-}" ]] && SYSTEM_FLAG=(--system "$SYSTEM")

  # The collector prints the table directory as its last stdout line.
  MEASURED="$(python3 -m collector --out data/measured $GRID_FLAG --max-minutes "$MAX_MINUTES" "${SYSTEM_FLAG[@]}" | tail -n 1)"
  echo "measured tables: $MEASURED"
  ls -l "$MEASURED"
fi

# The CLI: $CONFIGURE if set, else the installed `configure`, else the built package, else the sources via tsx.
if [[ -n "${CONFIGURE:-}" ]]; then
  read -r -a CONFIGURE <<<"$CONFIGURE"
elif command -v configure >/dev/null 2>&1; then
  CONFIGURE=(configure)
elif [[ -f dist/cli/main.js ]]; then
  CONFIGURE=(node dist/cli/main.js)
else
  CONFIGURE=(npx --no-install tsx src/cli/main.ts)
fi

# Measured tables sit apart from data/perf, which `npm run perf:build` rewrites whole.
SYS_NAME="$(basename "$(dirname "$(dirname "$MEASURED")")")"
SYS_DIR="data/perf/$SYS_NAME"
found=0
for synth in "$SYS_DIR"/*/*/; do
  synth="${synth%/}"
  # Versions that borrow another version's tables (no tables.bin of their own) would repeat a comparison.
  [[ -f "$synth/tables.bin" ]] || continue
  found=1
  echo
  echo "== $SYS_NAME: measured (A) vs $(basename "$(dirname "$synth")") $(basename "$synth") synthesized (B)"
  "${CONFIGURE[@]}" perf compare "$MEASURED" "$synth" --interpolate --system "$SYS_NAME"
done
if [[ "$found" == 0 ]]; then
  echo "no synthesized tables under $SYS_DIR to compare against (build them with npm run perf:build)"
fi
