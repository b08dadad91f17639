#!/usr/bin/env bash
# The GPU device script: on a machine with a GPU and a Python that already holds torch (a
# site's module, a vendor image), runs in one go what we need to know about the GPU path and
# writes every output into one folder. The machine is lent for minutes, so the script works
# within a time budget, the cheapest and most informative steps first:
#
#   1. sysinfo, nvidia-smi's own view (kept for the parser's regression tests), the
#      interpreter's packages; the install over that interpreter (offline, from a wheelhouse);
#      `check`; `prepare` of the first wave;
#   2. one benchmark of each kind at smoke fidelity (FIRST), and its report as text, JSON, HTML;
#   3. benchit on an example script (torch-eager and torch-compiled), `benchit ops` on the
#      operator configs in each exec mode (and under `ncu`/`nsys` where the machine has them),
#      and the same configs through PARAM's own runner (its source in xtask/gpu/param) with a
#      table of both times per operator;
#   4. with the time left: the rest of the suite at smoke, then the fidelities after it.
#
# A step that would pass the budget is skipped and says so; a step never runs past the
# budget's end (its time limit is what is left); the archive of the outputs is always written,
# after a failure or an interrupt too.
#
# Usage:   xtask/gpu/run.sh OUT_DIR
# Needs:   what `xtask/gpu/pack.sh` puts in .gpu/ (release binaries, a wheelhouse), which the
#          device tool carries (carry: [".gpu"]); PARAM's source is in the working tree
#          (xtask/gpu/param). `cargo xtask gpu-rehearsal` runs this script on a CPU machine.
#
# Environment (each optional):
#   BUDGET_S            seconds the whole script may take            [480]
#   MILABENCH, BENCHIT  the binaries            [.gpu/bin/…, else target/release/…]
#   PYTHON              the Python with torch   [python3]
#   WHEELS              wheelhouse for what PYTHON lacks (`milabench bundle`) [.gpu/wheels]
#   PARAM               the folder holding PARAM's `param_bench` package [xtask/gpu/param]
#   CONFIG              the suite               [config/standard.yaml]
#   FIRST               the first wave, one benchmark of each kind
#                       [resnet50,bert-fp16,dlrm,flops,opbench] (vLLM is not packed)
#   FIDELITIES          fidelities to run after the first wave, in order; empty: none ["smoke normal"]
#   BASE                base folder (environments, data, runs) [/tmp/milabench-gpu]
#   BENCHIT_DEVICE      benchit's --device       [nvidia]
#   OPS_DEVICE          benchit ops' and PARAM's --device [cuda]
#   OPS_CONFIG          the operator config [benchmarks/opbench/configs/suite.json]
#   OPS_WARMUP, OPS_ITERATIONS  per operator run              [5, 20]
#   SUITE_ARCH          MILABENCH_GPU_ARCH for the suite's steps (the rehearsal's `cpu`) [detected]
#
# `steps.txt` lists each step with its exit status and duration (or why it was skipped); the
# script's exit status is the number of failed steps (capped at 100; skipped steps do not
# count).
set -uo pipefail

