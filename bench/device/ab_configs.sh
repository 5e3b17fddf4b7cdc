# Sourced by the device scripts that time configs against each other (two_blocks_ab.sh,
# softcap_poly.sh, kernels_ab.sh), after el and left (peers_setup.sh's clock):
#   config_median SECONDS FAMILY SHAPE-OPTIONS CONFIG [KERNELS-DIR]
#                                     one config's median (ms, the tool's own), or its status in [...]
#   ab NAME SHAPE-OPTIONS CONFIG...   each hopper config's median, two rounds alternating over the
#                                     configs, on one line "ab NAME | cfg: r1 r2 ..."
# ab stops when fewer than AB_RESERVE_S (default 60) seconds of the budget are left.
config_median() {
  local out v
  out=$(timeout $1 build-gpu/attn-tune --no-db ${5:+--kernels-dir "$5"} --family $2 $3 --configs $4 2>&1)
  v=$(echo "$out" | awk -v f=$2 '$1 == 1 && $2 == f {print $4; exit}')
  [ -n "$v" ] && echo "$v" || echo "[$(echo "$out" | grep -m1 -E "$4|error" | tr -s ' ' | cut -c1-100)]"
}
ab() {
  local name=$1 shape=$2 cfg r; shift 2
  declare -A t=()
  for r in 1 2; do
    for cfg in "$@"; do
      [ $(left) -lt ${AB_RESERVE_S:-60} ] && { echo "ab $name: out of time $(el)"; return; }
      t[$cfg]+=" $(config_median 60 hopper "$shape" $cfg)"
    done
  done
  local line="ab $name"
  for cfg in "$@"; do line+=" | $cfg:${t[$cfg]}"; done
  echo "$line $(el)"
}
