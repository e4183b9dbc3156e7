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

# kept_venv_use NAME STAMP STAMPFILE: with $venv the harness's venv path, $force 0 or 1 and
# say() defined. An install already in $venv with STAMP in $venv/STAMPFILE ends the install;
# otherwise $venv becomes the cache's folder for STAMP (locked), $link the harness's path and
# $stamp $venv/STAMPFILE, and a finished install there is linked and ends the install. After it
# returns, the caller installs into $venv, writes STAMP to $stamp and calls kept_venv_link.
kept_venv_use() {
    stamp="$venv/$3"
    if [ "$force" = 0 ] && kept_venv_ready "$venv" "$2" "$3"; then
        say "already installed (the stamp matches); nothing to do."
        exit 0
    fi
    link="$venv"
    venv="$(kept_venv "$1" "$2")"
    stamp="$venv/$3"
    kept_venv_lock "$venv"
    if [ "$force" = 0 ] && kept_venv_ready "$venv" "$2" "$3"; then
        kept_venv_link "$venv" "$link"
        say "linked to this machine's install of the same stamp ($venv); nothing to install."
        exit 0
    fi
}

# kept_venv_ready FOLDER STAMP STAMPFILE: FOLDER holds a finished install of STAMP.
kept_venv_ready() {
    [ -f "$1/$3" ] && [ "$(cat "$1/$3")" = "$2" ] && [ -x "$1/bin/python" ]
}
