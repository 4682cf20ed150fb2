#!/usr/bin/env bash
# The demo behind `make demo`: a simulator on loopback, then the main job on
# the example specs: validate, plan, apply, and a second plan that is clean.
set -euo pipefail
bin=${1:-bin/pvectl}
specs=${2:-examples}
work=$(mktemp -d)
sim_pid=
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi

step "Starting the PVE simulator (pvectl sim) on a free loopback port"
"$bin" sim --listen 127.0.0.1:0 --task-duration 200ms >"$work/sim.log" 2>&1 &
sim_pid=$!
url=
for _ in $(seq 1 100); do   # bounded: at most ~10 s
  url=$(sed -n 's/^PVE simulator listening on \([^ ]*\).*/\1/p' "$work/sim.log" | head -n1)
  [ -n "$url" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "simulator did not start"; cat "$work/sim.log"; exit 1; }
echo "simulator at $url"

export PROXMOX_URL=$url
export PROXMOX_TOKEN_ID='root@pam!pvectl'
export PROXMOX_TOKEN_SECRET=simulator

step "pvectl validate -f $specs"
"$bin" validate -f "$specs"

step "pvectl plan -f $specs"
"$bin" plan -f "$specs"

step "pvectl apply -f $specs --auto-approve"
"$bin" apply -f "$specs" --auto-approve

step "pvectl plan -f $specs --detailed-exitcode   (a second plan must be clean)"
set +e
"$bin" plan -f "$specs" --detailed-exitcode
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  echo "second plan was not clean (exit $rc)"; exit 1
fi
printf '\nThe second plan is clean: live state matches the specs.\n'
