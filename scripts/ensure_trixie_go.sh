#!/usr/bin/env bash
# Unpacks the Debian trixie packages listed in scripts/debian-trixie-go.txt (Go 1.24, sarama 1.45 and the Go
# sources it imports) into var/debian-trixie/root, project-local: nothing is installed, apt's and dpkg's state and
# /usr are untouched. Each .deb comes from the Debian mirror this machine's apt sources name (or
# $STROM_DEBIAN_MIRROR) and must match the SHA256 pinned in the list. A no-op (and fast) once the list is unpacked.
# Used by the tests that build tests/clients/saramaadmin (tests/support/clients.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
list="$repo/scripts/debian-trixie-go.txt"
dest="$repo/var/debian-trixie"
stamp="$dest/root/.unpacked-list-sha256"
want=$(sha256sum "$list" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi

if [ "$(dpkg --print-architecture)" != amd64 ]; then
  echo "ensure_trixie_go.sh: $list pins amd64 packages; this machine is $(dpkg --print-architecture)" >&2
  exit 1
fi

mirror_from_apt() { # the first Debian archive (not -security) the apt sources name
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{for (i = 2; i <= NF; i++) print $i}'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep '^deb ' | sed 's/\[[^]]*\]//' | awk '{print $2}'
  } | grep -v -- '-security' | grep '/debian/\?$' | sed -n '1{s|/$||;p}' || true
}
mirror=${STROM_DEBIAN_MIRROR:-$(mirror_from_apt)}
if [ -z "$mirror" ]; then
  echo "ensure_trixie_go.sh: no Debian mirror in /etc/apt sources; set STROM_DEBIAN_MIRROR" >&2
  exit 1
fi

current_entry() { # "version pool-path sha256" of $1 in trixie's Packages indexes today (cached per run)
  local index
  for arch in all amd64; do
    index="$dest/debs/Packages-$arch"
    [ -s "$index" ] || curl --fail --silent --show-error --retry 3 \
      "$mirror/dists/trixie/main/binary-$arch/Packages.xz" | xz -dc > "$index"
    awk -v want="$1" '/^Package: /{p = ($2 == want)} p && /^Version: /{v = $2} p && /^Filename: /{f = $2}
      p && /^SHA256: /{print v, f, $2; exit}' "$index"
  done | head -1
}

mkdir -p "$dest/debs"
rm -f "$dest/debs/Packages-all" "$dest/debs/Packages-amd64"
rm -rf "$dest/root.new"
mkdir -p "$dest/root.new"
grep -v '^#' "$list" | while read -r package version path sha256; do
  deb="$dest/debs/$(basename "$path")"
  if ! echo "$sha256  $deb" | sha256sum --check --status 2>/dev/null; then
    echo "downloading $package $version (Debian trixie)"
    if ! curl --fail --silent --show-error --retry 3 --output "$deb.part" "$mirror/$path"; then
      # A point release replaced the pinned version: take the one trixie's index lists now, checked against it.
      read -r version path sha256 < <(current_entry "$package")
      echo "ensure_trixie_go.sh: the pinned $package is gone from the mirror; using trixie's $version" >&2
      deb="$dest/debs/$(basename "$path")"
      curl --fail --silent --show-error --retry 3 --output "$deb.part" "$mirror/$path"
    fi
    if ! echo "$sha256  $deb.part" | sha256sum --check --status; then
      echo "ensure_trixie_go.sh: $path does not match its pinned SHA256 $sha256" >&2
      rm -f "$deb.part"
      exit 1
    fi
    mv "$deb.part" "$deb"
  fi
  dpkg-deb --extract "$deb" "$dest/root.new"
done
rm -rf "$dest/root"
mv "$dest/root.new" "$dest/root"
echo "$want" > "$stamp"
