# put.sh FILE (POSIX sh): replaces FILE with standard input, atomically (a
# sibling temporary file, then mv), creating its directory.
dir=$(dirname "$1") || exit 1
mkdir -p "$dir" || exit 1
tmp=$1.put.$$
if cat > "$tmp" && mv -f "$tmp" "$1"; then
  exit 0
fi
rm -f "$tmp"
exit 1
