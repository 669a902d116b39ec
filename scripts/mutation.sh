#!/usr/bin/env bash
# The mutation run (docs/mutation.md): mutmut mutates approval/, usage/ and engine/_calls.py ([tool.mutmut] in
# pyproject.toml), tries each mutant of an area against that area's tests only, then prints the kill rate per module.
#
#   scripts/mutation.sh [approval] [usage] [calls]   the areas to run (default: all three, in that order)
#   scripts/mutation.sh report                        only print the figures of what was run so far
#
# Results stay in mutants/ (ignored by git), so a run that stopped goes on where it was: only mutants not yet
# tried are tried. After the tests changed, MUTATION_RETRY=survivors tries again only the mutants tried and not
# killed, and MUTATION_RETRY=1 every mutant of the area.
# MUTATION_ONLY="pattern ..." narrows an area to the mutants matching one of the patterns (fnmatch, on names such
# as toolcalling.usage._meter.xǁMeterǁcheck__mutmut_3), to try first what matters most when time is short; on a
# first run too (every mutant is made, only those are tried).
# MUTATION_TIMEOUT bounds each area's run in seconds (default 3600). One mutant at a time: the tests start their
# own Redis, Celery worker and database on ports and files chosen once per run, and the machine is shared.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY="$VENV/bin/python"

declare -A MUTANTS=(
  [approval]="toolcalling.approval.*"
  [usage]="toolcalling.usage.*"
  [calls]="toolcalling.engine._calls.*"
)
declare -A TESTS=(
  [approval]="tests/approval"
  [usage]="tests/limits tests/costs tests/races"
  [calls]="tests/core tests/approval tests/limits tests/costs tests/loop_features"
)

EQUIVALENT=scripts/mutation-equivalent.txt  # mutants judged equivalent: not tried again, counted with the killed

# The mutants of one area not tried yet (all of them with MUTATION_RETRY=1), from mutmut's files in mutants/,
# leaving out the ones listed as equivalent (unless MUTATION_RETRY=1).
untried() {
  "$PY" - "$1" "${MUTATION_RETRY:-0}" "$EQUIVALENT" <<'PYTHON'
import fnmatch, json, os, pathlib, sys
pattern, retry, listed = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
narrowed = os.environ.get("MUTATION_ONLY", "").split()  # patterns within the area, such as its slowest functions
equivalent = {line.split()[0] for line in listed.read_text().splitlines() if line.strip() and line[0] != "#"}
for meta in sorted(pathlib.Path("mutants").rglob("*.py.meta")):
    for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
        if name in equivalent and retry != "1":
            continue
        if retry == "survivors":
            wanted = code is not None and code not in (1, 3)  # tried, not killed
        else:
            wanted = retry == "1" or code is None
        if fnmatch.fnmatch(name, pattern) and wanted and (not narrowed or any(fnmatch.fnmatch(name, p) for p in narrowed)):
            print(name)
PYTHON
}

report() {
  "$PY" - "$EQUIVALENT" <<'PYTHON'
import json, pathlib, sys
from collections import Counter
KILLED = {1, 3}  # pytest's "tests failed" and "internal error": the mutant was noticed
listed = pathlib.Path(sys.argv[1]).read_text().splitlines()
EQUIVALENT = {line.split()[0] for line in listed if line.strip() and line[0] != "#"}
rows = []
for meta in sorted(pathlib.Path("mutants").rglob("*.py.meta")):
    try:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
    except ValueError:
        print(f"{meta}: unreadable (a run stopped while writing it); delete it and its module in mutants/")
        continue
    if not codes:
        continue
    # A listed equivalent counts as tried (it was read, whether or not it ran again) and, unless killed, equivalent.
    tried = {name: code for name, code in codes.items() if code is not None or name in EQUIVALENT}
    killed = sum(code in KILLED for code in tried.values())
    equivalent = sum(name in EQUIVALENT and code not in KILLED for name, code in tried.items())
    other = Counter({0: "survived", 33: "no tests", 5: "no tests"}.get(code, f"exit {code}")
                    for name, code in tried.items() if code not in KILLED and name not in EQUIVALENT)
    module = str(meta.relative_to("mutants")).removesuffix(".meta")
    rate = f"{100 * (killed + equivalent) / len(tried):5.1f}%" if tried else "    -"
    rows.append((module, len(codes), len(tried), killed, equivalent, rate,
                 ", ".join(f"{n} {k}" for k, n in sorted(other.items()))))
print("rate: (killed + equivalent) / tried; equivalent: listed in scripts/mutation-equivalent.txt, not killed")
print(f"{'module':40} {'mutants':>7} {'tried':>6} {'killed':>6} {'equiv':>6} {'rate':>6}  not killed")
for module, total, tried, killed, equivalent, rate, other in rows:
    print(f"{module:40} {total:7} {tried:6} {killed:6} {equivalent:6} {rate:>6}  {other}")
total_tried, total_killed, total_equivalent = (sum(r[i] for r in rows) for i in (2, 3, 4))
if total_tried:
    rate = 100 * (total_killed + total_equivalent) / total_tried
    print(f"{'all':40} {sum(r[1] for r in rows):7} {total_tried:6} {total_killed:6} {total_equivalent:6} {rate:5.1f}%")
PYTHON
}

mkdir -p mutants
areas=("$@")
[ ${#areas[@]} -eq 0 ] && areas=(approval usage calls)
status=0
for area in "${areas[@]}"; do
  [ "$area" = report ] && continue
  if [ -z "${MUTANTS[$area]:-}" ]; then
    echo "unknown area $area: one of ${!MUTANTS[*]}, or report" >&2
    exit 2
  fi
  if compgen -G "mutants/toolcalling/*/*.py.meta" >/dev/null; then
    mapfile -t names < <(untried "${MUTANTS[$area]}")
    if [ ${#names[@]} -eq 0 ]; then
      echo "== $area: every mutant was tried already (MUTATION_RETRY=survivors or 1 tries them again)"
      continue
    fi
  elif [ -n "${MUTATION_ONLY:-}" ]; then
    read -ra names <<< "$MUTATION_ONLY"  # the first run makes every mutant, then tries only these
  else
    names=("${MUTANTS[$area]}")  # the first run makes the mutants
  fi
  echo "== $area: ${#names[@]} mutant(s) or pattern(s), against ${TESTS[$area]}"
  # mutmut rewrites a module's results file after each mutant; stopped in the middle of that write it leaves
  # the file cut short, so each is kept as it was before the run and put back if it no longer reads.
  for meta in $(find mutants -name "*.py.meta"); do cp "$meta" "$meta.before"; done
  TOOLCALLING_MUTATION_TESTS="${TESTS[$area]}" timeout --signal=INT --kill-after=300 "${MUTATION_TIMEOUT:-3600}" \
    "$VENV/bin/mutmut" run --max-children 1 "${names[@]}" > "mutants/$area.log" 2>&1
  code=$?
  for meta in $(find mutants -name "*.py.meta"); do
    "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$meta" 2>/dev/null || {
      echo "   $meta was cut short; its results from before this run are put back"
      [ -f "$meta.before" ] && cp "$meta.before" "$meta" || rm -f "$meta"
    }
  done
  [ $code -eq 124 ] && echo "   stopped after ${MUTATION_TIMEOUT:-3600} s; run it again to go on"
  [ $code -ne 0 ] && [ $code -ne 124 ] && { echo "   mutmut exited $code (see mutants/$area.log)"; status=$code; }
done
report
exit $status
