#!/usr/bin/env bash
# A clean build of steadfast's default feature set against the official `mongodb` crate's, in
# the same run on the same machine: wall time and the number of crates compiled, for a program
# that depends on the driver and nothing else.
#
# Usage (from the workspace root): crates/steadfast-bench/scripts/build-compare.sh [--release]
# Needs the crates in cargo's registry cache or network access to crates.io. Each build uses a
# fresh target directory; the registry download is not part of the timing (`cargo fetch` first).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
profile="${1:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
official_version="$(awk '/^name = "mongodb"$/{getline; print; exit}' "$root/Cargo.lock" | cut -d'"' -f2)"

make_program() { # name, dependency line
  mkdir -p "$work/$1/src"
  printf '[package]\nname = "%s"\nversion = "0.0.0"\nedition = "2024"\n\n[dependencies]\n%s\n\n[workspace]\n' "$1" "$2" > "$work/$1/Cargo.toml"
  echo 'fn main() {}' > "$work/$1/src/main.rs"
}
make_program uses-steadfast "steadfast = { path = \"$root/crates/steadfast\" }"
make_program uses-mongodb "mongodb = \"=$official_version\""

build() { # name -> "seconds crates"
  local dir="$work/$1"
  cp "$root/Cargo.lock" "$dir/Cargo.lock" 2>/dev/null || true
  (cd "$dir" && cargo fetch -q)
  local start end count
  start=$(date +%s.%N)
  count=$(cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build $profile 2>&1 | grep -c '^ *Compiling ')
  end=$(date +%s.%N)
  printf '%s %s\n' "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$count"
}
read -r s_time s_crates < <(build uses-steadfast)
read -r m_time m_crates < <(build uses-mongodb)
printf 'clean build of the default feature set (%s)\n' "${profile:-debug}"
printf '%-28s %8s %8s\n' driver seconds crates
printf '%-28s %8.1f %8d\n' "steadfast" "$s_time" "$s_crates"
printf '%-28s %8.1f %8d\n' "mongodb $official_version" "$m_time" "$m_crates"
awk -v st="$s_time" -v mt="$m_time" -v sc="$s_crates" -v mc="$m_crates" \
  'BEGIN { printf "ratio (steadfast / mongodb): time %.2fx, crates %.2fx\n", st / mt, sc / mc }'
