#!/usr/bin/env bash
# Checks that every relative link of the built user guide (mdbook build
# docs) names a file that exists: mdbook turns a link to a missing page
# into a dead one without a warning. Usage: check-book-links.sh [BOOK_DIR]
set -euo pipefail
book=${1:-target/book}
[ -f "$book/index.html" ] || { echo "no book at $book: run mdbook build docs first" >&2; exit 2; }
status=0
while IFS= read -r -d '' page; do
    dir=$(dirname "$page")
    while IFS= read -r href; do
        target=${href%%#*}
        if [ -n "$target" ] && [ ! -e "$dir/$target" ]; then
            echo "broken link in ${page#"$book"/}: $href"
            status=1
        fi
    done < <(grep -o 'href="[^"]*"' "$page" | sed 's/^href="//; s/"$//' | grep -v -E '^(https?:|mailto:|#|/)' || true)
done < <(find "$book" -name '*.html' -print0)
exit $status
