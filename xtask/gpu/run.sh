#!/usr/bin/env bash
# The GPU device script: on a machine with a GPU and a Python that already holds torch (a
# site's module, a vendor image), runs in one go what we need to know about the GPU path and
# writes every output into one folder:
#
#   sysinfo (and nvidia-smi's own view, kept for regression tests of its parser), the
#   environment as `install --dry-run` sees it, the install of what that Python lacks (from a
#   wheelhouse when the machine is offline), `check`, the suite's benchmarks at each fidelity
#   (smoke first, then normal; the multi-GPU ones skip themselves on one GPU), each run's report
#   as text, JSON and HTML, benchit on an example script for torch-eager and torch-compiled on
#   the GPU, and benchit ops on the GPU.
#
# Usage:   xtask/gpu/run.sh OUT_DIR
# Needs:   what `xtask/gpu/pack.sh` puts in .gpu/ (release binaries, a wheelhouse), which the
#          device tool carries (carry: [".gpu"]); docs/gpu-results.md says how the last run went.
#
# Environment (each optional):
#   MILABENCH, BENCHIT  the binaries            [.gpu/bin/…, else target/release/…]
#   PYTHON              the Python with torch   [python3]
#   WHEELS              wheelhouse for what PYTHON lacks (`milabench bundle`) [.gpu/wheels]
#   CONFIG              the suite               [config/standard.yaml]
#   FIDELITIES          fidelities to run       ["smoke normal"]
#   SELECT              only these benchmarks (milabench's --select) [all]
#   BASE                base folder (environments, data, runs) [/tmp/milabench-gpu]
#   STEP_TIMEOUT        seconds one step may take [1500]
#
# Every step runs even when an earlier one failed (a failing benchmark must not hide the
# others); `steps.txt` lists each step with its exit status and duration, and the script's exit
# status is the number of failed steps (capped at 100).
set -uo pipefail

out=${1:?usage: xtask/gpu/run.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
pick() { for p in "$@"; do [ -x "$p" ] && { echo "$p"; return; }; done; echo "$1"; }
milabench=${MILABENCH:-$(pick "$root/.gpu/bin/milabench" "$root/target/release/milabench")}
benchit=${BENCHIT:-$(pick "$root/.gpu/bin/benchit" "$root/target/release/benchit")}
python=${PYTHON:-python3}
wheels=${WHEELS:-$root/.gpu/wheels}
config=${CONFIG:-$root/config/standard.yaml}
fidelities=${FIDELITIES:-smoke normal}
suite=(--config "$config")
[ -n "${SELECT:-}" ] && suite+=(--select "$SELECT")
step_timeout=${STEP_TIMEOUT:-1500}
export MILABENCH_BASE=${BASE:-/tmp/milabench-gpu}
export BENCHIT_HOME=$MILABENCH_BASE/benchit
export BENCHIT_PYTHON=$python
export PYTHONUNBUFFERED=1

mkdir -p "$out" "$MILABENCH_BASE"
out=$(cd "$out" && pwd)
failed=0
: > "$out/steps.txt"

# step NAME COMMAND...: runs COMMAND with its output in NAME.log, records the outcome.
step() {
    local name=$1; shift
    local start=$SECONDS
    echo "==> $name: $*"
    timeout --signal=INT --kill-after=30 "$step_timeout" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    printf '%-24s exit %-3s %5ss  %s\n' "$name" "$rc" "$((SECONDS - start))" "$*" | tee -a "$out/steps.txt"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    return "$rc"
}

# Same, standard output alone into FILE (the JSON outputs must stay parseable).
step_to() {
    local name=$1 file=$2; shift 2
    step "$name" bash -c '"$@" > "$0"' "$out/$file" "$@"
}

install_args=("${suite[@]}" --python "$python" --installer pip)
if [ -d "$wheels" ]; then
    install_args+=(--offline --find-links "$wheels")
    # benchit's environment is an overlay over $BENCHIT_PYTHON too, installed by pip.
    export PIP_NO_INDEX=1 PIP_FIND_LINKS=$wheels
fi

step_to sysinfo sysinfo.json "$milabench" sysinfo --format json
command -v nvidia-smi > /dev/null && step_to nvidia-smi nvidia-smi.xml nvidia-smi -q -x
step_to python-packages python-packages.txt "$python" -c \
    'import importlib.metadata as m; print("\n".join(sorted({d.metadata["Name"] + "==" + d.version for d in m.distributions()})))'
step install-plan "$milabench" install "${install_args[@]}" --dry-run
step install "$milabench" install "${install_args[@]}"
step_to check check.json "$milabench" check "${suite[@]}" --format json
step prepare "$milabench" prepare "${suite[@]}"

html=no
"$milabench" report --help 2> /dev/null | grep -q html && html=yes
for fidelity in $fidelities; do
    run=gpu-$fidelity
    step "run-$fidelity" "$milabench" run "${suite[@]}" --no-setup \
        --fidelity "$fidelity" --run-name "$run"
    folder=$MILABENCH_BASE/runs/$run
    step_to "report-$fidelity" "report-$fidelity.txt" "$milabench" report --runs "$folder"
    step_to "report-$fidelity-json" "report-$fidelity.json" \
        "$milabench" report --runs "$folder" --format json
    if [ "$html" = yes ]; then
        step "report-$fidelity-html" "$milabench" report --runs "$folder" --format html \
            -o "$out/report-$fidelity.html"
    fi
done

step_to benchit benchit.json "$benchit" benchmark "$root/benchmarks/benchit/main_guard.py" \
    --device nvidia --runtime torch-eager torch-compiled --cache-dir "$MILABENCH_BASE/benchit-cache" \
    --format json
step_to benchit-ops benchit-ops.json "$benchit" ops \
    --config "$root/benchmarks/opbench/configs/suite.json" --device cuda --output-prefix "$out/ops" --format json

# Everything in one archive (run folders included, environments left out), beside the
# top-level summaries.
tar -czf "$out/all.tar.gz" -C "$MILABENCH_BASE" --exclude=venv --exclude=benchit \
    --exclude=data --exclude=cache --exclude=tools runs 2> /dev/null
echo "failed steps: $failed (outputs in $out)"
exit $((failed > 100 ? 100 : failed))
