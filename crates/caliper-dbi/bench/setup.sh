# What the benchmark scripts share, sourced from the workspace root with
# their arguments: `runs` (the first argument, default 3), `here` (this
# directory), `run` (the release cali-run, built now) and a scratch
# directory, removed at exit, made the current one.
runs=${1:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cargo build --release -p caliper-dbi --quiet
run=$PWD/target/release/cali-run
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
