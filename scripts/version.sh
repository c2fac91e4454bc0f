#!/bin/sh
# Prints whyslow's version for builds and packages: the last tag (v1.2.0 or
# 1.2.0 gives 1.2.0; N commits after it, 1.2.0+N.g<commit>), else
# 0.0.0-<commit date>-<commit>; "+dirty" when tracked files differ from the
# commit. Dates are the commit's, never today's: the same commit gives the
# same version.
set -eu
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=7 HEAD 2>/dev/null) || { echo 0.0.0-dev; exit 0; }
dirty=""
git diff --quiet HEAD -- 2>/dev/null || dirty="+dirty"
if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || git describe --tags --abbrev=0 --match '[0-9]*' 2>/dev/null); then
	v=${tag#v}
	n=$(git rev-list --count "$tag..HEAD")
	if [ "$n" -gt 0 ]; then
		v="$v+$n.g$commit"
	fi
	case "$dirty" in "") ;; *) case "$v" in *+*) v="$v.dirty" ;; *) v="$v$dirty" ;; esac ;; esac
	echo "$v"
	exit 0
fi
date=$(TZ=UTC git log -1 --date=format-local:%Y%m%d --format=%cd HEAD)
echo "0.0.0-$date-$commit$dirty"
