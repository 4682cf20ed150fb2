#!/usr/bin/env bash
# The demo behind `make demo`: a simulator on loopback, then the main job on
# the example specs: validate, plan, apply, and a second plan that is clean.
set -euo pipefail
bin=${1:-bin/pvectl}
specs=${2:-examples}
work=$(mktemp -d)
. "$(dirname "$0")/sim-lib.sh"
cleanup() {
  stop_sim
  rm -rf "$work"
}
trap cleanup EXIT

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi

step "Starting the PVE simulator (pvectl sim) on a free loopback port"
# Two nodes: examples/07-cluster-ops.yaml replicates a VM to pve2.
start_sim "$bin" "$work/sim.log" --task-duration 200ms --nodes pve,pve2
echo "simulator at $url"

export PROXMOX_URL=$url
export PROXMOX_TOKEN_ID='root@pam!pvectl'
export PROXMOX_TOKEN_SECRET=simulator
# The LDAP realm's bind password of examples/07-cluster-ops.yaml (the
# simulator connects to no directory); never printed.
export LDAP_BIND_PW=${LDAP_BIND_PW:-demo-bind-password}

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