out=${1:?usage: xtask/gpu/run.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
pick() { for p in "$@"; do [ -x "$p" ] && { echo "$p"; return; }; done; echo "$1"; }
milabench=${MILABENCH:-$(pick "$root/.gpu/bin/milabench" "$root/target/release/milabench")}
benchit=${BENCHIT:-$(pick "$root/.gpu/bin/benchit" "$root/target/release/benchit")}
python=${PYTHON:-python3}
wheels=${WHEELS:-$root/.gpu/wheels}
param=${PARAM:-$root/xtask/gpu/param}
config=${CONFIG:-$root/config/standard.yaml}
first=${FIRST:-resnet50,bert-fp16,dlrm,flops,opbench}
fidelities=${FIDELITIES-smoke normal}
budget=${BUDGET_S:-480}
benchit_device=${BENCHIT_DEVICE:-nvidia}
ops_device=${OPS_DEVICE:-cuda}
ops_config=${OPS_CONFIG:-$root/benchmarks/opbench/configs/suite.json}
ops_iterations=(-w "${OPS_WARMUP:-5}" -i "${OPS_ITERATIONS:-20}")
export MILABENCH_BASE=${BASE:-/tmp/milabench-gpu}
export BENCHIT_HOME=$MILABENCH_BASE/benchit
export BENCHIT_PYTHON=$python
export PYTHONUNBUFFERED=1

mkdir -p "$out" "$MILABENCH_BASE"
out=$(cd "$out" && pwd)
failed=0
: > "$out/steps.txt"

# The archive of every run folder (environments, data and caches left out), written however
# the script ends.
archive() {
    tar -czf "$out/all.tar.gz" -C "$MILABENCH_BASE" --exclude=venv --exclude=benchit \
        --exclude=data --exclude=cache --exclude=tools runs 2> /dev/null
    echo "failed steps: $failed, $SECONDS s of a $budget s budget (outputs in $out)"
}
trap archive EXIT
trap 'exit 130' INT TERM

# step NAME ESTIMATE COMMAND...: runs COMMAND with its output in NAME.log and records the
# outcome, unless fewer than ESTIMATE seconds of the budget are left; the command's time
# limit is what is left of the budget.
step() {
    local name=$1 estimate=$2; shift 2
    local left=$((budget - SECONDS))
    if [ "$left" -lt "$estimate" ]; then
        printf '%-24s skipped: %s s of the budget left, it needs about %s s\n' \
            "$name" "$left" "$estimate" | tee -a "$out/steps.txt"
        return 125
    fi
    local start=$SECONDS
    echo "==> $name: $*"
    timeout --signal=INT --kill-after=20 "$left" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    printf '%-24s exit %-3s %5ss  %s\n' "$name" "$rc" "$((SECONDS - start))" "$*" | tee -a "$out/steps.txt"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    return "$rc"
}

# Same, standard output alone into FILE (the JSON outputs must stay parseable).
step_to() {
    local name=$1 estimate=$2 file=$3; shift 3
    step "$name" "$estimate" bash -c '"$@" > "$0"' "$out/$file" "$@"
}

# reports LABEL FOLDER: the run folder's report as text, JSON and HTML.
reports() {
    local label=$1 folder=$2
    step_to "report-$label" 5 "report-$label.txt" "$milabench" report --runs "$folder"
    step_to "report-$label-json" 5 "report-$label.json" \
        "$milabench" report --runs "$folder" --format json
    step "report-$label-html" 5 "$milabench" report --runs "$folder" --format html \
        -o "$out/report-$label.html"
}

# suite_run LABEL ESTIMATE FIDELITY [SELECTION]: one run of the suite and its reports.
suite_run() {
    local label=$1 estimate=$2 fidelity=$3 selection=${4:-}
    local args=(--config "$config" --no-setup --fidelity "$fidelity" --run-name "gpu-$label")
    [ -n "$selection" ] && args+=(--select "$selection")
    step "run-$label" "$estimate" "$milabench" run "${args[@]}" &&
        reports "$label" "$MILABENCH_BASE/runs/gpu-$label"
}

install_args=(--config "$config" --python "$python" --installer pip)
if [ -d "$wheels" ]; then
    install_args+=(--offline --find-links "$wheels")
    # benchit's environment is an overlay over $BENCHIT_PYTHON too, installed by pip.
    export PIP_NO_INDEX=1 PIP_FIND_LINKS=$wheels
fi

# 1. The machine, the environments, the data of the first wave.
step_to sysinfo 5 sysinfo.json "$milabench" sysinfo --format json
command -v nvidia-smi > /dev/null && step_to nvidia-smi 5 nvidia-smi.xml nvidia-smi -q -x
step_to python-packages 5 python-packages.txt "$python" -c \
    'import importlib.metadata as m; print("\n".join(sorted({d.metadata["Name"] + "==" + d.version for d in m.distributions()})))'
# The machine's own view above; the suite's steps below may be told which family to use.
[ -n "${SUITE_ARCH:-}" ] && export MILABENCH_GPU_ARCH=$SUITE_ARCH
step install-plan 10 "$milabench" install "${install_args[@]}" --dry-run
step install 60 "$milabench" install "${install_args[@]}"
step_to check 10 check.json "$milabench" check --config "$config" --format json
step prepare 30 "$milabench" prepare --config "$config" --select "$first"

# 2. One benchmark of each kind, at smoke fidelity.
suite_run first 60 smoke "$first"

# 3. benchit, the operators, and PARAM's runner on the same configs.
step_to benchit 40 benchit.json "$benchit" benchmark "$root/benchmarks/benchit/main_guard.py" \
    --device "$benchit_device" --runtime torch-eager torch-compiled \
    --cache-dir "$MILABENCH_BASE/benchit-cache" --format json
ops_modes=(discrete)
[ "$ops_device" != cpu ] && ops_modes+=(continuous continuous_events)
for mode in "${ops_modes[@]}"; do
    step_to "benchit-ops-$mode" 20 "benchit-ops-$mode.json" "$benchit" ops --config "$ops_config" \
        --device "$ops_device" --exec-mode "$mode" --backward "${ops_iterations[@]}" \
        --output-prefix "$out/ops-$mode" --format json
done
# Nsight over a small config, where the machine has the tools (docs/gpu.md says what they gave).
for tool in ncu nsys; do
    if command -v "$tool" > /dev/null && [ "$ops_device" != cpu ]; then
        step_to "benchit-ops-$tool" 60 "benchit-ops-$tool.json" "$benchit" ops \
            --config "$root/benchmarks/opbench/configs/simple_add.json" --device "$ops_device" \
            "--$tool" --run-batch-size 2 --output-prefix "$out/ops-$tool" --format json
    else
        printf '%-24s not run: no %s here, or no GPU\n' "benchit-ops-$tool" "$tool" | tee -a "$out/steps.txt"
    fi
done
if [ -d "$param" ]; then
    step param-ops 30 "$python" "$root/xtask/gpu/param_side_by_side.py" --param "$param" \
        --config "$ops_config" --device "$ops_device" --backward "${ops_iterations[@]}" \
        --ours "$out/ops-discrete" --out "$out/param"
else
    printf '%-24s skipped: no PARAM source at %s\n' \
        param-ops "$param" | tee -a "$out/steps.txt"
fi

# 4. With the time left: the whole suite at each fidelity.
[ -n "$fidelities" ] && step prepare-all 60 "$milabench" prepare --config "$config"
for fidelity in $fidelities; do
    suite_run "$fidelity" 120 "$fidelity"
done

exit $((failed > 100 ? 100 : failed))
