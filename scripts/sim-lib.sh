# Sourced by the scripts that run `pvectl sim` (demo, benchmarks).
# start_sim BIN LOG [SIM FLAGS…] starts the simulator on a free loopback
# port, logging to LOG, and waits until it says where it listens (at most
# SIM_WAIT_TRIES × 0.1 s, 10 s by default): sim_pid and url are set.
# stop_sim stops it.
sim_pid=
url=

start_sim() {
  local bin=$1 log=$2
  shift 2
  "$bin" sim --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  sim_pid=$!
  url=
  for _ in $(seq 1 "${SIM_WAIT_TRIES:-100}"); do # bounded
    url=$(sed -n 's/^PVE simulator listening on \([^ ]*\).*/\1/p' "$log" | head -n1)
    [ -n "$url" ] && return 0
    kill -0 "$sim_pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.1
  done
  echo "simulator did not start"
  cat "$log"
  exit 1
}

stop_sim() {
  if [ -n "$sim_pid" ]; then
    kill "$sim_pid" 2>/dev/null || true
    wait "$sim_pid" 2>/dev/null || true
    sim_pid=
  fi
}
