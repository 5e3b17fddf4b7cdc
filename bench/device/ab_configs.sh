# Sourced by the device scripts that time hopper configs against each other (two_blocks_ab.sh,
# softcap_poly.sh), after el and left (peers_setup.sh's clock):
#   ab NAME SHAPE-OPTIONS CONFIG...   each config's median (ms, the tool's own), two rounds
#                                     alternating over the configs, on one line "ab NAME | cfg: r1 r2 ..."
# A config that did not time shows its status instead. It stops when fewer than AB_RESERVE_S
# (default 60) seconds of the budget are left.
ab() {
  local name=$1 shape=$2 out v cfg r; shift 2
  declare -A t=()
  for r in 1 2; do
    for cfg in "$@"; do
      [ $(left) -lt ${AB_RESERVE_S:-60} ] && { echo "ab $name: out of time $(el)"; return; }
      out=$(timeout 60 build-gpu/attn-tune --no-db --family hopper $shape --configs $cfg 2>&1)
      v=$(echo "$out" | awk '$1 == 1 && $2 == "hopper" {print $4; exit}')
      [ -z "$v" ] && v="[$(echo "$out" | grep -m1 -E "$cfg|error" | tr -s ' ' | cut -c1-100)]"  # its status
      t[$cfg]+=" $v"
    done
  done
  local line="ab $name"
  for cfg in "$@"; do line+=" | $cfg:${t[$cfg]}"; done
  echo "$line $(el)"
}
