#!/usr/bin/env bash
# Runs the Python and Node.js examples of crates/blackpipe/README.md against a release build of
# the blackpipe binary, so that the README's words about other languages stay true. (Its Rust
# examples are doctests: `cargo test -p blackpipe --doc`.)
#
# Run from the workspace root. Needs python3 with venv and npm, and reaches the Python package
# index and the npm registry (pymongo, pytest, mongodb). Scratch files go to $WORK (default: a
# fresh temporary folder). Exits non-zero if either example fails.
set -euo pipefail
[ -f crates/blackpipe/README.md ] || { echo "run from the workspace root" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d)}
cargo build --release -q -p blackpipe
export PATH="${CARGO_TARGET_DIR:-$PWD/target}/release:$PATH"

python3 - "$WORK" <<'PY'
import pathlib, re, sys
work = pathlib.Path(sys.argv[1])
readme = pathlib.Path("crates/blackpipe/README.md").read_text()
(work / "test_readme.py").write_text(re.search(r"```python\n(.*?)```", readme, re.S).group(1))
(work / "main.js").write_text(re.search(r"```js\n(.*?)```", readme, re.S).group(1))
PY

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q pymongo pytest
(cd "$WORK" && "$WORK/venv/bin/pytest" -q -p no:cacheprovider test_readme.py)
echo "python example: ok (pymongo $("$WORK/venv/bin/python" -c 'import pymongo; print(pymongo.version)'))"

(cd "$WORK" && npm init -y >/dev/null && npm install -q mongodb >/dev/null && timeout 120 node main.js)
echo "node example: ok (mongodb $(cd "$WORK" && node -p 'require("mongodb/package.json").version'))"
