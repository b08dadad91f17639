#!/usr/bin/env bash
# Packs, into .gpu/ (ignored by git; the device tool carries it), what `xtask/gpu/run.sh` needs
# on a GPU machine that reaches no package index:
#
#   .gpu/bin/      stripped release builds of milabench and benchit (x86-64 Linux);
#   .gpu/wheels/   a wheelhouse of the packages the suite's environments and benchit's worker
#                  install that the machine's Python lacks: the closure of every benchmark's
#                  requirements.in, voir and onnxconverter-common, resolved here, less the
#                  names `image-packages.txt` lists (what the lent machines' image holds).
#
# Usage: xtask/gpu/pack.sh [--no-build]
# Environment: TARGET_PYTHON (the machine's Python version) [3.12]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/xtask/gpu
out=$root/.gpu
target_python=${TARGET_PYTHON:-3.12}
exclude=$(cd "$root" && git rev-parse --path-format=absolute --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2> /dev/null || echo '/.gpu/' >> "$exclude"
mkdir -p "$out/bin" "$out/wheels"

if [ "${1:-}" != --no-build ]; then
    echo "==> release build of milabench and benchit"
    (cd "$root" && cargo build --release --locked --bin milabench --bin benchit)
    for bin in milabench benchit; do
        strip -o "$out/bin/$bin" "$root/target/release/$bin"
    done
fi

echo "==> resolving what the environments install"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
requirements=()
for file in "$root"/benchmarks/*/requirements.in; do
    requirements+=(-r "$file")
done
python3 -m pip install --quiet --dry-run --ignore-installed --disable-pip-version-check \
    --report "$work/report.json" "${requirements[@]}" voir onnxconverter-common
python3 - "$work/report.json" "$here/image-packages.txt" > "$work/missing.txt" <<'PY'
import json, re, sys
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
have = {norm(l.strip()) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")}
for item in json.load(open(sys.argv[1]))["install"]:
    meta = item["metadata"]
    if norm(meta["name"]) not in have:
        print(f"{meta['name']}=={meta['version']}")
PY
echo "==> downloading $(wc -l < "$work/missing.txt") wheels for Python $target_python"
platforms=()
for n in 17 24 27 28 31 34; do
    platforms+=(--platform "manylinux_2_${n}_x86_64")
done
while read -r requirement; do
    python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
        --python-version "$target_python" --implementation cp "${platforms[@]}" \
        --platform manylinux2014_x86_64 --platform any -d "$out/wheels" "$requirement" ||
        python3 -m pip wheel --quiet --no-deps -w "$out/wheels" "$requirement"
done < "$work/missing.txt"
du -sh "$out/bin" "$out/wheels"
