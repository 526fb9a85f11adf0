#!/bin/sh
# critical.sh DIR WHO HOLD — the critical section that `baton run` and
# `etcdctl lock` run while they hold the lock; java/CuratorMutex.java does the
# same steps in Java.
#
# mkdir is atomic: DIR/inside exists exactly while some holder is inside, so
# a failing mkdir means two holders at once. That is recorded as an
# "overlap" line and the marker is left to its owner. Otherwise the holder
# logs "enter WHO TOKEN ENGINE LOCK" (baton's child environment, "-" where
# unset), holds, logs "exit WHO" and removes the marker. Every line is one
# append (O_APPEND), so lines of concurrent writers never mix.
#
# HOLD is seconds ("0.05") or "gate": hold until DIR/release-WHO exists,
# bounded at 60 s so a broken test cannot leave a holder behind.
set -u
dir=$1 who=$2 hold=$3
if ! mkdir "$dir/inside" 2>/dev/null; then
	echo "overlap $who" >>"$dir/log"
	exit 0
fi
echo "enter $who ${BATON_TOKEN:--} ${BATON_ENGINE:--} ${BATON_LOCK:--}" >>"$dir/log"
if [ "$hold" = gate ]; then
	i=0
	while [ ! -e "$dir/release-$who" ]; do
		i=$((i + 1))
		if [ "$i" -gt 3000 ]; then
			echo "gate-timeout $who" >>"$dir/log"
			break
		fi
		sleep 0.02
	done
else
	sleep "$hold"
fi
echo "exit $who" >>"$dir/log"
rmdir "$dir/inside"
