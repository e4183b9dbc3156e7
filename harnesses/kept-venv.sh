# Sourced by the Python harnesses' install scripts (harnesses/*/install): a finished virtual
# environment is kept in this machine's cache under its install's stamp, and the folder the
# harness runs from is a link to it. Another checkout (a CI run on a fresh clone) installing the
# same stamp links to it instead of downloading and installing the same packages again. The
# cache: $KBCONFORM_CACHE, else $XDG_CACHE_HOME/kbconform, else ~/.cache/kbconform (as Neo's
# install keeps its node_modules); a venv is venvs/<harness>-<stamp>-<architecture>. A stamp
# covers the requirements, the install script and the interpreter's version, so a change to any
# of them installs afresh; --force reinstalls the kept copy.

# kept_venv NAME STAMP: the cache's folder for that install (its parent created), locked while
# this script runs so that two installs of one stamp take turns.
kept_venv() {
    local root="${KBCONFORM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kbconform}/venvs"
    mkdir -p "$root"
    printf '%s/%s-%s-%s' "$root" "$1" "$2" "$(uname -m)"
}

# kept_venv_lock FOLDER: waits for any other install of FOLDER to finish, then holds it.
kept_venv_lock() {
    exec 9>"$1.lock"
    if command -v flock >/dev/null 2>&1; then flock 9; fi
}

# kept_venv_link FOLDER LINK: LINK (the harness's venv path) points at FOLDER.
kept_venv_link() {
    [ "$(readlink "$2" 2>/dev/null)" = "$1" ] && return 0
    rm -rf "$2"
    mkdir -p "$(dirname "$2")"
    ln -s "$1" "$2"
}
