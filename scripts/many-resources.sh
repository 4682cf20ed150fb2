#!/usr/bin/env bash
# many-resources.sh N — N spec documents on stdout for docs/performance.md:
# 1 % pools, 1 % bonds with a bridge on each, the rest VMs naming a pool
# and a bridge each (the shape of pkg/spec's BenchmarkLoad). With --vms-only,
# N plain VMs on vmbr0 that the simulator can create (for the plan row).
set -euo pipefail
vms_only=
if [ "${1:-}" = --vms-only ]; then vms_only=1; shift; fi
n=${1:?usage: many-resources.sh [--vms-only] N}
case $n in ''|*[!0-9]*) echo "many-resources.sh: N must be a number, not '$n'" >&2; exit 2 ;; esac
sep=
doc() { printf '%s' "$sep"; printf "$@"; sep=$'---\n'; }
if [ -n "$vms_only" ]; then
  for ((i = 0; i < n; i++)); do
    doc 'kind: QemuVM\nname: vm%d\nspec:\n  node: pve\n  vmid: %d\n  memory: 1024\n  cores: 1\n  scsi0: local-lvm:1\n  net0: virtio,bridge=vmbr0\n' "$i" "$((1000 + i))"
  done
  exit 0
fi
groups=$((n / 100)); [ "$groups" -ge 1 ] || groups=1
for ((i = 0; i < groups; i++)); do
  doc 'kind: Pool\nname: pool%d\n' "$i"
  doc 'kind: BondInterface\nname: bond%d\nspec:\n  node: pve\n  slaves: eno%d\n  bond_mode: active-backup\n' "$i" "$((i + 10))"
  doc 'kind: LinuxBridge\nname: vmbr%d\nspec:\n  node: pve\n  bridge_ports: bond%d\n' "$((i + 1))" "$i"
done
for ((i = 0; i < n - 3 * groups; i++)); do
  doc 'kind: QemuVM\nname: vm%d\nspec:\n  node: pve\n  vmid: %d\n  memory: 1024\n  cores: 2\n  pool: pool%d\n  scsi0: local-lvm:8,discard=on,ssd=1\n  net0: virtio,bridge=vmbr%d,firewall=1\n  tags: bench;pvectl\n' "$i" "$((1000 + i))" "$((i % groups))" "$((i % groups + 1))"
done
