#!/usr/bin/env bash
# verl's and OpenRLHF's own released code driving orchrm's adapters (tests/frameworks), each framework in its own
# venv (.venv-verl, .venv-openrlhf): their transformers pins conflict with orchrm's main venv and with each other.
#     ci/frameworks/run.sh                 # both (`make test-frameworks`)
#     ci/frameworks/run.sh verl            # one
#     INSTALL_ONLY=1 ci/frameworks/run.sh  # build the venvs only
# A venv is (re)built when its requirements, pyproject.toml or constraints.txt change. PYTHON picks the
# interpreter (default: the first of python3.11, python3.12 that runs; verl 0.9 needs Python < 3.13).
set -euo pipefail
cd "$(dirname "$0")/../.."

frameworks=("$@")
[ ${#frameworks[@]} -gt 0 ] || frameworks=(verl openrlhf)

python=${PYTHON:-}
if [ -z "$python" ]; then
    for p in python3.11 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[12].*/bin/python3; do
        if "$p" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 13)' 2>/dev/null; then python=$p; break; fi
    done
fi
[ -n "$python" ] || { echo "run.sh: no working python3.11 or python3.12 (set PYTHON)" >&2; exit 1; }

constraints=()
[ -f constraints.txt ] && constraints=(-c constraints.txt)

for fw in "${frameworks[@]}"; do
    req=ci/frameworks/$fw.txt
    [ -f "$req" ] || { echo "run.sh: no $req" >&2; exit 1; }
    venv=.venv-$fw
    stamp=$(cat "$req" pyproject.toml constraints.txt 2>/dev/null | sha256sum | cut -c1-16)
    if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$stamp" ]; then
        start=$SECONDS
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        # orchrm and the framework's runtime pins, resolved together; then the framework itself, --no-deps
        "$venv/bin/python" -m pip install --quiet "${constraints[@]}" -e . -r <(grep -v "^$fw==" "$req")
        "$venv/bin/python" -m pip install --quiet --no-deps "$(grep "^$fw==" "$req")"
        echo "$stamp" >"$venv/.installed"
        echo "run.sh: $venv installed in $((SECONDS - start)) s"
    fi
    [ -z "${INSTALL_ONLY:-}" ] || continue  # INSTALL_ONLY=1: build the venvs, run nothing (.ci/run, ahead of time)
    start=$SECONDS
    # ORCHRM_FRAMEWORK: in its own venv a framework that fails to import fails its tests instead of skipping them
    ORCHRM_FRAMEWORK=$fw "$venv/bin/python" -m pytest tests/frameworks -p no:cacheprovider
    echo "run.sh: $fw tests ran in $((SECONDS - start)) s"
done
