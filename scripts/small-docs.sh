#!/usr/bin/env bash
# small-docs.sh pools|vms [BYTES] — at least BYTES (default 10 MiB) of
# minimal spec documents on stdout, byte for byte what pkg/spec's
# smallDocs writes for BenchmarkLoadSmallDocs (docs/performance.md,
# "10 MB of small documents"):
#   pools: "---\nkind: Pool\nname: p<i>\n"
#   vms:   "---\nkind: QemuVM\nname: vm<i>\nspec:\n  memory: 512\n  cores: 1\n"
set -euo pipefail
shape=${1:?usage: small-docs.sh pools|vms [BYTES]}
size=${2:-10485760}
case $size in ''|*[!0-9]*) echo "small-docs.sh: BYTES must be a number, not '$size'" >&2; exit 2 ;; esac
case $shape in
  pools) fmt='---\nkind: Pool\nname: p%d\n' ;;
  vms) fmt='---\nkind: QemuVM\nname: vm%d\nspec:\n  memory: 512\n  cores: 1\n' ;;
  *) echo "small-docs.sh: pools or vms, not '$shape'" >&2; exit 2 ;;
esac
awk -v fmt="$fmt" -v size="$size" 'BEGIN {
  gsub(/\\n/, "\n", fmt)
  for (n = 0; total < size; n++) { s = sprintf(fmt, n); printf "%s", s; total += length(s) }
}'
