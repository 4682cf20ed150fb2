#!/usr/bin/env bash
# bench-tasks.sh [BIN] — the CLI's short-task figures of docs/performance.md
# (issue 22's acceptance): against `pvectl sim --task-duration 50ms` on a
# free loopback port, 200 creates at --parallelism 16, then 200 memory
# updates at --parallelism 4 (the VMs are stopped: each is one synchronous
# PUT), each as a ratio to the ideal ⌈N/P⌉ × 50 ms, applied from a saved
# plan; then the updates back with `apply -f` (which plans too). N=2000
# changes the count. Times include the CLI's start and its summary.
set -euo pipefail
bin=${1:-bin/pvectl}
n=${N:-200}
task_ms=50
work=$(mktemp -d)
. "$(dirname "$0")/sim-lib.sh"
cleanup() {
  stop_sim
  rm -rf "$work"
}
trap cleanup EXIT

start_sim "$bin" "$work/sim.log" --task-duration "${task_ms}ms"
export PROXMOX_URL=$url PROXMOX_TOKEN_ID='root@pam!pvectl' PROXMOX_TOKEN_SECRET=simulator

specs() { # memory
  for ((i = 0; i < n; i++)); do
    [ "$i" -gt 0 ] && printf -- '---\n'
    printf 'kind: QemuVM\nname: vm%d\nspec:\n  vmid: %d\n  memory: %d\n  cores: 1\n  running: false\n' "$i" "$((1000 + i))" "$1"
  done
}
# The clock is bash's own (EPOCHREALTIME, µs): a `date` child around the
# command would add its fork and exec (5-9 ms here) to every figure.
now_us() { local t=${EPOCHREALTIME/[.,]/}; printf -v "$1" '%s' "$t"; }
run() { # label parallelism file
  local t0 t1 ideal
  now_us t0
  local args=(-f "$3")
  case $3 in *.plan) args=("$3") ;; esac
  "$bin" apply "${args[@]}" --auto-approve --parallelism "$2" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  now_us t1
  ideal=$(( (n + $2 - 1) / $2 * task_ms ))
  awk -v l="$1" -v t=$(((t1 - t0) / 1000)) -v i="$ideal" 'BEGIN { printf "%-32s %6d ms  ideal %5d ms  %.2f x-ideal\n", l, t, i, t / i }'
}
specs 512 >"$work/a.yaml"
specs 1024 >"$work/b.yaml"
# A saved plan first (its apply still starts the process and checks that
# nothing changed since the plan), then `apply -f`, which plans as well.
"$bin" plan -f "$work/a.yaml" --out "$work/a.plan" >/dev/null
run "$n creates, saved plan, -p 16" 16 "$work/a.plan"
"$bin" plan -f "$work/b.yaml" --out "$work/b.plan" >/dev/null
run "$n memory updates, saved plan, -p 4" 4 "$work/b.plan"
"$bin" apply -f "$work/a.yaml" --auto-approve --parallelism 32 >/dev/null
run "$n memory restores, apply -f, -p 4" 4 "$work/a.yaml"
