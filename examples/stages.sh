# Sourced by the reproduction scripts: `stage NAME COMMAND...` runs COMMAND and appends "NAME<TAB>seconds" to
# $WORK/times.tsv, which the scripts' reports turn into their time tables; with STAGE_CPU_LOG set, also
# "NAME<TAB>wall seconds<TAB>CPU seconds" (user + system of the stage's child processes) to that file.
stage() {
  local name=$1 t0 cpu0
  shift
  t0=$(date +%s)
  cpu0=$(children_cpu_seconds)
  echo "== $name" >&2
  "$@"
  echo -e "$name\t$(($(date +%s) - t0))" >> "$WORK/times.tsv"
  if [ -n "${STAGE_CPU_LOG:-}" ]; then
    echo -e "$name\t$(($(date +%s) - t0))\t$(awk -v a="$(children_cpu_seconds)" -v b="$cpu0" 'BEGIN {print a - b}')" \
      >> "$STAGE_CPU_LOG"
  fi
}

# `corpus_records DIR [NAME...]`: the shared sentence-ordered corpora under DIR (all six, or the NAMEs) as
# doc_id, sent_id, text records on stdout, each converted as `sembed convert --help` recommends.
# The model a reproduction starts from (START): the packaged all-MiniLM-L6-v2, or the masked-LM at $MLM.
start_model() {
  case $1 in
    minilm) echo all-MiniLM-L6-v2 ;;
    mlm) echo "$MLM" ;;
    *) echo "error: START is '$1'; it must be minilm or mlm" >&2; return 2 ;;
  esac
}

# Build the masked-LM start ($MLM, $MLM_STEPS steps with build_mlm.sh) when START is mlm and it is not there yet.
# build_mlm.sh gets its own work directory: the caller's WORK (exported when the user set it) is the reproduction's,
# which build_mlm.sh would use and remove at its end.
build_start() {
  if [ "$1" = mlm ] && [ ! -d "$MLM" ]; then
    stage "build the masked-LM ($MLM_STEPS steps)" env -u WORK STEPS="$MLM_STEPS" bash examples/build_mlm.sh "$MLM"
  fi
}

corpus_records() {
  local dir=$1 name names
  shift
  names=${*:-abc state_union inaugural webtext movie_reviews brown}
  for name in $names; do
    case $name in
      abc) sembed convert -q --from prose --doc-break blank "$dir/abc" ;;
      state_union | inaugural) sembed convert -q --from prose "$dir/$name" ;;
      webtext | movie_reviews) sembed convert -q --from lines "$dir/$name" ;;
      brown) sembed convert -q --from brown "$dir/brown" ;;
      *) echo "corpus_records: unknown corpus $name" >&2; return 2 ;;
    esac
  done
}

# The user + system CPU seconds of this shell's finished child processes (cutime + cstime of /proc/$$/stat: the
# script's own shell, even from a subshell).
children_cpu_seconds() {
  awk -v tick="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($14 + $15) / tick }' "/proc/$$/stat"
}
