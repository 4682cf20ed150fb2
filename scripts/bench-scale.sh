#!/usr/bin/env bash
# bench-scale.sh [BIN] [N...] — docs/performance.md's scale figures, for the
# CLI at each N (default 5000 50000):
#   - validate of N resources (scripts/many-resources.sh N): CPU (user+sys)
#     and peak RSS, per resource;
#   - a no-op plan of N existing VMs against `pvectl sim --state` holding
#     them (made by copying one VM the simulator created, with its name and
#     MAC changed; status refresh off so the simulator is idle meanwhile):
#     the plan's CPU and peak RSS, and the simulator's RSS;
# then the CPU's growth exponent between the first and the last N
# (log(cpu₂/cpu₁) / log(N₂/N₁): 1 is linear). Needs python3 and GNU time.
set -euo pipefail
bin=${1:-bin/pvectl}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(5000 50000)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
. "$here/sim-lib.sh"
trap 'stop_sim; rm -rf "$work"' EXIT

start_state_sim() { # state file
  # A big state loads slowly: wait up to ~60 s.
  SIM_WAIT_TRIES=600 start_sim "$bin" "$work/sim.log" --task-duration 1ms --status-interval 1h --state "$1"
  export PROXMOX_URL=$url PROXMOX_TOKEN_ID='root@pam!pvectl' PROXMOX_TOKEN_SECRET=simulator
}

vms() { # n: VMs without disks (the state below holds them)
  for ((i = 0; i < $1; i++)); do
    [ "$i" -gt 0 ] && printf -- '---\n'
    printf 'kind: QemuVM\nname: vm%d\nspec:\n  node: pve\n  vmid: %d\n  memory: 512\n  cores: 1\n  net0: virtio,bridge=vmbr0\n  running: false\n' "$i" "$((1000 + i))"
  done
}

# One VM made by the simulator, the model of the copies.
vms 1 >"$work/one.yaml"
start_state_sim "$work/one.json"
"$bin" apply -f "$work/one.yaml" --auto-approve >/dev/null
stop_sim

measure() { # label n command...: prints "cpu_s rss_kb" to $work/m
  local label=$1 n=$2
  shift 2
  /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  read -r u s m <"$work/time"
  awk -v l="$label" -v n="$n" -v u="$u" -v s="$s" -v m="$m" 'BEGIN {
    printf "%-22s N=%-6d CPU %7.2f s (%5.1f µs/resource)  peak RSS %7.1f MiB (%4.2f KB/resource)\n", l, n, u + s, (u + s) * 1e6 / n, m / 1024, m / n }'
  echo "$u $s" >"$work/cpu.$label.$n"
}

for n in "${sizes[@]}"; do
  "$here/many-resources.sh" "$n" >"$work/mixed.yaml"
  measure validate "$n" "$bin" validate -f "$work/mixed.yaml"
  vms "$n" >"$work/vms.yaml"
  python3 - "$work/one.json" "$work/state.json" "$n" <<'EOF'
import json, sys, copy
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
st = json.load(open(src))
model = st["vms"]["1000"]
for i in range(n):
    v = copy.deepcopy(model)
    v["vmid"] = 1000 + i
    v["conf"]["name"] = "vm%d" % i
    v["conf"]["net0"] = "virtio=BC:24:12:%02X:%02X:%02X,bridge=vmbr0" % (i >> 16 & 255, i >> 8 & 255, i & 255)
    st["vms"][str(1000 + i)] = v
json.dump(st, open(dst, "w"))
EOF
  start_state_sim "$work/state.json"
  rss=$(ps -o rss= -p "$sim_pid")
  measure plan "$n" "$bin" plan -f "$work/vms.yaml" --detailed-exitcode
  awk -v n="$n" -v r="$rss" 'BEGIN { printf "%-22s N=%-6d RSS %7.1f MiB (%4.2f KB/VM)\n", "simulator", n, r / 1024, r / n }'
  stop_sim
done

if [ ${#sizes[@]} -ge 2 ]; then
  a=${sizes[0]} b=${sizes[${#sizes[@]} - 1]}
  for l in validate plan; do
    read -r u1 s1 <"$work/cpu.$l.$a"
    read -r u2 s2 <"$work/cpu.$l.$b"
    awk -v l="$l" -v a="$a" -v b="$b" -v c1="$(echo "$u1 + $s1" | bc -l)" -v c2="$(echo "$u2 + $s2" | bc -l)" \
      'BEGIN { printf "%-22s CPU exponent %d → %d: %.3f\n", l, a, b, log(c2 / c1) / log(b / a) }'
  done
fi
