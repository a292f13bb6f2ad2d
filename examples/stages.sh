# Sourced by the reproduction scripts: `stage NAME COMMAND...` runs COMMAND and appends "NAME<TAB>seconds" to
# $WORK/times.tsv, which the scripts' reports turn into their time tables.
stage() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  echo "== $name" >&2
  "$@"
  echo -e "$name\t$(($(date +%s) - t0))" >> "$WORK/times.tsv"
}
