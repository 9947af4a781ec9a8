# need.sh: sourced by build.sh and scripts/fuzz.sh. need_apt WHO WHAT PACKAGE...: installs Debian's
# packages with apt when run as root (what CI does on a clean machine), otherwise says in one line
# what to install and exits 1. WHO names the script, WHAT what the packages are for.
need_apt() {
  local who=$1 what=$2
  shift 2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "$who: installing $* ($what)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "$who: $what needs: sudo apt-get install -y $*" >&2
    exit 1
  fi
}
