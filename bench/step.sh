# Sourced by the bench scripts that run a list of steps on a GPU machine: step NAME COMMAND...
# runs the command with its output in $out/NAME.txt, prints its exit status, time and last lines,
# and sets failed=1 when it fails, so that a script goes on and reports every failure at the end.
failed=0
step() {
  local name=$1; shift
  local t0=$(date +%s)
  "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc ($(( $(date +%s) - t0 )) s)"
  tail -n 3 "$out/$name.txt" | sed 's/^/    /'
  [ $rc -eq 0 ] || failed=1
}
